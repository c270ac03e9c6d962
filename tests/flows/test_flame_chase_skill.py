"""flame_chase's skill, `flame-chase`: the chasers' protocol, mounted on both chasers' turns
where the CLI loads skills; the prompt then names it and keeps only the turn's facts."""

from __future__ import annotations

import dataclasses
import gzip
from pathlib import Path

from flamechase.engine.flowcode import FlowCode
from flamechase.flow import FlowParams, RunSetup, StartTurn, TurnContext
from flamechase.flows.flame_chase import FLOW
from flamechase.flows.flame_chase import skill as chase_skill
from tests.helpers import REPORT_OK, actor, cli


def test_both_chasers_bring_the_protocol() -> None:
    code = FlowCode(FLOW)  # the engine's own check of what skill() returns
    try:
        found = [code.skill(role) for role in ("first_chaser", "second_chaser")]
    finally:
        code.close()
    assert found == [chase_skill.SKILL, chase_skill.SKILL]
    for part in ("## Actors", "## A turn", "## Report", "fresh session"):
        assert part in chase_skill.BODY


def test_the_prompt_names_a_mounted_skill_instead_of_repeating_the_protocol(
    tmp_path: Path,
) -> None:
    params = FlowParams()
    state = FLOW.start(
        RunSetup(run_id="r1", objective="o", params=params, lanes=FLOW.lanes(params))
    )
    turn = StartTurn(role="first_chaser", lane="lane-1", number=3)
    ctx = TurnContext(
        run_id="r1",
        flow="flame_chase",
        objective="make the parser fast",
        turn=turn,
        attempt=1,
        workspace=tmp_path,
        io_dir=tmp_path / "io",
        report_path=tmp_path / "io" / "report.json",
        inbox_path=tmp_path / "io" / "inbox.json",
        inbox=(),
        artifact_root=None,
        checkpoint_path=None,
        checkpoint_identity={},
        workspace_map={},
    )
    plain = FLOW.prompt(state, ctx)
    mounted = FLOW.prompt(state, dataclasses.replace(ctx, skill=chase_skill.NAME))
    assert "nothing of this conversation reaches the next turn" in plain
    assert "nothing of this conversation reaches the next turn" not in mounted
    assert "Follow the flame-chase skill" in mounted
    for fact in ("first_chaser", "turn 3", "second_chaser", "make the parser fast"):
        assert fact in mounted
    assert str(ctx.report_path) in mounted and '"status"' in mounted


def test_an_agent_with_no_skill_mechanism_gets_the_protocol_in_its_prompt(
    tmp_path: Path, source_tree: Path, state_home: Path
) -> None:
    # An exec: agent loads no skills: nothing is mounted, and its prompt carries the protocol.
    agent = actor(tmp_path, "agent.sh", REPORT_OK)
    done = cli(
        "exec",
        "-f",
        "flame_chase",
        "-a",
        f"exec:{agent}",
        "-a",
        f"exec:{agent}",
        "-p",
        "budget.turns=1,rest_seconds=0.05",
        "fix it",
        cwd=source_tree,
    )
    assert done.returncode == 0, done.stderr
    (turn,) = (state_home / "runs").glob("*/lanes/*/turns/*")
    prompt = gzip.decompress((turn / "prompt.md.gz").read_bytes()).decode()
    assert "nothing of this conversation reaches the next turn" in prompt
    assert f"Follow the {chase_skill.NAME} skill" not in prompt
    assert not [p for p in turn.rglob("*") if chase_skill.NAME in p.name]
