"""`flamechase artifacts apply`: the demo names the command that takes its best candidate, and
the command lays exactly what the runtime measured over the tree, refusing a changed tree and
a changed store in one line."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from tests.helpers import cli


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_demos_best_candidate_is_applied_only_over_the_tree_the_run_left(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "demo"
    demo = cli("demo", "--dir", str(tree), cwd=tmp_path, timeout=300, check=True)
    m = re.search(r"to take it: (flamechase artifacts apply (\S+) (\S+))", demo.stdout)
    assert m, demo.stdout
    run_id, rid = m.group(2), m.group(3)
    solver = tree / "solver.py"
    left = solver.read_bytes()

    # The user edited the file since: nothing is written, one line says where and what to do.
    solver.write_bytes(left + b"# mine\n")
    refused = cli("artifacts", "apply", run_id, rid, cwd=tree)
    assert refused.returncode != 0
    assert f"{tree} has changed at solver.py since run {run_id} left it" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
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


def test_apply_re_hashes_the_frozen_copy(tmp_path: Path) -> None:
    tree = tmp_path / "demo"
    demo = cli("demo", "--dir", str(tree), cwd=tmp_path, timeout=300, check=True)
    m = re.search(r"to take it: flamechase artifacts apply (\S+) (\S+)", demo.stdout)
    assert m, demo.stdout
    run_id, rid = m.groups()
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
