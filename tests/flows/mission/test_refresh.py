"""A redirected lane 2..N starts its next mission on a fresh snapshot of lane 1's tree as
it is at the redirect, not on the copy made at plan time (`flamechase.testing`, real engine,
git-less tree and real places)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from flamechase import events as ev
from flamechase.engine.executor import TurnJob
from flamechase.flow import Command, DropPlace, Emit, MakePlace, StartTurn
from flamechase.flows.parallel_flame_chase_mission import FLOW
from flamechase.flows.parallel_flame_chase_mission import events as mev
from flamechase.flows.parallel_flame_chase_mission import refresh as refreshing
from flamechase.testing import FakeClock, FakeTurn, ScriptedExecutor, run_engine, run_for_real
from tests.flows.mission.script import answer, mission, plan, progress, team, verdict


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    tree = tmp_path / "ws"
    tree.mkdir()
    (tree / "README.md").write_text("a tree\n")
    return tree


def test_a_redirected_lane_works_on_a_fresh_copy_of_lane_1s_tree(ws: Path) -> None:
    seen: dict[int, tuple[bool, bool]] = {}  # lane-2 turn -> (lane 1's file, the stray edit)

    def lane1(job: TurnJob) -> FakeTurn:
        if job.request.turn == 1:  # after the plan, so not in lane 2's first copy
            (job.request.workspace / "added_by_lane1.txt").write_text("new\n")
        return progress(job)

    def lane2(job: TurnJob) -> FakeTurn:
        tree = job.request.workspace
        seen[job.request.turn] = ((tree / "added_by_lane1.txt").exists(), (tree / "stray").exists())
        (tree / "stray").write_text("an edit of the old mission\n")
        return progress(job)

    def decide(ctx: Mapping[str, Any]) -> dict[str, Any]:
        nxt = mission("smaller", change_scale="probe")
        return answer(ctx, verdict("lane-2", "redirect", changes=["scale"], next_mission=nxt))

    clock = FakeClock()
    script = team(decide, {"lane-1": lane1, "lane-2": lane2}, plan(lane_1=20, lane_2=2))
    run = run_engine(
        "parallel_flame_chase_mission",
        ws,
        executor=ScriptedExecutor(clock, script, measure=run_for_real),
        clock=clock,
        # Without lane_refresh's rebase, which would carry lane 1's file over before the
        # redirect: here the redirect's own fresh copy is what is tested.
        settings={"lanes": "2", "budget.turns": "8", "lane_refresh": "never"},
    )
    record = run.record()
    [decided] = record.of(mev.AuditDecided)
    [refreshed] = record.of(mev.LaneRefreshed)
    assert (refreshed.lane, refreshed.place, refreshed.audit_id) == (
        "lane-2",
        "lanes/lane-2",
        decided.audit_id,
    )
    now = record.state_as(FLOW).missions.of("lane-2")
    assert now is not None and (refreshed.mission_id, now.origin) == (now.id, "redirect")
    assert decided.seq < refreshed.seq
    [dropped] = [e for e in record.of(ev.PlaceDropped) if e.place == "lanes/lane-2"]
    remade = [e for e in record.of(ev.PlaceMade) if e.place == "lanes/lane-2"]
    assert len(remade) == 2 and refreshed.seq < dropped.seq < remade[1].seq
    # Its first mission's turns ran on the plan-time copy (the stray edit kept between
    # them); the redirected mission's first turn sees lane 1's file and not the old edit.
    after = [
        e.turn for e in record.of(ev.TurnStarted) if e.lane == "lane-2" and e.seq > dropped.seq
    ]
    assert after, "lane 2 worked again after the redirect"
    assert seen[1] == (False, False) and seen[2] == (False, True)
    assert seen[after[0]] == (True, False)


def test_a_refresh_owed_in_the_stored_state_is_carried_out_after_a_resume(ws: Path) -> None:
    """The decision's fold owes the drop; the state a resume loads still owes it, then owes
    the new copy, and lane 2 starts no turn on either the old copy or a missing one."""
    clock = FakeClock()
    run = run_engine(
        "parallel_flame_chase_mission",
        ws,
        executor=ScriptedExecutor(clock, team(lambda c: {}, {}), measure=run_for_real),
        clock=clock,
        settings={"lanes": "2", "budget.turns": "2"},
    )
    state = run.record().state_as(FLOW)
    redirect = {"audit_id": "A000009", "lanes": [{"lane": "lane-2", "verdict": "redirect"}]}
    owing, said = refreshing.refresh(state, redirect)
    assert [type(c.event).__name__ for c in said if isinstance(c, Emit)] == ["LaneRefreshed"]
    resumed = FLOW.load_state(owing.model_dump_json())  # what a resume loads

    def lane2_turns(commands: Sequence[Command]) -> list[Command]:
        return [c for c in commands if isinstance(c, StartTurn) and c.lane == "lane-2"]

    first = FLOW.decide(resumed, clock.time())
    assert DropPlace("lanes/lane-2") in first and not lane2_turns(first)
    gone = FLOW.evolve(resumed, ev.PlaceDropped(place="lanes/lane-2"))
    then = FLOW.decide(gone, clock.time())
    assert [c.name for c in then if isinstance(c, MakePlace)] == ["lanes/lane-2"]
    assert not lane2_turns(then)
