"""`flamechase trace RUN -o FILE`: Chrome trace-event JSON of a run."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from flamechase.view.trace import build_trace
from tests.helpers import cli
from tests.view.conftest import Run


def test_trace_command_writes_one_slice_per_turn(sim_run: Run, tmp_path: Path) -> None:
    out = tmp_path / "run.trace.json"
    proc = cli(
        "trace",
        "last",
        "-o",
        str(out),
        cwd=tmp_path,
        env={"FLAMECHASE_HOME": str(sim_run.home)},
        check=True,
    )
    # Every turn, lanes' and the planner's (a turn outside lanes, on its role's thread).
    ends = [
        e
        for e in sim_run.events
        if e["kind"] in ("turn_valid", "turn_failed", "turn_interrupted", "lane_paused")
    ]
    assert f"wrote {len(ends)} turn slices" in proc.stdout
    trace = json.loads(out.read_text())
    events = trace["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert sorted(threads.values()) == ["coordinator", "lane-1", "lane-2", "lane-3", "run"]
    turns = [e for e in events if e.get("ph") == "X" and e.get("cat") == "turn"]
    assert len(turns) == len(ends)
    per_lane = Counter(threads[e["tid"]] for e in turns)
    assert per_lane == Counter(e["lane"] or e["actor"] for e in ends)
    for slice_, end in zip(
        sorted(turns, key=lambda e: e["args"]["report_id"] or ""),
        sorted(ends, key=lambda e: e["payload"].get("report_id") or ""),
        strict=True,
    ):
        assert slice_["args"]["actor"] == end["actor"]
        assert slice_["args"]["cost_usd"] == end["payload"]["cost_usd"]
        assert slice_["args"]["status"] == end["payload"]["status"]
        assert slice_["dur"] > 0 and slice_["ts"] >= 0
    # Hand-offs: an instant for every published report and every delivery.
    handoffs = [e for e in events if e.get("ph") == "i" and e.get("cat") == "handoff"]
    published = [e for e in sim_run.events if e["kind"] == "report_published"]
    received = [
        e for e in sim_run.events if e["kind"] == "turn_started" and e["payload"]["delivered"]
    ]
    assert len(handoffs) == len(published) + len(received)
    # Flow arrows: each arrival has a start with the same id.
    starts = {e["id"] for e in events if e.get("ph") == "s"}
    finishes = [e["id"] for e in events if e.get("ph") == "f"]
    assert finishes and set(finishes) <= starts
    planning = [e for e in turns if e["args"]["outside_lanes"]]
    assert len(planning) == sum(1 for e in ends if not e["lane"]) >= 1


def test_trace_of_a_live_run_closes_open_turns(sim_run: Run) -> None:
    # Cut the log right after the first turn started: that turn is drawn up to the end.
    first = next(
        i for i, e in enumerate(sim_run.events) if e["kind"] == "turn_started" and e["lane"]
    )
    trace = build_trace(sim_run.run, sim_run.lanes, sim_run.events[: first + 3])
    opened = [e for e in trace["traceEvents"] if e.get("args", {}).get("status") == "open"]
    assert opened
    assert all(e["dur"] >= 1 for e in opened)
    json.dumps(trace)
