"""parallel_flame_chase's decider alone: events in, commands out (no engine, no processes)."""

from __future__ import annotations

from typing import Any

from flamechase import events as ev
from flamechase.flow import (
    Command,
    DropPlace,
    FinishRun,
    Freeze,
    MakePlace,
    Measure,
    PublishReport,
    RunSetup,
    StartTurn,
)
from flamechase.flows.parallel_flame_chase import FLOW, ParallelParams

PLAN = {
    "lanes": [
        {
            "lane": f"lane-{n}",
            "mission": {"title": "t", "objective": "o", "success_criteria": ["c"]},
        }
        for n in (1, 2)
    ]
}


def start(**params: Any) -> Any:
    p = ParallelParams(**{"lanes": 2, **params})
    return FLOW.start(RunSetup(run_id="r", objective="o", params=p, lanes=FLOW.lanes(p)))


def settle(state: Any, *events: ev.Event) -> tuple[Any, list[Command]]:
    """Fold `events`, then let every instant command the flow owes happen."""
    for e in events:
        state = FLOW.evolve(state, e)
    for _ in range(20):
        commands = list(FLOW.decide(state, 0.0))
        owed = [c for c in commands if isinstance(c, PublishReport)]
        emits = [c for c in commands if type(c).__name__ in ("Emit", "HoldLane", "ReleaseLane")]
        if not owed and not emits:
            return state, commands
        for c in owed:
            state = FLOW.evolve(state, ev.ReportPublished(lane=c.lane, report_id=c.report_id))
        for c in emits:
            if type(c).__name__ == "Emit":
                state = FLOW.evolve(state, c.event)  # type: ignore[attr-defined]
            elif type(c).__name__ == "HoldLane":
                state = FLOW.evolve(
                    state,
                    ev.LaneHeld(
                        lane=c.lane,  # type: ignore[attr-defined]
                        reason=c.reason,
                    ),
                )  # type: ignore[attr-defined]
            else:
                state = FLOW.evolve(
                    state,
                    ev.LaneReleased(
                        lane=c.lane,  # type: ignore[attr-defined]
                        reason=c.reason,
                    ),
                )  # type: ignore[attr-defined]
    raise AssertionError("the flow never settled")


def made(state: Any, *names: str) -> Any:
    for n in names:
        state = FLOW.evolve(state, ev.PlaceMade(place=n, path=f"/p/{n}"))
    return state


def test_places_first_then_one_planning_session() -> None:
    state, cmds = settle(start(lanes=3))
    # The first private lane's copy waits for the plan (it is to be the planner's snapshot).
    assert {c.name for c in cmds if isinstance(c, MakePlace)} == {"lanes/lane-3", "planning/1"}
    assert not [c for c in cmds if isinstance(c, StartTurn)]
    state, cmds = settle(made(state, "lanes/lane-3", "planning/1"))
    [plan] = [c for c in cmds if isinstance(c, StartTurn)]
    assert (plan.role, plan.lane, plan.number, plan.counted) == ("coordinator", None, 1, False)


def test_three_failed_planning_sessions_fail_the_run() -> None:
    state, _ = settle(made(start(), "lanes/lane-2", "planning/1"))
    for attempt in (1, 2, 3):
        state, cmds = settle(
            state, ev.TurnFailed(actor="coordinator", turn=1, attempt=attempt, error="no plan")
        )
    [finish] = [c for c in cmds if isinstance(c, FinishRun)]
    assert finish.status == "failed"
    assert "planning failed after 3 fresh sessions: attempt 1: no plan" in finish.reason


def test_a_plan_starts_every_lane_with_its_mission() -> None:
    state, _ = settle(made(start(), "lanes/lane-2", "planning/1"))
    state, cmds = settle(state, ev.TurnValid(actor="coordinator", turn=1, result=PLAN))
    assert [(c.lane, c.role) for c in cmds if isinstance(c, StartTurn)] == [
        ("lane-1", "lane_1_actor_a"),
        ("lane-2", "lane_2_actor_a"),
    ]
    assert FLOW.describe(state)["plan"] == PLAN


