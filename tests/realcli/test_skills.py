"""The lane protocol as a skill, through the scripted model server: every session of
parallel_flame_chase (lane 1's, a private copy's, the coordinator's) carries the
`parallel-flame-chase` skill where its CLI loads one, and so do git_pr's and the mission
variant's sessions, each their variant's: Claude Code a plugin of the session (listed to the
model), Codex the thread's developer instructions, Gemini CLI a GEMINI.md of the turn's own,
opencode an instructions file of the turn's own; the prompt then refers to the skill instead of
repeating the protocol. The CLI's own state home holds no trace of it, and the user's own
instruction files still apply."""

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
def test_every_session_carries_the_skill_where_its_cli_loads_one(
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
    # The coordinator's session carries the skill too: it plans for lanes that follow it,
    # and its prompt refers to it, its own task (plan only) in its own words.
    planning = [
        e.conversation
        for e in server.exchanges(main=True)
        if e.conversation and "You are the planning coordinator" in e.conversation.text
    ]
    assert planning
    for conv in planning:
        for words in CARRIED[cli]:
            assert words in conv.raw, words
        assert f"The lanes follow the {skill.NAME} skill" in conv.text
        assert "must publish reconstructable artifact packages" not in conv.text


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


def sessions(server: ModelServer, marker: str) -> list[Conversation]:
    return [
        e.conversation
        for e in server.exchanges(main=True)
        if e.conversation and marker in e.conversation.text
    ]


def test_git_pr_lane_and_coordinator_sessions_carry_the_pull_request_protocol(
    flamechase: Flamechase, server: ModelServer, state_home: Path
) -> None:
    from flamechase.flows.git_pr import skill as git_skill

    require("claude")
    (flamechase.cwd / "bench.py").write_text('print("SCORE: 5")\n')
    spec = SPECS["claude"]
    done = flamechase(
        "exec",
        "-f",
        "parallel_flame_chase:git_pr",
        "-a",
        f"coordinator={spec},lane_1_actor_a={spec},lane_1_actor_b={spec}",
        "-p",
        "lanes=1,budget.turns=2,rest_seconds=0.05,evaluator=python3 bench.py",
        "improve the sample",
        timeout=360,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [r for r in turns(state_home) if r["lane"] == "lane-1"]
    assert rows and all(r["status"] == "valid" for r in rows), [r["error"] for r in rows]
    planning = sessions(server, "You are the planning coordinator of a Git/PR")
    lanes = sessions(server, "You are lane_1_actor")
    assert planning and lanes
    for conv in [*planning, *lanes]:
        # Claude Code lists the skill (its name and description) to the model.
        assert git_skill.NAME in conv.raw and "lands work as pull requests" in conv.raw
    for conv in lanes:
        assert f"Follow the {git_skill.NAME} skill" in conv.text
        assert "`fc-pr` is `" in conv.text  # the facts stay: this installation's command
        assert "git checkout -B lane-1/NAME origin/main" not in conv.text  # the steps: skill's
    assert all(f"The lanes follow the {git_skill.NAME} skill" in c.text for c in planning)


def test_mission_lane_and_coordinator_sessions_carry_the_mission_protocol(
    flamechase: Flamechase, server: ModelServer, state_home: Path
) -> None:
    from flamechase.flows.parallel_flame_chase_mission import skill as mission_skill

    require("codex")
    spec = SPECS["codex"]
    done = flamechase(
        "exec",
        "-f",
        "parallel_flame_chase_mission",
        "-a",
        f"coordinator={spec},lane_1_actor_a={spec},lane_1_actor_b={spec}",
        "-p",
        "lanes=1,budget.turns=2,rest_seconds=0.05",
        "improve the sample",
        timeout=360,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [r for r in turns(state_home) if r["lane"] == "lane-1"]
    assert rows and all(r["status"] == "valid" for r in rows), [r["error"] for r in rows]
    planning = sessions(server, "You are the planning coordinator")
    lanes = sessions(server, "You are lane_1_actor")
    assert planning and lanes
    for conv in [*planning, *lanes]:
        # Codex gives the model the whole text as the thread's developer instructions.
        for words in (f"# Skill: {mission_skill.NAME}", "## Missions and the report", "## Audits"):
            assert words in conv.raw, words
    for conv in lanes:
        assert f"the mission's outcome ({mission_skill.NAME} skill)" in conv.text
        assert "The last three end the mission" not in conv.text
    assert all(f"The lanes follow the {mission_skill.NAME} skill" in c.text for c in planning)
