"""parrallello on the real CLIs, through the scripted model server: the builder's session
carries the skill `parrallello-builder` and the critic's `parrallello-critic` (each where its
CLI loads one), each prompt names its skill instead of listing the rules, and the critic, given
no effort, runs at the document's "effort: high" where its CLI has efforts. The account's
weekly share a real CLI reports (codex, from its provider's rate-limit headers) holds the run
after its block, as the seed's wait mode until the reset."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from flamechase.flows.parrallello import briefs, skills
from tests.flows.parrallello.scripted import repo
from tests.realcli.clis import SPECS, require
from tests.realcli.conftest import Flamechase
from tests.realcli.helpers import transcript, turns
from tests.realcli.script import Conversation, Say, Step, WriteFile
from tests.realcli.server import ModelServer

pytestmark = [pytest.mark.realcli, pytest.mark.timeout(300)]

BUILDER = "You are a fresh builder on front"
CRITIC = "You are a fresh adversarial critic of front"
SPEC = {"claude": "claude/claude-opus-4-5"}


def answer(result: dict[str, object]) -> Callable[[Conversation], Step]:
    """Write `result` as the turn's report, then say so."""

    def plan(conv: Conversation) -> Step:
        path = conv.report_path()
        if conv.tool_results or path is None:
            return Say("Written.")
        return WriteFile(path, json.dumps(result))

    return plan


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini", "opencode"])
def test_the_builder_and_the_critic_carry_their_skills_and_the_critic_runs_at_effort_high(
    cli: str, flamechase: Flamechase, server: ModelServer, state_home: Path, tmp_path: Path
) -> None:
    require(cli)
    ws = repo(tmp_path / "project", {"P": {}}, blocks=1, rounds_per_block=1)
    server.script.plan(BUILDER, answer({"tickets": [], "handoff": "looked; changed nothing"}))
    server.script.plan(CRITIC, answer({"findings": [], "approve": False, "summary": "not yet"}))
    run = Flamechase(flamechase.env, ws)
    done = run(
        "exec",
        "-f",
        "parrallello",
        "-a",
        f"builder={SPEC.get(cli, SPECS[cli])},critic={SPEC.get(cli, SPECS[cli])}",
        "-p",
        "plan=PLAN.yaml,prep=false,checkpoint=off,rest_seconds=0.05,budget.turns=4",
        "raise every VALUE",
        timeout=360,
    )
    assert done.returncode == 1, done.stderr[-3000:]  # the gate fails: not approved
    rows = turns(state_home)
    assert [r["role"] for r in rows] == ["builder", "critic"]
    assert all(r["status"] == "valid" for r in rows), [r["error"] for r in rows]
    for opening, skill, other in (
        (BUILDER, skills.BUILDER, skills.CRITIC),
        (CRITIC, skills.CRITIC, skills.BUILDER),
    ):
        convs = [e.conversation for e in server.exchanges(main=True, match=opening)]
        assert convs
        for conv in convs:
            assert conv is not None
            carried = skill.name if cli == "claude" else f"# Skill: {skill.name}"
            assert carried in conv.raw and other.name not in conv.raw
            prompt = conv.text[conv.text.index(opening) :]  # (gemini sends GEMINI.md ahead)
            assert f"follow the {skill.name} skill" in prompt
            assert briefs.RULES[0] not in prompt and briefs.CRITIC_RULES[0] not in prompt
    # The critic's effort, given none: the argv its CLI got, and the request its model got.
    argv = {r["role"]: started_argv(Path(r["io_dir"])) for r in rows}
    flag = {"claude": "--effort", "opencode": "--variant"}.get(cli)
    if flag is not None:
        assert argv["critic"][argv["critic"].index(flag) + 1] == "high"
        assert flag not in argv["builder"]
    else:  # codex takes it in its protocol; gemini has no effort setting
        assert "--effort" not in argv["critic"] and "--variant" not in argv["critic"]
    sent = {
        role: [
            json.loads(e.conversation.raw)
            for e in server.exchanges(main=True, match=opening)
            if e.conversation is not None
        ]
        for role, opening in (("builder", BUILDER), ("critic", CRITIC))
    }
    if cli == "codex":
        assert all(b["reasoning"].get("effort") == "high" for b in sent["critic"])
        assert all("effort" not in b["reasoning"] for b in sent["builder"])
    if cli == "claude":
        assert all(b["output_config"]["effort"] == "high" for b in sent["critic"])


def started_argv(io_dir: Path) -> list[str]:
    """The command line the runtime started the turn's CLI with (its transcript's first line),
    after the jail's own words."""
    first = transcript(io_dir / "transcript.jsonl.gz")[0]
    argv: list[str] = first["argv"]
    return argv[argv.index("--") + 1 :] if "--" in argv else argv


def test_the_weekly_share_codex_reports_holds_the_run_after_its_block_until_the_same_command(
    flamechase: Flamechase, server: ModelServer, state_home: Path, tmp_path: Path
) -> None:
    require("codex")
    ws = repo(tmp_path / "project", {"P": {}}, blocks=2, rounds_per_block=1)
    server.script.plan(BUILDER, answer({"tickets": [], "handoff": "looked; changed nothing"}))
    server.script.plan(CRITIC, answer({"findings": [], "approve": False, "summary": "not yet"}))
    # The provider's rate-limit headers on the critic's answers: the account's week at 93 %
    # (codex reports them as account/rateLimits/updated; no -p usage_probe is given).
    server.script.headers(
        CRITIC,
        {
            "x-codex-primary-used-percent": "93",
            "x-codex-primary-window-minutes": "10080",
            "x-codex-secondary-used-percent": "20",
            "x-codex-secondary-window-minutes": "300",
        },
    )
    run = Flamechase(flamechase.env, ws)
    args = (
        "exec",
        "-f",
        "parrallello",
        "-a",
        f"builder={SPECS['codex']},critic={SPECS['codex']}",
        "-p",
        "plan=PLAN.yaml,prep=false,checkpoint=off,rest_seconds=0.05,budget.turns=8",
        "raise every VALUE",
    )
    held = run(*args, timeout=360)
    assert held.returncode == 3, held.stderr[-3000:]  # wait mode until the reset: held
    said = "weekly usage at 93% (≥ 92%, from codex at a critic turn): no new block starts"
    assert f"Front P waits after block 1: {said}" in held.stdout
    assert f"held: {said}; front P waits" in held.stderr
    assert f"usage: {said}" in run("status", "last").stdout
    # After the reset (the week at 10 %), the same command goes on with block 2.
    server.script.headers(CRITIC, {"x-codex-primary-used-percent": "10"})
    again = run(*args, timeout=360)
    assert again.returncode == 1, again.stderr[-3000:]  # the gate still fails: not approved
    started = [e["payload"]["round"] for e in run.events("round_started")]
    assert started == [1, 2]
