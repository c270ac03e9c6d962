"""parallel_flame_chase's skill, `parallel-flame-chase`: the lane protocol, mounted on the lanes'
sessions and on the coordinator's, which plans for lanes that follow it; the coordinator's own
task stays in its prompt, which refers to the skill for what the lanes do."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from flamechase.flow import ResultSpec, RunSetup, StartTurn, TurnContext
from flamechase.flows.parallel_flame_chase import FLOW
from flamechase.flows.parallel_flame_chase import skill as pfc_skill
from flamechase.flows.parallel_flame_chase.flow import ParallelParams
from flamechase.flows.parallel_flame_chase.plans import PlanResult

LANE_RULES = "must publish reconstructable artifact packages for lane-1"


def test_the_coordinators_prompt_refers_to_the_mounted_skill_and_keeps_its_own_task(
    tmp_path: Path,
) -> None:
    params = ParallelParams(lanes=3)
    state = FLOW.start(
        RunSetup(run_id="r1", objective="o", params=params, lanes=FLOW.lanes(params))
    )
    turn = StartTurn(
        role="coordinator", lane=None, number=1, place="planning/1", result=ResultSpec(PlanResult)
    )
    ctx = TurnContext(
        run_id="r1",
        flow=FLOW.name,
        objective="make the parser fast",
        turn=turn,
        attempt=1,
        workspace=tmp_path,
        io_dir=tmp_path,
        report_path=tmp_path / "plan.json",
        inbox_path=tmp_path / "inbox.json",
        inbox=(),
        artifact_root=None,
        checkpoint_path=None,
        checkpoint_identity={},
        workspace_map={},
    )
    plain = FLOW.prompt(state, ctx)
    mounted = FLOW.prompt(state, dataclasses.replace(ctx, skill=pfc_skill.NAME))
    assert LANE_RULES in plain and LANE_RULES not in mounted
    assert "The lanes follow the parallel-flame-chase skill" in mounted
    # Its own task stays: plan only, one falsifiable mission per lane, the plan's shape.
    for own in (
        "You are the planning coordinator",
        "Plan only: no edits",
        "exactly 3 materially different lanes (lane-1, lane-2, lane-3)",
        "Missions must be falsifiable",
        "make the parser fast",
        str(tmp_path / "plan.json"),
        '"success_criteria"',
    ):
        assert own in mounted


def test_the_skill_tells_the_coordinator_it_plans_for_lanes_that_follow_it() -> None:
    body = pfc_skill.SKILL.body
    words = " ".join(body.split())
    assert "The coordinator does not work in a lane: it plans one mission per lane" in words
    for part in ("## Actor", "## Where you write", "## Report", "## Checkpoint", "## Resume"):
        assert part in body
    assert "the turn's prompt" in body and "lane-1 owns integration" in body
