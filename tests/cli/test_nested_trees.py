"""One live run per tree, nested trees included: a run on a directory inside, above, or the
same as (through a symlink or a bind mount) a tree a live run holds is refused in one line
naming that run and how to stop it, through the CLI."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import FLAMECHASE, REPORT_OK, actor, cli, status_when_readable


@contextlib.contextmanager
def _live_run(tree: Path, tmp_path: Path) -> Iterator[str]:
    """A run on `tree` whose first turn waits until the block ends; yields its id."""
    gate = tree / "gate"  # in the tree: the jailed actor writes nothing outside it
    gate.mkdir()
    waits = actor(
        tmp_path,
        "waits.sh",
        f"touch {gate}/started\nwhile [ ! -f {gate}/go ]; do sleep 0.05; done\n{REPORT_OK}",
    )
    args = ["exec", "-f", "flame_chase", "-a", f"exec:{waits}", "-a", f"exec:{waits}"]
    proc = subprocess.Popen(
        [*FLAMECHASE, *args, "-p", "budget.turns=1", "hold the tree"],
        cwd=tree,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (gate / "started").exists():
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "the holding run's turn never started"
            time.sleep(0.05)
        st = status_when_readable(tree)
        assert st is not None
        yield str(st["id"])
    finally:
        (gate / "go").touch()
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err


def _refused(where: Path, run_id: str, says: str) -> None:
    proc = cli(
        "exec", "-f", "flame_chase", "-a", "sim/steady", "-a", "sim/steady",
        "-p", "budget.turns=1", "another task", cwd=where,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert f"another flamechase run (run {run_id}, pid " in line, line
    assert says in line and line.endswith("stop it first or wait for it"), line


def test_a_run_inside_above_or_through_a_link_to_a_held_tree_is_refused(
    source_tree: Path, tmp_path: Path
) -> None:
    outer = tmp_path / "outer"
    outer.mkdir()
    tree = source_tree.rename(outer / "project")
    link = tmp_path / "link"
    link.symlink_to(tree)
    with _live_run(tree, tmp_path) as run_id:
        _refused(tree / "pkg", run_id, f"{tree / 'pkg'} is inside it")
        _refused(outer, run_id, f"it is inside {outer}")
        _refused(link, run_id, f"owns source {tree}")
        _refused(link / "pkg", run_id, "is inside it")
    # Once it has ended, the tree above is free.
    ok = cli(
        "exec", "-f", "flame_chase", "-a", "sim/steady", "-a", "sim/steady",
        "-p", "budget.turns=1", "another task", cwd=outer,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr


def test_a_bind_mount_of_a_held_tree_is_the_same_tree(source_tree: Path, tmp_path: Path) -> None:
    mount = tmp_path / "mount"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("a bind mount needs root")
    made = subprocess.run(["mount", "--bind", str(source_tree), str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"mount --bind is not allowed here: {made.stderr.decode().strip()}")
    try:
        with _live_run(source_tree, tmp_path) as run_id:
            _refused(mount, run_id, f"{mount} is that directory by another path")
            _refused(mount / "pkg", run_id, f"{mount / 'pkg'} is inside it")
    finally:
        subprocess.run(["umount", str(mount)], check=True)
