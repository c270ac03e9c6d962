"""parallel_flame_chase:git_pr's skill, `parallel-flame-chase-git-pr`: the lane protocol as it
applies to pull requests (own clones, branches, `flamechase pr`, the runtime's receipts and
merges, system reports; no artifact packages), mounted on every session of the variant; a lane
prompt then keeps only the turn's facts, the coordinator's its own task."""

from __future__ import annotations

import dataclasses
import shlex
import sys
from pathlib import Path

from flamechase.flow import ResultSpec, StartTurn, TurnContext
from flamechase.flows.git_pr import skill as git_skill
from flamechase.flows.parallel_flame_chase.plans import PlanResult
from tests.flows.git_pr.kit import FLOW, Driver, sha, starts

STEPS = "git checkout -B lane-2/NAME origin/main"


def context(turn: StartTurn, skill: str = "") -> TurnContext:
    return TurnContext(
        run_id="r1",
        flow=FLOW.name,
        objective="Lower the score.",
        turn=turn,
        attempt=1,
        workspace=Path(f"/run/lanes/{turn.lane}/workspace"),
        io_dir=Path("/io"),
        report_path=Path("/io/report.json"),
        inbox_path=Path("/io/inbox.json"),
        inbox=[],
        artifact_root=None,
        checkpoint_path=Path("/io/checkpoint.json"),
        checkpoint_identity={"turn": turn.number},
        workspace_map={},
        skill=skill,
    )


def test_a_lane_prompt_with_the_skill_mounted_keeps_the_facts_and_leaves_the_steps() -> None:
    d = Driver(objective="Faster. You MUST only modify `src/`.")
    d.set_up(main_score=50)
    d.turn("lane-2", [{"op": "open", "branch": "lane-2/x", "title": "try x"}])
    d.push("lane-2", {"refs/heads/lane-2/x": sha(1)})
    turn = next(t for t in starts(d.decide()) if t.lane == "lane-2")
    plain = FLOW.prompt(d.state, context(turn))
    mounted = FLOW.prompt(d.state, context(turn, git_skill.NAME))
    assert (
        STEPS in plain
        and STEPS not in mounted
        and STEPS.replace("lane-2", "LANE") in (git_skill.BODY)
    )
    assert f"Follow the {git_skill.NAME} skill" in mounted
    for fact in (
        f"`fc-pr` is `{shlex.join([sys.executable, '-I', '-m', 'flamechase'])} pr`",
        "your branches are lane-2/NAME",
        "`python3 score.py` (score, minimize)",
        "PRs may change: src/**.",
        "The evaluator is frozen: its files (score.py)",
        "score = 50 (0 merge(s) so far)",
        '"id": "PR000001"',
        "/run/lanes/lane-2/workspace",
        "/io/checkpoint.json",
        "/io/report.json",
        "Lower the score.",
    ):
        assert fact in mounted, fact


def test_the_skill_is_true_of_the_variant_its_lanes_publish_no_artifact_packages() -> None:
    d = Driver()
    d.set_up(main_score=50)
    lanes = [t for t in starts(d.decide()) if t.lane]
    assert lanes and not any(t.artifacts for t in lanes)  # what the skill tells them
    assert all(t.requests and f"system:{t.lane}" in t.inbox_from for t in lanes)
    words = " ".join(git_skill.BODY.split())
    assert "There are no artifact packages in this variant: declare none" in words
    assert "system reports (source `system:LANE`)" in words
    assert "deliverable_ready" not in words  # a git_pr lane's deliverables are its PRs
    for part in ("## Actor", "## Where you write", "## Report", "## Checkpoint", "## Resume"):
        assert part in git_skill.BODY


def test_the_coordinators_prompt_refers_to_the_skill_and_keeps_its_own_task() -> None:
    d = Driver(lanes=3)
    turn = StartTurn(
        role="coordinator", lane=None, number=1, place="planning/1", result=ResultSpec(PlanResult)
    )
    mounted = FLOW.prompt(d.state, dataclasses.replace(context(turn), skill=git_skill.NAME))
    assert f"The lanes follow the {git_skill.NAME} skill" in mounted
    for own in ("planning coordinator", "exactly 3 materially different", "Plan only"):
        assert own in mounted
    assert f"The lanes follow the {git_skill.NAME}" not in FLOW.prompt(d.state, context(turn))
