"""The lane protocol as a skill, through the scripted model server: a lane session of
parallel_flame_chase on Claude Code carries the `parallel-flame-chase` skill (a plugin of the
session, listed to the model), on Codex its text as the thread's developer instructions; the
prompt then refers to the skill instead of repeating the protocol. Gemini has no mechanism
here, and its prompt keeps the protocol's text. The CLI's own state home holds no trace of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from flamechase.flows.parallel_flame_chase import skill
from tests.realcli.clis import SPECS, require
from tests.realcli.conftest import Flamechase
from tests.realcli.helpers import turns
from tests.realcli.server import ModelServer

pytestmark = [pytest.mark.realcli, pytest.mark.timeout(300)]

# Words of the protocol only the prompt without a skill carries.
PROTOCOL_IN_PROMPT = "Status: progress = work landed"
# What the model is given of the skill: Claude Code lists its name and description; Codex
# gets the whole text.
CARRIED = {
    "claude": (skill.NAME, "The parallel flame chase lane protocol: how an actor works"),
    "codex": (f"# Skill: {skill.NAME}", "## Checkpoint", "deliverable_ready"),
}
STATE = {"claude": ".claude", "codex": ".codex", "gemini": ".gemini"}


def one_lane(flamechase: Flamechase, spec: str) -> None:
    agents = f"coordinator={spec},lane_1_actor_a={spec},lane_1_actor_b={spec}"
    done = flamechase(
        "exec",
        "-f",
        "parallel_flame_chase",
        "-a",
        agents,
        "-p",
        "lanes=1,budget.turns=2,rest_seconds=0.05",
        "improve the sample",
        timeout=360,
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini"])
def test_a_lane_session_carries_the_skill_where_its_cli_loads_one(
    cli: str, flamechase: Flamechase, server: ModelServer, state_home: Path
) -> None:
    require(cli)
    one_lane(flamechase, SPECS[cli])
    rows = [r for r in turns(state_home) if r["lane"] == "lane-1"]
    assert rows and all(r["status"] == "valid" for r in rows), [r["error"] for r in rows]
    lane = [
        e.conversation
        for e in server.exchanges(main=True)
        if e.conversation and "You are lane_1_actor" in e.conversation.text
    ]
    assert lane
    for conv in lane:
        if cli in CARRIED:
            for words in CARRIED[cli]:
                assert words in conv.raw, words
            assert f"Follow the {skill.NAME} skill" in conv.text
            assert PROTOCOL_IN_PROMPT not in conv.text
        else:
            assert PROTOCOL_IN_PROMPT in conv.text
            assert f"Follow the {skill.NAME} skill" not in conv.text
    # Mounted for the session only: nothing of it in the CLI's own home.
    home = Path(flamechase.env["HOME"]) / STATE[cli]
    found = [p for p in home.rglob("*") if skill.NAME in p.name] if home.exists() else []
    assert found == []
    # The coordinator plans with its own words, and no skill.
    planning = [
        e.conversation
        for e in server.exchanges(main=True)
        if e.conversation and "You are lane_1_actor" not in e.conversation.text
    ]
    assert planning and all(skill.NAME not in c.raw for c in planning)


@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_flame_chase_turns_carry_the_flame_chase_skill(
    cli: str, flamechase: Flamechase, server: ModelServer
) -> None:
    from flamechase.flows.flame_chase import skill as chase

    require(cli)
    done = flamechase(
        "exec",
        "-f",
        "flame_chase",
        "-a",
        f"first_chaser={SPECS[cli]},second_chaser={SPECS[cli]}",
        "-p",
        "budget.turns=2,rest_seconds=0.05",
        "improve the sample",
        timeout=360,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    chases = [
        e.conversation
        for e in server.exchanges(main=True)
        if e.conversation and "of a flame chase" in e.conversation.text
    ]
    assert chases
    carried = chase.NAME if cli == "claude" else f"# Skill: {chase.NAME}"
    for conv in chases:
        assert carried in conv.raw
        assert f"Follow the {chase.NAME} skill" in conv.text
        assert "nothing of this conversation reaches the next turn" not in conv.text
