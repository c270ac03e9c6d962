"""`flamechase artifacts apply`: the demo and a run's end name the command that takes the best
candidate when the tree does not hold it, and the command lays exactly what the runtime
measured over the tree, refusing a changed tree (unless --force, which sets the user's edit
aside) and a changed store in one line."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import flamechase
from tests.helpers import cli

SAMPLE = Path(flamechase.__file__).parent / "sample"
TAKE = re.compile(r"to take it: flamechase artifacts apply (\S+) (\S+)")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run_beside_a_blocked_lane_1(tmp_path: Path) -> tuple[Path, str, str]:
    """(tree, run id, candidate id): the sample, run with lane 1 blocked (so it never changes
    the tree) while lanes 2 and 3 make verified candidates; the run's end names the best."""
    tree = tmp_path / "tree"
    shutil.copytree(SAMPLE, tree)
    agents = ["sim/steady", "sim/blocked", "sim/blocked", *["sim/steady"] * 4]
    params = "budget.turns=6,rest_seconds=0.05,evaluator=python3 bench.py,"
    params += r"metric_pattern=STEPS: (\d+),metric=steps"
    args = ["exec", "-f", "parallel_flame_chase", *[x for a in agents for x in ("-a", a)]]
    proc = cli(*args, "-p", params, "make it faster", cwd=tree, timeout=300)
    assert proc.returncode == 0, proc.stderr
    m = TAKE.search(proc.stderr)
    assert m, proc.stderr
    shown = cli("show", cwd=tree, check=True).stdout
    assert f"it is not in your tree; to take it: {m.group(0).split(': ', 1)[1]}" in shown
    return tree, m.group(1), m.group(2)


def _steps(tree: Path) -> int:
    out = subprocess.run(
        [sys.executable, "bench.py"], cwd=tree, capture_output=True, text=True, check=True
    ).stdout
    found = re.search(r"STEPS: (\d+)", out)
    assert found, out
    return int(found.group(1))


def test_the_demo_names_apply_whenever_its_tree_does_not_hold_the_best(tmp_path: Path) -> None:
    tree = tmp_path / "demo"
    demo = cli("demo", "--dir", str(tree), cwd=tmp_path, timeout=300, check=True)
    best = re.search(
        r"best candidate: steps = (\d+) \(minimize\) from \S+, (\S+), verified", demo.stdout
    )
    assert best, demo.stdout
    take = TAKE.search(demo.stdout)
    # Which lane got there first depends on timing; what is said must match the tree.
    if _steps(tree) == int(best.group(1)):
        assert take is None, demo.stdout
        return
    assert take and take.group(2) == best.group(2), demo.stdout
    cli("artifacts", "apply", take.group(1), take.group(2), cwd=tmp_path, check=True)
    assert _steps(tree) == int(best.group(1))


def test_the_best_candidate_is_applied_only_over_the_tree_the_run_left(tmp_path: Path) -> None:
    tree, run_id, rid = _run_beside_a_blocked_lane_1(tmp_path)
    solver = tree / "solver.py"
    left = solver.read_bytes()

    # The user edited the file since: nothing is written, one line says where and what to do.
    solver.write_bytes(left + b"# mine\n")
    refused = cli("artifacts", "apply", run_id, rid, cwd=tree)
    assert refused.returncode != 0
    assert f"{tree} has changed at solver.py since run {run_id} left it" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert "undo those changes (or move them away), then apply again, or add --force" in (
        refused.stderr
    )
    assert solver.read_bytes() == left + b"# mine\n"

    # A link where the file was is a change too, and is never written through.
    outside = tmp_path / "outside.py"
    outside.write_bytes(left)
    solver.unlink()
    solver.symlink_to(outside)
    assert cli("artifacts", "apply", rid, cwd=tree).returncode != 0
    assert outside.read_bytes() == left
    solver.unlink()
    solver.write_bytes(left)

    home = Path(os.environ["FLAMECHASE_HOME"])
    stored = {_sha(p) for p in (home / "runs" / run_id / "blobs").rglob("*") if p.is_file()}

    # Taken: the tree holds the measured candidate (by its hash), and saying it again is a no-op.
    taken = cli("artifacts", "apply", rid, cwd=tree, check=True)  # this directory's run
    assert f"applied {rid} (steps = " in taken.stdout and "changed solver.py" in taken.stdout
    assert _sha(solver) in stored  # the frozen copy the runtime measured
    assert _sha(solver) != hashlib.sha256(left).hexdigest()
    again = cli("artifacts", "apply", run_id, rid, cwd=tmp_path, check=True)
    assert "already there, nothing changed" in again.stdout

    # Nothing of that name verified: one line naming where the leaderboard is.
    nope = cli("artifacts", "apply", run_id, "nope", cwd=tmp_path)
    assert nope.returncode != 0 and "has no verified candidate 'nope'" in nope.stderr
    no_id = cli("artifacts", "apply", cwd=tree)
    assert no_id.returncode == 2 and "apply takes the ID of a verified candidate" in no_id.stderr


def test_apply_force_lays_the_candidate_over_the_users_edit_and_sets_the_edit_aside(
    tmp_path: Path,
) -> None:
    tree, run_id, rid = _run_beside_a_blocked_lane_1(tmp_path)
    solver = tree / "solver.py"
    mine = solver.read_bytes() + b"# mine\n"
    solver.write_bytes(mine)
    assert cli("artifacts", "apply", rid, cwd=tree).returncode != 0
    forced = cli("artifacts", "apply", rid, "--force", cwd=tree, check=True)
    applied, aside = forced.stdout.strip().splitlines()
    assert f"applied {rid} (steps = " in applied and "changed solver.py" in applied
    said = re.fullmatch(r"your changes at solver\.py were set aside in (\S+)", aside)
    assert said, aside
    assert (Path(said.group(1)) / "solver.py").read_bytes() == mine
    home = Path(os.environ["FLAMECHASE_HOME"])
    assert Path(said.group(1)).is_relative_to(home / "runs" / run_id)
    stored = {_sha(p) for p in (home / "runs" / run_id / "blobs").rglob("*") if p.is_file()}
    assert _sha(solver) in stored  # the candidate as the runtime measured it


def test_apply_re_hashes_the_frozen_copy(tmp_path: Path) -> None:
    tree, run_id, rid = _run_beside_a_blocked_lane_1(tmp_path)
    home = Path(os.environ["FLAMECHASE_HOME"])
    left = (tree / "solver.py").read_bytes()
    shown = cli("artifacts", "apply", run_id, rid, "--json", cwd=tmp_path, check=True)
    applied = (tree / "solver.py").read_bytes()
    assert '"changed"' in shown.stdout
    (tree / "solver.py").write_bytes(left)  # back to what the run left
    sha = _sha_hex(applied)
    blob = home / "runs" / run_id / "blobs" / "sha256" / sha[:2] / sha[2:]
    assert blob.is_file()
    blob.chmod(0o644)
    blob.write_bytes(applied + b"# forged\n")
    forged = cli("artifacts", "apply", run_id, rid, cwd=tmp_path)
    assert forged.returncode != 0 and "does not match its recorded sha256" in forged.stderr
    assert (tree / "solver.py").read_bytes() == left


def _sha_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
