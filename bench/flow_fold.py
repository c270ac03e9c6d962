"""What folding events costs a flow: parallel_flame_chase's `evolve` over a long run's events.

    python bench/flow_fold.py [--events 10000] [--lanes 3] [--repeat 5]

Drives the decider in this process (no engine, no processes): every command it asks for is
answered at once with the event the engine would journal (places made, the evaluator frozen,
turns started and valid, reports published, one submission in four measured, places dropped,
its own events), until `--events` events. Then folds that journal from the first state
`--repeat` times and prints JSON: the fastest fold in CPU seconds of this process (the
machine is shared: CPU time and the best of several are what stay comparable between two
versions) and per event, the median, and how many events of each kind the journal holds. Every state update of the flow runs once per
event it folds, so this is the price of checked updates (`FlowState.replace`) against
unchecked ones (`model_copy(update=...)`) on the same journal.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import time
from typing import Any

from flamechase import events as ev
from flamechase.flow import (
    DropPlace,
    Emit,
    FinishRun,
    Freeze,
    HoldLane,
    MakePlace,
    Measure,
    PublishReport,
    ReleaseLane,
    RunSetup,
    StartTurn,
)
from flamechase.flows.parallel_flame_chase import FLOW, ParallelParams

AT = "2026-01-01T00:00:00Z"


def _result(role: str, lane: str | None, turn: int, lanes: list[str]) -> dict[str, Any]:
    if lane is None:  # the coordinator's plan
        mission = {"title": "t", "objective": "o", "success_criteria": ["c"]}
        return {"lanes": [{"lane": name, "mission": mission} for name in lanes]}
    report: dict[str, Any] = {"status": "progress", "summary": f"{role} did turn {turn}"}
    if turn % 4 == 0:
        report["status"] = "deliverable_ready"
        report["deliverable"] = {"summary": "d", "artifacts": []}
        report["submission"] = {
            "metric": "steps",
            "direction": "minimize",
            "value": float(1000 - turn),
        }
    return report


def _answers(command: object, lanes: list[str]) -> list[ev.Event]:
    """The events the engine would journal for `command`, at once."""
    if isinstance(command, MakePlace):
        return [ev.PlaceMade(place=command.name, path=f"/runs/r/{command.name}", how=command.how)]
    if isinstance(command, Freeze):
        return [ev.Frozen(key=command.key, files={"bench.py": "0" * 64})]
    if isinstance(command, Measure):
        value = 1000.0 - int(command.key.split(".")[1])
        receipt = {"value": value, "exit_code": 0, "output_sha256": "0" * 64}
        return [ev.Measured(key=command.key, lane=command.lane, receipt=receipt)]
    if isinstance(command, DropPlace):
        return [ev.PlaceDropped(place=command.name)]
    if isinstance(command, PublishReport):
        return [ev.ReportPublished(lane=command.lane, report_id=command.report_id)]
    if isinstance(command, HoldLane):
        return [ev.LaneHeld(lane=command.lane, reason=command.reason)]
    if isinstance(command, ReleaseLane):
        return [ev.LaneReleased(lane=command.lane, reason=command.reason)]
    if isinstance(command, Emit):
        return [command.event]
    if isinstance(command, StartTurn):
        who = {"actor": command.role, "lane": command.lane, "turn": command.number, "at": AT}
        result = _result(command.role, command.lane, command.number, lanes)
        return [
            ev.TurnStarted(**who),
            ev.TurnValid(
                **who, result=result, report_status=result.get("status"), summary="did it"
            ),
        ]
    return []


def journal(n_events: int, n_lanes: int) -> tuple[RunSetup[ParallelParams], list[ev.Event]]:
    params = ParallelParams(
        lanes=n_lanes,
        evaluator="python bench.py",
        metric_pattern=r"STEPS: (\d+)",
        metric="steps",
        direction="minimize",
    )
    setup = RunSetup(run_id="r", objective="o", params=params, lanes=FLOW.lanes(params))
    names = [lane.name for lane in setup.lanes]
    state = FLOW.start(setup)
    out: list[ev.Event] = []
    while len(out) < n_events:
        commands = list(FLOW.decide(state, 0.0))
        if any(isinstance(c, FinishRun) for c in commands):
            raise SystemExit(f"the run ended after {len(out)} events: {commands}")
        answered = [e for c in commands for e in _answers(c, names)]
        if not answered:
            raise SystemExit(f"nothing to answer after {len(out)} events: {commands}")
        for event in answered:
            state = FLOW.evolve(state, event)
            out.append(event)
    return setup, out[:n_events]


def fold(setup: RunSetup[ParallelParams], events: list[ev.Event]) -> float:
    began = time.process_time()
    state = FLOW.start(setup)
    for event in events:
        state = FLOW.evolve(state, event)
    return time.process_time() - began


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--lanes", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    setup, events = journal(args.events, args.lanes)
    times = [fold(setup, events) for _ in range(args.repeat)]
    best = min(times)
    print(
        json.dumps(
            {
                "events": len(events),
                "fold_cpu_s": round(best, 4),
                "us_per_event": round(best / len(events) * 1e6, 2),
                "median_cpu_s": round(statistics.median(times), 4),
                "kinds": dict(collections.Counter(e.kind for e in events).most_common()),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