def test_the_planners_snapshot_is_dropped_as_the_first_private_lanes_copy_is_asked_for() -> None:
    state, cmds = settle(made(start(), "planning/1"))
    assert not [c for c in cmds if isinstance(c, MakePlace)]
    state, cmds = settle(state, ev.TurnValid(actor="coordinator", turn=1, result=PLAN))
    # In one round, so that the engine's kept copy of the planner's snapshot becomes it.
    assert [c.name for c in cmds if isinstance(c, DropPlace)] == ["planning/1"]
    assert [c.name for c in cmds if isinstance(c, MakePlace)] == ["lanes/lane-2"]
    assert not [c for c in cmds if isinstance(c, StartTurn)]  # lanes start once it is there
    state, cmds = settle(made(state, "lanes/lane-2"), ev.PlaceDropped(place="planning/1"))
    assert not [c for c in cmds if isinstance(c, DropPlace | MakePlace)]
    assert len([c for c in cmds if isinstance(c, StartTurn)]) == 2


def test_a_revised_objective_plans_in_a_new_snapshot_and_drops_it_after() -> None:
    state, _ = settle(made(start(), "lanes/lane-2", "planning/1"))
    state, _ = settle(state, ev.TurnValid(actor="coordinator", turn=1, result=PLAN))
    state, _ = settle(state, ev.PlaceDropped(place="planning/1"))
    state, cmds = settle(state, ev.ObjectiveRevised(task_fingerprint="f2"))
    assert [c.name for c in cmds if isinstance(c, MakePlace)] == ["planning/2"]
    state, _ = settle(made(state, "planning/2"))
    state, cmds = settle(state, ev.TurnValid(actor="coordinator", turn=2, result=PLAN))
    assert [c.name for c in cmds if isinstance(c, DropPlace)] == ["planning/2"]


def test_the_pre_run_warning_names_every_copy_an_evaluated_run_writes() -> None:
    plain = ParallelParams(lanes=3, lane_refresh="never")
    assert FLOW.copy_names(plain, fresh=True, revised=False) == [
        "planning, then lane-2's copy",
        "lane-3",
    ]
    judged = ParallelParams(lanes=3, evaluator="python3 bench.py", metric_pattern="S: (\\d+)")
    names = FLOW.copy_names(judged, fresh=True, revised=False)
    assert names[2].startswith("lane 1's tree in the lane refresh's repository")
    assert names[3] == "baseline" and names[4].startswith("a measurement copy")
    assert FLOW.copies_needed(judged, fresh=True, revised=False) == 5
    assert FLOW.copy_names(ParallelParams(lanes=1), fresh=True, revised=False) == ["planning"]
    assert FLOW.copy_names(judged, fresh=False, revised=True) == ["planning"]


def test_with_an_evaluator_nothing_runs_before_the_baseline_and_the_frozen_evaluator() -> None:
    state, cmds = settle(start(evaluator="python3 bench.py"))
    # Copies of the untouched source only: the baseline (lane-2's copy waits for the plan).
    assert {c.name for c in cmds if isinstance(c, MakePlace)} == {"baseline"}
    assert not [c for c in cmds if isinstance(c, StartTurn)]
    state, cmds = settle(made(state, "baseline"))
    [freeze] = [c for c in cmds if isinstance(c, Freeze)]
    assert freeze.command == "python3 bench.py" and freeze.place == "baseline"
    state, cmds = settle(
        state, ev.Frozen(key="evaluator", place="baseline", files={"bench.py": "ab"})
    )
    assert any(isinstance(c, MakePlace) and c.name == "planning/1" for c in cmds)


