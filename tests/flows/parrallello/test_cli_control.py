"""The control plane in the user's tree (`-p control_dir=CONTROL`), end to end through the
real `flamechase` command: scripted actors, real gates, real git."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.flows.parrallello.scripted import git, repo
from tests.flows.parrallello.test_cli import run
from tests.helpers import status


def test_each_block_end_commits_the_control_plane_from_the_runs_state(tmp_path: Path) -> None:
    ws = repo(tmp_path, {"P": {"target": 99}}, blocks=2, rounds_per_block=1)
    proc = run(tmp_path, ws, {"P": {}}, "control_dir=review/control")
    assert proc.returncode == 1, proc.stderr  # the target is never met: not approved
    subjects = git(ws, "log", "--format=%s").splitlines()
    controls = [s for s in subjects if "control plane after" in s]
    assert [s.split(": ", 1)[1] for s in controls] == [
        "control plane after P's block 2",
        "control plane after P's block 1",
    ]
    # Each is a commit of its own, touching the control directory alone.
    for sha in git(ws, "log", "--format=%H", "--grep=control plane after").split():
        changed = git(ws, "show", "--name-only", "--format=", sha).split()
        assert changed and all(p.startswith("review/control/") for p in changed)
    base = ws / "review" / "control"
    plan = json.loads((base / "plan.json").read_text())
    assert [f["id"] for f in plan["fronts"]] == ["P"]
    contract = json.loads((base / "P" / "contract.json").read_text())
    assert set(contract) == {"targets", "lead_decisions", "recalibrations"}
    assert contract["targets"]
    assert len(contract["lead_decisions"]) == 1  # the one taken between the two blocks
    verdicts = json.loads((base / "P" / "verdicts.json").read_text())
    assert len(verdicts) == 2 and not any(v.get("approved") for v in verdicts)
    tickets = json.loads((base / "P" / "tickets.json").read_text())
    assert tickets and all("id" in t for t in tickets)
    assert (base / "P" / "baseline.json").is_file()
    assert status(ws)["control"]["dir"] == "review/control"
    assert git(ws, "status", "--porcelain") == ""


@pytest.mark.parametrize("where", ["/tmp/x", "../up", "a/../b", ".git/x"])
def test_a_control_dir_outside_the_tree_is_refused_in_one_line(tmp_path: Path, where: str) -> None:
    ws = repo(tmp_path, {"P": {}})
    head = git(ws, "rev-parse", "HEAD")
    proc = run(tmp_path, ws, {"P": {}}, f"control_dir={where}")
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line.startswith("flamechase exec: error: param control_dir=") and "relative" in line
    assert git(ws, "rev-parse", "HEAD") == head


def test_an_approved_front_lands_and_its_control_plane_is_a_commit_of_its_own(
    tmp_path: Path,
) -> None:
    ws = repo(tmp_path, {"A": {}}, blocks=1, rounds_per_block=1)
    proc = run(tmp_path, ws, {"A": {}}, "control_dir=control")
    assert proc.returncode == 0, proc.stderr
    subjects = git(ws, "log", "--format=%s").splitlines()
    assert "parrallello: front A approved (round 1)" in subjects
    assert sum("control plane after A's block 1" in s for s in subjects) == 1
    (verdict,) = json.loads((ws / "control" / "A" / "verdicts.json").read_text())
    assert verdict["approved"] is True
    assert (ws / "src" / "A" / "core.py").read_text() == "VALUE = 2\n"
    assert git(ws, "status", "--porcelain") == ""


def test_an_approved_run_is_tagged_and_a_tree_without_git_says_so(tmp_path: Path) -> None:
    ws = repo(tmp_path, {"A": {}}, blocks=1, rounds_per_block=1)
    proc = run(tmp_path, ws, {"A": {}}, "release_tag=v1.0")
    assert proc.returncode == 0, proc.stderr
    assert git(ws, "rev-parse", "v1.0^{commit}") == git(ws, "rev-parse", "HEAD")
    assert "tagged v1.0" in proc.stdout + proc.stderr
    plain = tmp_path / "plain"
    plain.mkdir()
    bare = repo(plain, {"A": {}}, blocks=1, rounds_per_block=1)
    shutil.rmtree(bare / ".git")
    proc = run(plain, bare, {"A": {}}, "release_tag=v1.0")
    assert proc.returncode == 0, proc.stderr
    said = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "not tagged" in ln]
    assert said and all("not tagged v1.0:" in ln and "not a git repository" in ln for ln in said)
