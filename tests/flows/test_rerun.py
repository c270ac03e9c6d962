"""The same command again after a run ended: resumed only when that can do something,
otherwise one line saying what the run ended with and what to type (a failed planning is
never a trap)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.flows.pfc import Team
from tests.helpers import cli, status


@pytest.fixture
def ws(source_tree: Path) -> Path:
    return source_tree


def test_a_failed_planning_is_not_resumed_by_the_same_command(ws: Path, tmp_path: Path) -> None:
    team = Team(tmp_path / "team", planner="sys.exit(3)")
    first = team.run(ws, "budget.turns=2")
    assert first.returncode == 1
    failed = status(ws)["id"]
    # Its end says the way out: what failed, and how to start again once that is fixed.
    end = first.stderr.strip().splitlines()[-1]
    assert end.startswith(f"flamechase: run {failed} failed: planning failed"), end
    assert end.endswith(
        f"; see what failed: flamechase events {failed}; once its cause is fixed, start "
        "afresh with -p resume_mode=fresh"
    ), end
    # The coordinator works now; the same command does not resume the failed run.
    team.set_hook()
    proc = team.run(ws, "budget.turns=2")
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1
    assert f"run {failed} on this task already failed: planning failed" in line
    assert "would end the same way" in line and "-p resume_mode=fresh" in line
    assert status(ws)["id"] == failed
    shown = cli("status", cwd=ws, check=True).stdout
    assert (
        "next: once the cause of its failure is fixed, start afresh with -p resume_mode=fresh"
        in (shown)
    )
    # What it says to type works: a new run, planned by the working coordinator.
    proc = team.run(ws, "budget.turns=2", "resume_mode=fresh")
    assert proc.returncode == 0, proc.stderr
    assert status(ws)["id"] != failed


def test_a_finished_run_resumes_only_with_more_budget(ws: Path, tmp_path: Path) -> None:
    team = Team(tmp_path / "team")
    assert team.run(ws, "budget.turns=2").returncode == 0
    run_id = status(ws)["id"]
    proc = team.run(ws, "budget.turns=2")
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert f"run {run_id} on this task already finished: budget turns is spent" in proc.stderr
    assert "larger -p budget.turns=… (it had 2)" in proc.stderr
    assert status(ws)["budget"]["turns"]["used"] == 2
    assert status(ws)["next"] == (
        "to go on, run it again with a larger -p budget.turns=… (it had 2), or start afresh "
        "with -p resume_mode=fresh"
    )
    # The workspace deleted and made again: still this task's run, still not silently resumed.
    kept = tmp_path / "kept"
    shutil.copytree(ws, kept)
    shutil.rmtree(ws)
    shutil.copytree(kept, ws)
    again = team.run(ws, "budget.turns=2")
    assert again.returncode == 2 and f"run {run_id} on this task already finished" in again.stderr
    # More room where the budget ran out: the same run goes on.
    proc = team.run(ws, "budget.turns=3")
    assert proc.returncode == 0, proc.stderr
    st = status(ws)
    assert st["id"] == run_id and st["budget"]["turns"]["used"] == 3


def test_a_held_run_says_its_way_out_and_the_same_command_takes_it(
    ws: Path, tmp_path: Path
) -> None:
    team = Team(tmp_path / "team", 'return c.ok("blocked", "needs a licence key nobody has")')
    held = team.run(ws, "budget.turns=6", task="continue")
    assert held.returncode == 3, held.stderr
    run_id = status(ws)["id"]
    end = held.stderr.strip().splitlines()[-1]
    assert f"run {run_id} held: every lane is held" in end
    assert "to go on, change TASK.md and run the same command with the task `continue`" in end
    # The same command, nothing changed: refused in one line that repeats the way out.
    again = team.run(ws, "budget.turns=6", task="continue")
    assert again.returncode == 2, again.stderr
    (line,) = again.stderr.strip().splitlines()
    assert f"run {run_id} on this task already held: every lane is held" in line
    assert line.endswith("; do that, or start afresh with -p resume_mode=fresh"), line
    # Doing what it says: the coordinator re-plans, the lanes are released and work again.
    (ws / "TASK.md").write_text("make it better, without the licence key\n")
    team.set_hook()
    done = team.run(ws, "budget.turns=6", task="continue")
    assert done.returncode == 0, done.stderr
    st = status(ws)
    assert st["id"] == run_id and st["status"] == "finished"
    assert not any(lane["held"] for lane in st["lanes"])
