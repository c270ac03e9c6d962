"""docs/writing-a-flow.md's second example, a tournament: run through `flamechase.testing`
(scripted turns, real measurements) and through `flamechase exec` with `exec:` actors.

Three solvers each write a solution in their own copy; solver 3 also rewrites the evaluator
to print a perfect score. The judge picks solver 1. The runtime measures every solution
itself, in a fresh copy of the baseline with the frozen evaluator put back, so solver 3 is
caught and out, solver 1's pick is overruled, and solver 2 (measured best) is laid over the
user's tree, never the rewritten evaluator.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flamechase import events
from flamechase.engine.executor import TurnJob
from flamechase.loader import load_flow
from flamechase.testing import FakeClock, FakeTurn, ScriptedExecutor, run_engine, run_for_real
from tests.helpers import actor, cli, status

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "tournament_flow.py"
SCORE_PY = "print('SCORE:', open('solution.txt').read().strip())\n"
QUALITY = {"solver_1": "0.5", "solver_2": "0.9", "solver_3": "0.7"}
CHEAT = "print('SCORE: 99')\n"
SETTINGS = {"evaluator": "python3 score.py", "budget.turns": "10"}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    tree = tmp_path / "ws"
    tree.mkdir()
    (tree / "score.py").write_text(SCORE_PY)
    (tree / "solution.txt").write_text("0.1\n")
    return tree


def _turn(job: TurnJob) -> FakeTurn:
    role, here = job.request.role, job.request.workspace
    if role == "judge":
        return FakeTurn(report={"pick": "solver-1", "summary": "the clearest code"})
    (here / "solution.txt").write_text(QUALITY[role] + "\n")
    if role == "solver_3":
        (here / "score.py").write_text(CHEAT)
    return FakeTurn(report={"summary": f"wrote {QUALITY[role]}", "claim": 1.0})


def test_the_runtime_overrules_a_pick_it_did_not_measure_best(ws: Path) -> None:
    clock = FakeClock()
    executor = ScriptedExecutor(clock, _turn, measure=run_for_real)
    run = run_engine(str(EXAMPLE), ws, executor=executor, clock=clock, settings=SETTINGS)
    assert run.status == "finished", run.message
    assert run.message.startswith("solver-2 won (1 file(s) laid over your tree)")
    record = run.record()
    flow = load_flow(str(EXAMPLE))
    ruled_kind = sys.modules[type(flow).__module__].Ruled
    [ruled] = record.of(ruled_kind)
    assert (ruled.lane, ruled.pick, ruled.upheld) == ("solver-2", "solver-1", False)
    scores = {k: m.value for k, m in record.measurements.items() if k.startswith("score:")}
    assert scores == {"score:solver-1": 0.5, "score:solver-2": 0.9}
    state = record.state_as(flow)
    assert state.candidates["solver-3"].out == "changed the evaluator's score.py"
    # The winner's solution reached the tree; the rewritten evaluator did not.
    assert (ws / "solution.txt").read_text() == "0.9\n"
    assert (ws / "score.py").read_text() == SCORE_PY
    # The measuring copies were dropped once measured; the judge's turn was not counted.
    assert {e.place for e in record.of(events.PlaceDropped)} == {
        "measure/solver-1",
        "measure/solver-2",
        "measure/solver-3",
    }
    [judge] = [t for t in record.turns if t.role == "judge"]
    assert (judge.lane, judge.counted) == (None, False)
    assert record.summary["winner"] == "solver-2"
    assert "solver-3: changed the evaluator's score.py" in record.summary["display"]


SOLVER = """
    case "$FLAMECHASE_ROLE" in
      solver_1) q=0.5 ;;
      solver_2) q=0.9 ;;
      *) q=0.7; echo "print('SCORE: 99')" > score.py ;;
    esac
    echo "$q" > solution.txt
    echo "{\\"summary\\": \\"wrote $q\\", \\"claim\\": 1.0}" > "$FLAMECHASE_REPORT"
"""
# The judge reads the copies it was given (read-only) before it picks.
JUDGE = """
    for dir in $(echo "$TOURNAMENT_COPIES" | tr -d '{}",' | tr ' ' '\\n' | grep /); do
      cat "$dir/solution.txt" >> seen.txt
    done
    echo '{"pick": "solver-1", "summary": "the clearest code"}' > "$FLAMECHASE_REPORT"
"""


def test_the_tournament_runs_through_exec(ws: Path, tmp_path: Path, state_home: Path) -> None:
    solver = actor(tmp_path, "solver.sh", SOLVER)
    judge = actor(tmp_path, "judge.sh", JUDGE)
    proc = cli(
        "exec",
        "-f",
        str(EXAMPLE),
        *("-a", f"solver_1=exec:{solver},solver_2=exec:{solver},solver_3=exec:{solver}"),
        *("-a", f"judge=exec:{judge}"),
        *("-p", "evaluator=python3 score.py,budget.turns=10,rest_seconds=0.05"),
        "Make the solution better",
        cwd=ws,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    said = proc.stdout + proc.stderr
    assert "The judge picks solver-1, but the runtime measured solver-2 best" in said, said
    assert "solver-2 won (1 file(s) laid over your tree)" in said
    assert (ws / "solution.txt").read_text() == "0.9\n"
    assert (ws / "score.py").read_text() == SCORE_PY
    st = status(ws)
    assert st["winner"] == "solver-2" and st["flow_source"] == f"path:{EXAMPLE}"
    assert {ln["lane"]: ln["score"] for ln in st["lanes"]} == {
        "solver-1": 0.5,
        "solver-2": 0.9,
        "solver-3": None,
    }
    shown = cli("status", cwd=ws, check=True).stdout
    assert "  winner: solver-2 (the judge picked solver-1)" in shown
    # A tool in another process reads the run back, the flow's own kinds as its classes.
    read = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from flamechase.record import read_run; r = read_run(sys.argv[1]); "
            "print([type(e).__name__ for e in r.events if e.row()['kind'] == 'tournament_ruled'])",
            str(state_home / "runs" / st["id"]),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert read.stdout.strip() == "['Ruled']"


def test_flows_show_says_the_evaluator_is_required() -> None:
    from flamechase.cli.flows import describe

    lines = describe(load_flow(str(EXAMPLE)), f"path:{EXAMPLE}")
    assert "  evaluator (required; str; length >= 1): prints the score; run by the runtime" in lines
    assert lines[lines.index("roles (-a, in order):") + 4] == (
        "  judge: reads every solution and picks one (checked against the scores)"
    )
