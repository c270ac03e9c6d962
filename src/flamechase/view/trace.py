"""Chrome trace-event JSON of a run (opens in Perfetto and chrome://tracing).

One process (the run), one thread per lane (plus `planning` when the flow plans), one
complete slice (`"ph": "X"`) per turn with its actor, status and cost, instant events for
hand-offs (a report published, reports received), flow arrows from each published report to
the turns that received it, and counters for cumulative cost and the leaderboard's best.
Timestamps are microseconds since the run's first event.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from flamechase.view.narrate import narrate
from flamechase.view.state import RunFold, parse_at

__all__ = ["build_trace"]

_PID = 1
_PLANNING_TID = 0
_ENDS = {
    "turn_valid": "valid",
    "turn_failed": "failed",
    "turn_interrupted": "interrupted",
    "lane_paused": "limited",
}


def _flow_id(report_id: str, lane: str) -> int:
    # Stable and unique enough per (report, receiving lane); trace ids are plain integers.
    return zlib.crc32(f"{report_id}>{lane}".encode())


# long: one pass over the events builds every trace record.
def build_trace(
    run: Mapping[str, Any], lanes: Iterable[Mapping[str, Any]], events: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    fold = RunFold.from_run(run, lanes)
    tids: dict[str, int] = {name: i + 1 for i, name in enumerate(fold.order)}
    out: list[dict[str, Any]] = []
    t0: datetime | None = None
    open_turns: dict[str, tuple[int, Mapping[str, Any]]] = {}  # lane -> (start us, started)
    published: set[str] = set()
    turn_end: dict[str, int] = {}  # lane -> end of its last turn slice
    planning = False

    def us(at: str) -> int:
        nonlocal t0
        when = parse_at(at)
        if t0 is None:
            t0 = when
        return max(0, round((when - t0).total_seconds() * 1_000_000))

    def tid(lane: str) -> int:
        if lane not in tids:
            tids[lane] = len(tids) + 1
        return tids[lane]

    for ev in events:
        fold.apply(ev)
        kind = str(ev.get("kind") or "")
        lane = str(ev.get("lane") or "")
        actor = str(ev.get("actor") or "")
        p: Mapping[str, Any] = ev.get("payload") or {}
        ts = us(str(ev.get("at") or "")) if ev.get("at") else 0
        if kind == "turn_started" and lane:
            open_turns[lane] = (ts, ev)
            delivered = [str(r) for r in p.get("delivered") or ()]
            if delivered:
                text, _ = narrate(ev, fold)
                out.append(
                    {
                        "name": f"{actor} receives {len(delivered)} report(s)",
                        "cat": "handoff",
                        "ph": "i",
                        "s": "t",
                        "ts": ts,
                        "pid": _PID,
                        "tid": tid(lane),
                        "args": {"delivered": delivered, "text": text},
                    }
                )
                for rid in delivered:
                    if rid in published:
                        out.append(
                            {
                                "name": "report",
                                "cat": "handoff",
                                "ph": "f",
                                "bp": "e",
                                "id": _flow_id(rid, lane),
                                "ts": ts,
                                "pid": _PID,
                                "tid": tid(lane),
                            }
                        )
        elif kind in _ENDS and lane:
            start, started = open_turns.pop(lane, (None, None))
            dur_us = round(float(p.get("duration") or 0.0) * 1_000_000)
            if start is None:
                start = max(0, ts - dur_us)
            sp: Mapping[str, Any] = (started or {}).get("payload") or {}
            out.append(
                {
                    "name": f"{actor} turn {p.get('turn')}",
                    "cat": "turn",
                    "ph": "X",
                    "ts": start,
                    "dur": max(1, ts - start),
                    "pid": _PID,
                    "tid": tid(lane),
                    "args": {
                        "actor": actor,
                        "status": _ENDS[kind],
                        "report_status": p.get("report_status"),
                        "cost_usd": p.get("cost_usd") or 0.0,
                        "duration_s": p.get("duration"),
                        "turn": p.get("turn"),
                        "attempt": p.get("attempt"),
                        "backend": sp.get("backend"),
                        "report_id": p.get("report_id"),
                        "summary": p.get("summary") or p.get("error") or p.get("reason"),
                    },
                }
            )
            turn_end[lane] = ts
            out.append(
                {
                    "name": "cost_usd",
                    "ph": "C",
                    "ts": ts,
                    "pid": _PID,
                    "args": {"cost_usd": round(fold.cost, 6)},
                }
            )
        elif kind == "plan_attempt":
            planning = True
            dur_us = round(float(p.get("duration") or 0.0) * 1_000_000)
            out.append(
                {
                    "name": f"{actor} planning {p.get('attempt')}",
                    "cat": "planning",
                    "ph": "X",
                    "ts": max(0, ts - dur_us),
                    "dur": max(1, dur_us),
                    "pid": _PID,
                    "tid": _PLANNING_TID,
                    "args": {
                        "actor": actor,
                        "status": p.get("status"),
                        "cost_usd": p.get("cost_usd") or 0.0,
                        "error": p.get("error"),
                    },
                }
            )
        elif kind == "report_published" and lane:
            rid = str(p.get("report_id") or "")
            text, _ = narrate(ev, fold)
            arts = p.get("artifacts") or []
            out.append(
                {
                    "name": f"{actor} hands a report"
                    + (f" and {len(arts)} artifact(s)" if arts else ""),
                    "cat": "handoff",
                    "ph": "i",
                    "s": "t",
                    "ts": ts,
                    "pid": _PID,
                    "tid": tid(lane),
                    "args": {"report_id": rid, "text": text, "artifacts": arts},
                }
            )
            published.add(rid)
            if fold.shares_reports:
                # A flow arrow starts inside the slice it leaves from: the publishing turn,
                # which ended (at its own event) just before this one.
                start = max(0, min(ts, turn_end.get(lane, ts)) - 1)
                for other in fold.order:
                    if other != lane:
                        out.append(
                            {
                                "name": "report",
                                "cat": "handoff",
                                "ph": "s",
                                "id": _flow_id(rid, other),
                                "ts": start,
                                "pid": _PID,
                                "tid": tid(lane),
                            }
                        )
        elif kind == "candidate_best_updated":
            value = p.get("value")
            if isinstance(value, int | float):
                out.append(
                    {
                        "name": f"best {p.get('metric')}",
                        "ph": "C",
                        "ts": ts,
                        "pid": _PID,
                        "args": {str(p.get("metric")): value},
                    }
                )
        elif kind in (
            "lane_held",
            "budget_spent",
            "run_finished",
            "run_stopped",
            "run_failed",
            "run_held",
            "planned",
            "run_resumed",
        ):
            text, _ = narrate(ev, fold)
            out.append(
                {
                    "name": kind,
                    "cat": "run",
                    "ph": "i",
                    "s": "t" if lane else "g",
                    "ts": ts,
                    "pid": _PID,
                    "tid": tid(lane) if lane else _PLANNING_TID,
                    "args": {"text": text},
                }
            )
    # Turns still under way (a live or crashed run) end at the last event.
    last = max((e.get("ts", 0) for e in out), default=0)
    for lane, (start, started) in open_turns.items():
        out.append(
            {
                "name": f"{started.get('actor')} turn {(started.get('payload') or {}).get('turn')}",
                "cat": "turn",
                "ph": "X",
                "ts": start,
                "dur": max(1, last - start),
                "pid": _PID,
                "tid": tid(lane),
                "args": {"actor": started.get("actor"), "status": "open", "cost_usd": 0.0},
            }
        )
    meta: list[dict[str, Any]] = [
        {
            "name": "process_name",
            "ph": "M",
            "pid": _PID,
            "args": {"name": f"{run.get('flow')} {run.get('id')}"},
        },
    ]
    if planning:
        meta.append(
            {
                "name": "thread_name",
                "ph": "M",
                "pid": _PID,
                "tid": _PLANNING_TID,
                "args": {"name": "planning"},
            }
        )
        meta.append(
            {
                "name": "thread_sort_index",
                "ph": "M",
                "pid": _PID,
                "tid": _PLANNING_TID,
                "args": {"sort_index": 0},
            }
        )
    for name, n in tids.items():
        meta.append(
            {"name": "thread_name", "ph": "M", "pid": _PID, "tid": n, "args": {"name": name}}
        )
        meta.append(
            {
                "name": "thread_sort_index",
                "ph": "M",
                "pid": _PID,
                "tid": n,
                "args": {"sort_index": n},
            }
        )
    return {
        "traceEvents": meta + out,
        "displayTimeUnit": "ms",
        "otherData": {
            "run_id": run.get("id"),
            "flow": run.get("flow"),
            "workspace": run.get("workspace"),
            "status": run.get("status"),
            "started": fold.started,
        },
    }
