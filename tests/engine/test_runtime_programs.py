"""Programs the runtime runs that an agent's files could subvert: an unjailed `Run` of Python
must be isolated and gets no `PYTHON*` variables. Real processes, through the CLI."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from tests.helpers import actor, cli

FLOW = """
import json, sys
from pydantic import BaseModel, ConfigDict
from flamechase.flow import FinishRun, Flow, Run, events, runtime_python


class S(BaseModel):
    model_config = ConfigDict(frozen=True)
    case: str = ""
    places: dict[str, str] = {}
    ran: dict[str, dict] = {}


class Programs(Flow[S]):
    name = "programs"
    summary = "the runtime runs programs of its own"
    State = S

    def roles(self, params): return ["agent"]
    def start(self, setup): return S(case=setup.objective)

    def evolve(self, state, event):
        if isinstance(event, events.PlaceMade):
            return state.model_copy(update={"places": {**state.places, event.place: event.path}})
        if isinstance(event, events.Ran):
            return state.model_copy(update={"ran": {**state.ran, event.key: event.receipt}})
        return state

    def decide(self, state, now):
        if state.case == "unisolated":
            return [Run(key="x", place="source", jailed=False,
                        argv=(sys.executable, "-m", "json.tool", "--help"))]
        if state.case == "env":
            if "env" in state.ran:
                return [FinishRun("finished", state.ran["env"]["output"].strip())]
            code = "import os; print(os.environ.get('PYTHONPATH'), os.environ.get('PYTHONSTARTUP'))"
            return [Run(key="env", place="source", jailed=False,
                        env={"PYTHONPATH": "/planted", "PYTHONSTARTUP": "/planted/s.py"},
                        argv=(*runtime_python(), "-c", code))]
        return [FinishRun("finished", "done")]

    def prompt(self, state, ctx): return ""


FLOW = Programs()
"""


def _run(tmp: Path, case: str, sandbox: str = "auto") -> tuple[Any, Path]:
    flow = tmp / "programs.py"
    flow.write_text(textwrap.dedent(FLOW))
    ws = tmp / "ws"
    ws.mkdir()
    agent = actor(tmp, "agent.sh", "exit 0\n")
    args = ("-f", str(flow), "-a", f"exec:{agent}", "-p", f"sandbox={sandbox}", case)
    proc = cli("exec", *args, cwd=ws, timeout=120)
    return proc, ws


def test_an_unjailed_run_of_python_that_is_not_isolated_is_refused(
    tmp_path: Path, state_home: Path
) -> None:
    proc, _ = _run(tmp_path, "unisolated")
    assert proc.returncode == 1
    assert "runs Python unjailed without isolation" in proc.stderr
    assert "flamechase.flow.runtime_module" in proc.stderr


def test_an_unjailed_run_gets_no_python_variables_even_from_its_flow(
    tmp_path: Path, state_home: Path
) -> None:
    proc, _ = _run(tmp_path, "env")
    assert proc.returncode == 0, proc.stderr
    assert "finished: None None" in proc.stderr, proc.stderr
