"""Programs the runtime runs that an agent's files could subvert: a yardstick (`Run.frozen`)
runs the bytes that were hashed, in a copy nothing else writes, and nothing it writes reaches
its place; an unjailed `Run` of Python must be isolated and gets no `PYTHON*` variables.
Real processes, real jails, through the CLI."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import actor, cli, events
from tests.jail.conftest import MODES

FLOW = """
import json, sys
from pydantic import BaseModel, ConfigDict
from flamechase.flow import FinishRun, Flow, MakePlace, Run, events, runtime_python


class S(BaseModel):
    model_config = ConfigDict(frozen=True)
    case: str = ""
    places: dict[str, str] = {}
    ran: dict[str, dict] = {}


class Programs(Flow[S]):
    name = "programs"
    summary = "hash a gate, then run it as a yardstick"
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
        if "tree" not in state.places:
            return [MakePlace("tree")]
        if "hash" not in state.ran:
            return [Run(key="hash", place="tree", argv=("sha256sum", "gate.sh", "gates/check.sh"))]
        frozen = {n: h for h, n in (ln.split() for ln in state.ran["hash"]["output"].splitlines())}
        if state.case == "tampered":
            frozen["gates/check.sh"] = "0" * 64
        if "gate" not in state.ran:
            return [Run(key="gate", place="tree", argv=("/bin/sh", "gate.sh"), frozen=frozen)]
        return [FinishRun("finished", "done")]

    def prompt(self, state, ctx): return ""


FLOW = Programs()
"""

# The gate runs the builders' code (solver.sh), then the rest of itself (gates/check.sh):
# the builders' code tries to swap that part between the hash and its use, by rewriting it
# and by moving its directory aside.
GATE = "sh ./solver.sh\nsh ./gates/check.sh\n"
CHECK = "echo 'gate: honest FAIL'\n"
SOLVER = """\
printf "echo 'gate: FAKE PASS'\\n" > gates/check.sh
mv gates gates.old && mkdir gates && printf "echo 'gate: FAKE PASS'\\n" > gates/check.sh
echo solver-ran > written.txt
echo "solver ran in $PWD"
"""


def _run(tmp: Path, case: str, sandbox: str = "auto") -> tuple[Any, Path]:
    flow = tmp / "programs.py"
    flow.write_text(textwrap.dedent(FLOW))
    ws = tmp / "ws"
    (ws / "gates").mkdir(parents=True)
    (ws / "gate.sh").write_text(GATE)
    (ws / "gates" / "check.sh").write_text(CHECK)
    (ws / "solver.sh").write_text(SOLVER)
    agent = actor(tmp, "agent.sh", "exit 0\n")
    args = ("-f", str(flow), "-a", f"exec:{agent}", "-p", f"sandbox={sandbox}", case)
    proc = cli("exec", *args, cwd=ws, timeout=120)
    return proc, ws


def _ran(ws: Path) -> dict[str, dict[str, Any]]:
    return {e["payload"]["key"]: e["payload"]["receipt"] for e in events(ws) if e["kind"] == "ran"}


@pytest.mark.parametrize("sandbox", [*MODES, "off"])
def test_a_yardstick_runs_the_hashed_bytes_in_a_copy_its_writes_never_leave(
    tmp_path: Path, state_home: Path, sandbox: str
) -> None:
    proc, ws = _run(tmp_path, "honest", sandbox)
    assert proc.returncode == 0, proc.stderr
    ran = _ran(ws)
    gate = ran["gate"]
    if sandbox == "off":  # no jail keeps the frozen files read-only: the swap works
        assert "gate: FAKE PASS" in gate["output"], gate
    else:  # the rewrite and the move failed: the gate that ran is the one that was hashed
        assert "gate: honest FAIL" in gate["output"] and "FAKE" not in gate["output"], gate
    hashes = {n: h for h, n in (ln.split() for ln in ran["hash"]["output"].splitlines())}
    assert gate["frozen"] == hashes and set(hashes) == {"gate.sh", "gates/check.sh"}
    copy = Path(gate["cwd"])
    assert f"solver ran in {copy}" in gate["output"]
    assert copy.parts[-3] == "yardsticks" and not copy.exists()  # removed when it ended
    made = [e["payload"] for e in events(ws) if e["kind"] == "place_made"]
    tree = Path(next(p["path"] for p in made if p["place"] == "tree"))
    # Whatever it wrote stayed in its copy, jail or not.
    assert sorted(p.name for p in tree.iterdir()) == ["gate.sh", "gates", "solver.sh"]
    assert (tree / "gates" / "check.sh").read_text() == CHECK


def test_a_yardstick_whose_frozen_file_differs_never_starts(
    tmp_path: Path, state_home: Path
) -> None:
    proc, ws = _run(tmp_path, "tampered")
    assert proc.returncode == 0, proc.stderr
    gate = _ran(ws)["gate"]
    assert gate["exit_code"] is None and gate["output"] == ""
    assert gate["error"].startswith("the frozen file gates/check.sh does not match its frozen hash")
    assert "did not run" in gate["error"]


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
