"""Chrome trace-event JSON of a run (opens in Perfetto and chrome://tracing).

One process (the run), one thread per lane and per role that takes turns outside lanes
(planning, judging), one complete slice (`"ph": "X"`) per turn with its actor, status and cost,
instant events for hand-offs (a report published, reports received) and for what a flow marks
on a lane, flow arrows from each published report to the turns that received it, and counters
for cumulative cost and the leaderboard's best. Timestamps are microseconds since the run's
first event. Every sentence is the event's own (`Event.show`).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from flamechase import events as ev
from flamechase.view.state import Change, RunFold, parse_at

__all__ = ["build_trace"]

_PID = 1
_RUN_TID = 0  # run-wide instants


def _flow_id(report_id: str, lane: str) -> int:
    # Stable and unique enough per (report, receiving lane); trace ids are plain integers.
    return zlib.crc32(f"{report_id}>{lane}".encode())


class _Trace:
    """The records of one run's trace, built event by event."""

    def __init__(self, fold: RunFold) -> None:
        self.fold = fold
        self.out: list[dict[str, Any]] = []
        self.tids: dict[str, int] = {name: i + 1 for i, name in enumerate(fold.order)}
        self.t0: datetime | None = None
        self.open: dict[str, tuple[int, ev.TurnStarted]] = {}  # track -> (start us, started)
        self.published: dict[str, tuple[str, int]] = {}  # report id -> (track, ts)
        self.best: float | None = None

    def us(self, at: str) -> int:
        when = parse_at(at)
        if self.t0 is None:
            self.t0 = when
        return max(0, round((when - self.t0).total_seconds() * 1_000_000))

    def tid(self, track: str) -> int:
        if track not in self.tids:
            self.tids[track] = len(self.tids) + 1
        return self.tids[track]

    def instant(self, name: str, cat: str, ts: int, track: str | None, **args: Any) -> None:
        self.out.append(
            {
                "name": name,
                "cat": cat,
                "ph": "i",
                "s": "t" if track else "g",
                "ts": ts,
                "pid": _PID,
                "tid": self.tid(track) if track else _RUN_TID,
                "args": args,
            }
        )

    def add(self, e: ev.Event, ch: Change) -> None:
        ts = self.us(e.at) if e.at else 0
        track = ch.track
        if isinstance(e, ev.TurnStarted) and track:
            self.open[track] = (ts, e)
            if e.delivered:
                self.received(e, track, ts, ch.shown.text)
        elif isinstance(e, ev.TurnEnded) and track:
            self.turn(e, track, ts)
        elif isinstance(e, ev.ReportPublished) and e.lane:
            self.published[e.report_id] = (e.lane, ts)
            arts = len(e.artifacts)
            name = f"{e.actor or e.lane} files a report" + (
                f" and {arts} artifact(s)" if arts else ""
            )
            self.instant(
                name,
                "handoff",
                ts,
                e.lane,
                report_id=e.report_id,
                text=ch.shown.text,
                artifacts=e.artifacts,
            )
        elif ch.shown.mark is not None:
            self.instant(ch.shown.mark.label, "mark", ts, track, text=ch.shown.text)
        elif ch.shown.tag in ("run", "warn", "plan", "best", "fail", "report"):
            # What the run or a flow says of a lane (a hold, a flow's own kinds): an instant
            # on the lane's track, or a run-wide one.
            self.instant(e.kind, "run" if not track else "lane", ts, track, text=ch.shown.text)
        best = self.fold.best
        if ch.board and best is not None and best.value != self.best:
            self.best = best.value
            self.out.append(
                {"name": f"best {best.metric}", "ph": "C", "ts": ts, "pid": _PID,
                 "args": {best.metric: best.value}}
            )  # fmt: skip

    def received(self, e: ev.TurnStarted, track: str, ts: int, text: str) -> None:
        self.instant(
            f"{e.actor} receives {len(e.delivered)} report(s)",
            "handoff",
            ts,
            track,
            delivered=list(e.delivered),
            text=text,
        )
        for rid in e.delivered:
            source = self.published.get(rid)
            if source is None:
                continue
            # An arrow starts inside the slice it leaves from (the publishing turn ended at
            # its own event just before the report's) and ends at the receiving turn.
            ident = _flow_id(rid, track)
            start = max(0, source[1] - 1)
            for ph, at, where in (("s", start, source[0]), ("f", ts, track)):
                record = {"name": "report", "cat": "handoff", "ph": ph, "id": ident, "ts": at,
                          "pid": _PID, "tid": self.tid(where)}  # fmt: skip
                if ph == "f":
                    record["bp"] = "e"
                self.out.append(record)

    def turn(self, e: ev.TurnEnded, track: str, ts: int) -> None:
        start_at, started = self.open.pop(track, (None, None))
        dur_us = round(float(e.duration or 0.0) * 1_000_000)
        start = max(0, ts - dur_us) if start_at is None else start_at
        summary = getattr(e, "summary", "") or getattr(e, "error", "") or getattr(e, "reason", "")
        self.out.append(
            {
                "name": f"{e.actor} turn {e.turn}",
                "cat": "turn",
                "ph": "X",
                "ts": start,
                "dur": max(1, ts - start),
                "pid": _PID,
                "tid": self.tid(track),
                "args": {
                    "actor": e.actor,
                    "status": e.status,
                    "report_status": getattr(e, "report_status", None),
                    "cost_usd": e.cost_usd,
                    "duration_s": e.duration,
                    "turn": e.turn,
                    "attempt": e.attempt,
                    "backend": started.backend if started else None,
                    "report_id": getattr(e, "report_id", None),
                    "summary": summary,
                    "outside_lanes": not e.lane,
                },
            }
        )
        self.out.append(
            {"name": "cost_usd", "ph": "C", "ts": ts, "pid": _PID,
             "args": {"cost_usd": round(self.fold.cost, 6)}}
        )  # fmt: skip

    def close_open_turns(self) -> None:
        """Turns still under way (a live or crashed run) end at the last event."""
        last = max((e.get("ts", 0) for e in self.out), default=0)
        for track, (start, started) in self.open.items():
            self.out.append(
                {
                    "name": f"{started.actor} turn {started.turn}",
                    "cat": "turn",
                    "ph": "X",
                    "ts": start,
                    "dur": max(1, last - start),
                    "pid": _PID,
                    "tid": self.tid(track),
                    "args": {"actor": started.actor, "status": "open", "cost_usd": 0.0},
                }
            )

    def meta(self, run: Mapping[str, Any]) -> list[dict[str, Any]]:
        name = f"{run.get('flow')} {run.get('id')}"
        out: list[dict[str, Any]] = [
            {"name": "process_name", "ph": "M", "pid": _PID, "args": {"name": name}},
            {"name": "thread_name", "ph": "M", "pid": _PID, "tid": _RUN_TID,
             "args": {"name": "run"}},
        ]  # fmt: skip
        # Turns outside lanes (planning, judging) first, as the replay draws them.
        solo = [n for n in self.tids if n in self.fold.lanes and self.fold.lanes[n].solo]
        order = solo + [n for n in self.tids if n not in solo]
        for i, name in enumerate(order, start=1):
            n = self.tids[name]
            out.append(
                {"name": "thread_name", "ph": "M", "pid": _PID, "tid": n, "args": {"name": name}}
            )
            out.append(
                {"name": "thread_sort_index", "ph": "M", "pid": _PID, "tid": n,
                 "args": {"sort_index": i}}
            )  # fmt: skip
        return out


def build_trace(
    run: Mapping[str, Any], lanes: Iterable[Mapping[str, Any]], events: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    fold = RunFold.from_run(run, lanes)
    trace = _Trace(fold)
    for row in events:
        e = ev.parse(row)
        trace.add(e, fold.apply(e))
    trace.close_open_turns()
    return {
        "traceEvents": trace.meta(run) + trace.out,
        "displayTimeUnit": "ms",
        "otherData": {
            "run_id": run.get("id"),
            "flow": run.get("flow"),
            "workspace": run.get("workspace"),
            "status": run.get("status"),
            "started": fold.started,
        },
    }
