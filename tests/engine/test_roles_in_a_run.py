"""A flow's role defaults reach a real run: `flamechase exec` with a flow from a path whose
`author` role declares a default effort runs the (fake) claude CLI at that effort, records the
defaulted spec in the run, and leaves a role without defaults as it was given."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.agents.fakes import install_fakes, path_with
from tests.helpers import cli, events, status

FLOW = """
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from flamechase.flow import (AgentDefaults, Command, Event, FinishRun, Flow, FlowParams, Role,
                             RunSetup, StartTurn, TurnContext, events)

ORDER = ("author", "checker")


class Done(BaseModel):
    model_config = ConfigDict(frozen=True)
    done: int = 0


class Pair(Flow[Done]):
    name = "pair"
    summary = "An author, then a checker, one turn each."
    State = Done

    def roles(self, params: FlowParams) -> list[str]:
        return list(ORDER)

    def describe_roles(self, params: FlowParams) -> list[Role]:
        return [Role("author", "writes", AgentDefaults(effort="high")),
                Role("checker", "checks")]

    def start(self, setup: RunSetup) -> Done:
        return Done()

    def evolve(self, state: Done, event: Event) -> Done:
        if isinstance(event, events.TurnValid):
            return Done(done=state.done + 1)
        return state

    def decide(self, state: Done, now: float) -> Sequence[Command]:
        if state.done >= len(ORDER):
            return [FinishRun("finished", "both took their turn")]
        return [StartTurn(role=ORDER[state.done], lane=None, number=1)]

    def prompt(self, state: Done, ctx: TurnContext) -> str:
        return f"work, then report to {ctx.report_path}"


FLOW = Pair()
"""


def test_a_roles_default_effort_reaches_its_cli_and_the_runs_record(tmp_path: Path) -> None:
    (tmp_path / "pair.py").write_text(FLOW)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("sample\n")
    log = tmp_path / "claude.log"
    bin_dir = install_fakes(tmp_path / "bin")
    env = {
        "PATH": path_with(bin_dir),
        "FAKE_STATE_DIR": str(tmp_path / "fake-state"),
        "FAKE_CLAUDE_LOG": str(log),
        "FAKE_CLAUDE_SCENARIO": "success",
    }
    env.update({k: "" for k in os.environ if k.startswith("FAKE_") and k not in env})
    # sandbox=off: the fake keeps its log and sessions outside the turn's own place.
    proc = cli(
        "exec",
        "-f",
        str(tmp_path / "pair.py"),
        "-a",
        "author=claude/claude-opus-4-5",
        "-a",
        "checker=claude/claude-opus-4-5",
        "-p",
        "budget.turns=2,sandbox=off",
        "write the notes",
        cwd=ws,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert status(ws)["status"] == "finished"
    created = next(e["payload"] for e in events(ws) if e["kind"] == "run_created")
    assert created["agents"] == {
        "author": "claude/claude-opus-4-5:high",
        "checker": "claude/claude-opus-4-5",
    }
    argvs = [
        json.loads(line)["argv"]
        for line in log.read_text().splitlines()
        if "argv" in json.loads(line)
    ]
    assert len(argvs) == 2  # one session per turn: the author's, then the checker's
    efforts = [a[a.index("--effort") + 1] if "--effort" in a else None for a in argvs]
    assert efforts == ["high", None]


def test_a_flow_asking_for_a_goal_is_refused_before_the_run_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "goal.py").write_text(
        FLOW.replace('AgentDefaults(effort="high")', "AgentDefaults(goals=True)")
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = cli(
        "exec",
        "-f",
        str(tmp_path / "goal.py"),
        "-a",
        "author=claude/claude-opus-4-5",
        "-a",
        "checker=claude/claude-opus-4-5",
        "-p",
        "budget.turns=2,sandbox=off",
        "write the notes",
        cwd=ws,
        env={"PATH": path_with(install_fakes(tmp_path / "bin"))},
    )
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert "asks for author to run as a goal" in line
    assert cli("status", "last", "--json", cwd=ws).returncode != 0  # no run was made
