"""The lane protocol as a skill, through the scripted model server: a lane session (lane 1's
and a private copy's) of parallel_flame_chase carries the `parallel-flame-chase` skill where its
CLI loads one: Claude Code a plugin of the session (listed to the model), Codex the thread's
developer instructions, Gemini CLI a GEMINI.md of the turn's own, opencode an instructions file
of the turn's own; the prompt then refers to the skill instead of repeating the protocol. The
CLI's own state home holds no trace of it, and the user's own instruction files still apply."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flamechase.flows.parallel_flame_chase import skill
from tests.realcli.clis import SPECS, require
from tests.realcli.conftest import Flamechase
from tests.realcli.helpers import turns
from tests.realcli.script import Conversation
from tests.realcli.server import ModelServer

pytestmark = [pytest.mark.realcli, pytest.mark.timeout(300)]

# Words of the protocol only the prompt without a skill carries.
PROTOCOL_IN_PROMPT = "Status: progress = work landed"
# What the model is given of the skill: Claude Code lists its name and description; Codex,
# Gemini CLI and opencode get the whole text.
CARRIED = {
    "claude": (skill.NAME, "The parallel flame chase lane protocol: how an actor works"),
    "codex": (f"# Skill: {skill.NAME}", "## Checkpoint", "deliverable_ready"),
    "gemini": (f"# Skill: {skill.NAME}", "## Checkpoint", "deliverable_ready"),
    "opencode": (f"# Skill: {skill.NAME}", "## Checkpoint", "deliverable_ready"),
}
STATE = {
    "claude": (".claude",),
    "codex": (".codex",),
    "gemini": (".gemini",),
    "opencode": (".config/opencode", ".local/share/opencode"),
}


def two_lanes(flamechase: Flamechase, spec: str) -> None:
    roles = ("coordinator", "lane_1_actor_a", "lane_1_actor_b", "lane_2_actor_a", "lane_2_actor_b")
    done = flamechase(
        "exec",
        "-f",
        "parallel_flame_chase",
        "-a",
        ",".join(f"{role}={spec}" for role in roles),
        "-p",
        "lanes=2,budget.turns=3,rest_seconds=0.05",
        "improve the sample",
        timeout=360,
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini", "opencode"])
def test_a_lane_session_carries_the_skill_where_its_cli_loads_one(
    cli: str, flamechase: Flamechase, server: ModelServer, state_home: Path
) -> None:
    require(cli)
    two_lanes(flamechase, SPECS[cli])
    rows = [r for r in turns(state_home) if r["lane"] in ("lane-1", "lane-2")]
    assert {r["lane"] for r in rows} == {"lane-1", "lane-2"}
    assert all(r["status"] == "valid" for r in rows), [r["error"] for r in rows]
    lanes = [
        e.conversation
        for e in server.exchanges(main=True)
        if e.conversation and re.search(r"You are lane_\d_actor", e.conversation.text)
    ]
    # Lane 1 (your tree) and lane 2 (a private copy) alike.
    assert {re.search(r"You are lane_(\d)_actor", c.text)[1] for c in lanes} == {"1", "2"}  # type: ignore[index]
    for conv in lanes:
        for words in CARRIED[cli]:
            assert words in conv.raw, words
        assert f"Follow the {skill.NAME} skill" in conv.text
        assert PROTOCOL_IN_PROMPT not in conv.text
    # Mounted for the session only: nothing of it in the CLI's own home.
    for state in STATE[cli]:
        home = Path(flamechase.env["HOME"]) / state
        found = [p for p in home.rglob("*") if skill.NAME in p.name] if home.exists() else []
        assert found == []
    # The coordinator plans with its own words, and no skill.
    planning = [
        e.conversation
        for e in server.exchanges(main=True)
        if e.conversation and not re.search(r"You are lane_\d_actor", e.conversation.text)
    ]
    assert planning and all(skill.NAME not in c.raw for c in planning)


# The user's own instruction file of each CLI, which a mounted skill must leave in force.
USER_RULES = "Users own rule: answer in plain words."


def users_own_instructions(cli: str, home: Path) -> list[Path]:
    """Write the user's own instruction files of `cli` under `home`; the files written."""
    if cli == "opencode":
        config = home / ".config/opencode/opencode.json"
        config.write_text(
            json.dumps({**json.loads(config.read_text()), "instructions": ["~/my-rules.md"]})
        )
        (home / "my-rules.md").write_text(USER_RULES + "\n")
        return [config, home / "my-rules.md"]
    if cli == "gemini":
        # A context file of another name: the mounted GEMINI.md must load all the same.
        settings = home / ".gemini/settings.json"
        data = json.loads(settings.read_text())
        settings.write_text(json.dumps({**data, "context": {"fileName": "RULES.md"}}))
        (home / ".gemini/RULES.md").write_text(USER_RULES + "\n")
        return [home / ".gemini/RULES.md"]
    name = {"claude": ".claude/CLAUDE.md", "codex": ".codex/AGENTS.md"}
    path = home / name[cli]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(USER_RULES + "\n")
    return [path]


def turn_prompt(conv: Conversation) -> str:
    """The flame chase turn's own prompt (Gemini CLI sends its context files ahead of it)."""
    found = re.search(r"You are \w+_chaser, taking turn", conv.text)
    assert found, conv.text[:2000]
    return conv.text[found.start() :]


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini", "opencode"])
def test_flame_chase_turns_carry_the_flame_chase_skill_and_the_users_own_rules(
    cli: str, flamechase: Flamechase, server: ModelServer
) -> None:
    from flamechase.flows.flame_chase import skill as chase

    require(cli)
    home = Path(flamechase.env["HOME"])
    before = {p: p.read_bytes() for p in users_own_instructions(cli, home)}
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
        assert USER_RULES in conv.raw  # the user's own rules still apply
        prompt = turn_prompt(conv)
        assert f"Follow the {chase.NAME} skill" in prompt
        assert "nothing of this conversation reaches the next turn" not in prompt
    # The user's own files are as they were.
    assert {p: p.read_bytes() for p in before} == before