def _planned_with_evaluator(lanes: int = 2) -> Any:
    state, _ = settle(made(start(evaluator="python3 bench.py", lanes=lanes), "baseline"))
    state, _ = settle(state, ev.Frozen(key="evaluator", place="baseline", files={"bench.py": "ab"}))
    state, _ = settle(made(state, *(f"lanes/lane-{n}" for n in range(2, lanes + 1)), "planning/1"))
    plan = {"lanes": [{**PLAN["lanes"][0], "lane": f"lane-{n}"} for n in range(1, lanes + 1)]}
    state, _ = settle(state, ev.TurnValid(actor="coordinator", turn=1, result=plan))
    return state


SUBMISSION = {
    "status": "deliverable_ready",
    "summary": "s",
    "deliverable": {
        "title": "t",
        "integration_notes": "n",
        "artifacts": [{"path": "a.txt", "description": ""}],
    },
    "submission": {
        "title": "t",
        "metric": "score",
        "value": 3.0,
        "direction": "minimize",
        "evaluator": "python3 bench.py",
    },
}


def test_a_submission_is_measured_in_a_copy_of_the_baseline_with_the_lane_laid_over() -> None:
    state = _planned_with_evaluator()
    state, cmds = settle(
        state,
        ev.TurnValid(lane="lane-2", actor="lane_2_actor_a", turn=1, attempt=1, result=SUBMISSION),
    )
    [overlay] = [c for c in cmds if isinstance(c, MakePlace) and c.how == "overlay"]
    assert (overlay.base, overlay.over, overlay.restore) == (
        "baseline",
        "lanes/lane-2",
        "evaluator",
    )
    assert not [c for c in cmds if isinstance(c, StartTurn) and c.lane == "lane-2"]
    state, cmds = settle(
        state, ev.PlaceMade(place=overlay.name, path="/m", how="overlay", changed=["solver.py"])
    )
    [measure] = [c for c in cmds if isinstance(c, Measure)]
    assert measure.place == overlay.name and measure.lane == "lane-2"


def test_a_submission_that_changed_the_evaluator_is_tampered_and_the_lane_is_told() -> None:
    state = _planned_with_evaluator()
    state, cmds = settle(
        state,
        ev.TurnValid(lane="lane-2", actor="lane_2_actor_a", turn=1, attempt=1, result=SUBMISSION),
    )
    [overlay] = [c for c in cmds if isinstance(c, MakePlace) and c.how == "overlay"]
    state, cmds = settle(
        state,
        ev.PlaceMade(
            place=overlay.name, path="/m", how="overlay", changed=["bench.py", "solver.py"]
        ),
    )
    assert not [c for c in cmds if isinstance(c, Measure)]
    [row] = state.candidates
    assert row["verified"] is False and "tampered" in row["receipt"]["error"]
    assert FLOW.describe(state)["leaderboard"]["best"] is None
    # The lane's next turn receives the runtime's system report.
    [nxt] = [c for c in cmds if isinstance(c, StartTurn) and c.lane == "lane-2"]
    assert "system:lane-2" in nxt.inbox_from


def test_submissions_are_measured_one_at_a_time_in_the_order_they_came() -> None:
    state = _planned_with_evaluator(lanes=3)
    for lane in ("lane-3", "lane-2"):
        actor = f"lane_{lane[-1]}_actor_a"
        state, cmds = settle(
            state, ev.TurnValid(lane=lane, actor=actor, turn=1, attempt=1, result=SUBMISSION)
        )
    [first] = [c for c in cmds if isinstance(c, MakePlace) and c.how == "overlay"]
    assert first.over == "lanes/lane-3"  # lane-2's waits: one measurement copy at a time
    state, cmds = settle(state, ev.PlaceMade(place=first.name, path="/m", how="overlay"))
    [measure] = [c for c in cmds if isinstance(c, Measure)]
    state, cmds = settle(
        state,
        ev.Measured(lane="lane-3", key=measure.key, receipt={"value": 2.0}),
    )
    # The first copy goes back in the round the next one is asked for (the engine reuses it).
    assert first.name in [c.name for c in cmds if isinstance(c, DropPlace)]
    [second] = [c for c in cmds if isinstance(c, MakePlace) and c.how == "overlay"]
    assert second.over == "lanes/lane-2"
