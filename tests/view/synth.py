"""A synthetic run database of any size, shaped like a parallel_flame_chase run.

For what a real run cannot give cheaply: 10,000 events, hostile summaries, spread-out
timestamps, a run stopped for a night and resumed, every lane waiting out a usage limit.
The run and lanes rows go through the store's Writer; events are inserted with chosen `at`
times (the Writer stamps the wall clock), and each valid/failed turn also gets a `reports`
row so the report sequence the views derive can be checked against the table.
"""

from __future__ import annotations

import bisect
import json
import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from flamechase.store.db import DB_NAME, Writer


def _iso(t: datetime) -> str:
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def make_run(
    home: Path,
    events: int = 10_000,
    *,
    lanes: int = 3,
    seed: int = 7,
    summary: str | None = None,
    run_id: str = "20260101T000000Z-synthetic",
    gaps: Sequence[tuple[float, str, float]] = (),
) -> Path:
    """Write a finished run of about `events` events under `home`; returns its directory.

    `gaps`: (share of the events, "stop" or "pause", seconds). At that share of the run every
    turn under way ends and the run is stopped then resumed that many seconds later ("stop"),
    or every lane is paused by a usage limit for that long ("pause").
    """
    rng = random.Random(seed)
    run_dir = home / "runs" / run_id
    run_dir.mkdir(parents=True)
    w = Writer(run_dir / DB_NAME)
    names = [f"lane-{i}" for i in range(1, lanes + 1)]
    roles = {n: [f"lane_{i}_actor_a", f"lane_{i}_actor_b"] for i, n in enumerate(names, 1)}
    params = {
        "lanes": lanes,
        "evaluator": "python3 bench.py",
        "metric": "steps",
        "direction": "minimize",
        "metric_pattern": r"STEPS: (\d+)",
    }
    budget = {
        "duration": None,
        "cost": None,
        "turns": 100_000,
        "output_tokens": None,
        "graceful": True,
    }
    with w.transaction():
        w.create_run(
            run_id=run_id,
            flow="parallel_flame_chase",
            workspace="/tmp/synthetic",
            task="Reduce STEPS.",
            fingerprint="x",
            params=params,
            budget=budget,
            agents={r: "sim/steady" for rs in roles.values() for r in rs},
            run_dir=str(run_dir),
        )
        for pos, n in enumerate(names):
            w.add_lane(n, pos, roles[n], f"/tmp/synthetic/{n}")
    t = datetime(2026, 1, 1, tzinfo=UTC)
    rows: list[tuple[str, str, str | None, str | None, str]] = []

    def ev(kind: str, lane: str | None = None, actor: str | None = None, **payload: Any) -> None:
        rows.append((_iso(t), kind, lane, actor, json.dumps(payload)))

    ev(
        "run_created",
        flow="parallel_flame_chase",
        lanes=names,
        budget=budget,
        workspace="/tmp/synthetic",
        objective="Reduce STEPS.",
        agents={},
    )
    ev("run_running", lanes=names)
    reports: list[tuple[str, str]] = []  # (report id, lane) in publish order = seq - 1
    by_src: dict[str, list[tuple[str, int]]] = {n: [] for n in names}  # (id, seq)
    acked = {n: dict.fromkeys(names, 0) for n in names}  # consumer -> source -> count
    turn_no = dict.fromkeys(names, 0)
    inflight: dict[str, tuple[str, int, dict[str, int]]] = {}
    best: float | None = None
    cost = 0.0
    turns = 0
    tokens = 0
    pending_gaps = sorted(gaps)
    while len(rows) < events - 1:
        if pending_gaps and len(rows) >= pending_gaps[0][0] * events:
            _, how, seconds = pending_gaps.pop(0)
            t += timedelta(milliseconds=300)
            until = t + timedelta(seconds=seconds)
            for lane, (actor, number, _acks) in sorted(inflight.items()):
                if how == "stop":
                    ev(
                        "turn_interrupted",
                        lane,
                        actor,
                        turn=number,
                        attempt=1,
                        status="interrupted",
                        reason="stopped by a signal",
                        duration=1.0,
                    )
                else:
                    ev(
                        "lane_paused",
                        lane,
                        actor,
                        turn=number,
                        attempt=1,
                        status="limited",
                        until=_iso(until),
                        reason="usage limit",
                        duration=1.0,
                    )
                turn_no[lane] -= 1  # the same turn is taken again
            inflight.clear()
            if how == "stop":
                ev("run_stopped", message="stopped by a signal")
            t = until
            if how == "stop":
                ev("run_resumed", session=2, budget=budget)
            continue
        lane = rng.choice(names)
        t += timedelta(milliseconds=rng.randrange(50, 4000))
        if lane not in inflight:
            turn_no[lane] += 1
            actor = roles[lane][(turn_no[lane] - 1) % 2]
            # As the engine's inbox: per source, up to 12 reports not yet acknowledged.
            delivered: list[str] = []
            acks: dict[str, int] = {}
            for src in names:
                if src != lane:
                    batch = by_src[src][acked[lane][src] : acked[lane][src] + 12]
                    delivered += [rid for rid, _ in batch]
                    if batch:
                        acks[src] = batch[-1][1]
            inflight[lane] = (actor, turn_no[lane], acks)
            ev(
                "turn_started",
                lane,
                actor,
                turn=turn_no[lane],
                attempt=1,
                backend="sim/steady",
                delivered=delivered,
            )
            continue
        actor, number, acks = inflight.pop(lane)
        rid = f"{lane}.{number:04d}.{rng.randrange(16**6):06x}"
        c = round(rng.uniform(0.01, 0.2), 6)
        cost += c
        turns += 1
        tokens += 1500
        reports.append((rid, lane))
        by_src[lane].append((rid, len(reports)))
        if rng.random() < 0.1:
            ev(
                "turn_failed",
                lane,
                actor,
                turn=number,
                attempt=1,
                status="failed",
                error="sim: simulated crash (exit 1)",
                report_id=rid,
                duration=1.5,
                cost_usd=c,
                output_tokens=1500,
                exit_code=1,
                repairs=0,
            )
            continue
        status = rng.choice(["progress", "deliverable_ready", "no_result"])
        for src, seq in acks.items():
            acked[lane][src] = bisect.bisect_right([q for _, q in by_src[src]], seq)
        ev(
            "turn_valid",
            lane,
            actor,
            turn=number,
            attempt=1,
            status="valid",
            report_id=rid,
            report_status=status,
            summary=summary or f"{actor} did turn {number} of {lane}.",
            duration=2.0,
            cost_usd=c,
            output_tokens=1500,
            acknowledged=acks,
            repairs=0,
        )
        arts = (
            [{"path": f"turn-{number:03d}/solver.py", "sha256": "0" * 64, "size": 900}]
            if status == "deliverable_ready"
            else []
        )
        ev("report_published", lane, actor, report_id=rid, report_status=status, artifacts=arts)
        if arts:
            value = float(rng.randrange(800, 400_000))
            ev(
                "candidate_submitted",
                lane,
                actor,
                report_id=rid,
                metric="steps",
                direction="minimize",
                claimed=value,
                measured=value,
                verified=True,
                unverified_reason=None,
            )
            if best is None or value < best:
                best = value
                ev(
                    "candidate_best_updated",
                    lane,
                    actor,
                    report_id=rid,
                    metric="steps",
                    direction="minimize",
                    value=value,
                )
    t += timedelta(seconds=1)
    ev(
        "run_finished",
        message="budget turns is spent",
        budget={
            "duration": {
                "limit": None,
                "used": (t - datetime(2026, 1, 1, tzinfo=UTC)).total_seconds(),
            },
            "cost": {"limit": None, "used": round(cost, 6)},
            "turns": {"limit": 100_000, "used": turns},
            "output_tokens": {"limit": None, "used": tokens},
        },
    )
    with w.transaction():
        w.conn.executemany(
            "INSERT INTO events (at, kind, lane, actor, payload) VALUES (?,?,?,?,?)", rows
        )
        for rid, lane in reports:
            w.conn.execute(
                "INSERT INTO reports (report_id, lane, turn_id, kind, record, bytes)"
                " VALUES (?,?,?,?,?,?)",
                (rid, lane, 0, "report", "{}", 2),
            )
        w.update_run(status="finished")
    w.close()
    return run_dir
