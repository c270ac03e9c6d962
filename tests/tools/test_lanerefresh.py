"""An explorer lane's copy carried onto lane 1's current tree: its own edits kept, lane 1's
taken, a conflict keeping the lane's version and named; nothing of either tree's `.git` runs;
a refresh cut half-way is finished by the next call."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flamechase.tools import lanerefresh


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path, Path, str]:
    lane1, lane2, repo = tmp_path / "lane1", tmp_path / "lane2", tmp_path / "refresh.git"
    _write(lane1, {"a.py": "a\n", "b.py": "b1\nb2\nb3\n", "c.py": "c\n", "gone.py": "x\n"})
    shutil.copytree(lane1, lane2)
    base = lanerefresh.record(repo, lane1)
    # Lane 1 moves on; lane 2 explores.
    _write(lane1, {"a.py": "a from lane 1\n", "b.py": "b1\nb2\nb3 lane 1\n", "new1.py": "n\n"})
    (lane1 / "gone.py").unlink()
    _write(lane2, {"b.py": "b1 lane 2\nb2\nb3\n", "c.py": "c from lane 2\n", "idea.py": "i\n"})
    (lane1 / "c.py").write_text("c changed by lane 1\n")
    return lane1, lane2, repo, base


def test_the_lane_copy_lands_on_lane_1s_tree_with_its_own_edits(
    trees: tuple[Path, Path, Path, str],
) -> None:
    lane1, lane2, repo, base = trees
    done = lanerefresh.refresh(repo, base, lane2, lane1, lane="lane-2")
    assert _files(lane2) == {
        "a.py": "a from lane 1\n",  # lane 1's change taken
        "b.py": "b1 lane 2\nb2\nb3 lane 1\n",  # both, merged line by line
        "c.py": "c from lane 2\n",  # both changed it: the lane's version kept ...
        "idea.py": "i\n",  # the lane's new file kept
        "new1.py": "n\n",
    }
    assert done.conflicts == ("c.py",)  # ... and named
    assert not (lane2 / "gone.py").exists()
    again = lanerefresh.refresh(repo, done.base, lane2, lane1, lane="lane-2")
    assert again.written == 0 and again.conflicts == ()


def test_nothing_of_a_trees_git_runs(trees: tuple[Path, Path, Path, str], tmp_path: Path) -> None:
    lane1, lane2, repo, base = trees
    marker = tmp_path / "hook-ran"
    for root in (lane1, lane2):
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        hooks = root / ".git" / "hooks"
        for name in ("pre-commit", "post-commit", "post-checkout", "fsmonitor-watchman"):
            (hooks / name).write_text(f"#!/bin/sh\ntouch {marker}\n")
            (hooks / name).chmod(0o755)
        with open(root / ".git" / "config", "a") as f:
            f.write(f"[core]\n\tfsmonitor = {hooks / 'fsmonitor-watchman'}\n")
    done = lanerefresh.refresh(repo, base, lane2, lane1, lane="lane-2")
    assert not marker.exists()
    assert done.conflicts == ("c.py",)
    assert not any(".git/" in p for p in _files(lane2))


def test_a_refresh_cut_half_way_is_finished_by_the_next(
    trees: tuple[Path, Path, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lane1, lane2, repo, base = trees
    calls = {"n": 0}
    real = lanerefresh._place

    def dies_on_second(*args: object, **kw: object) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt  # where a SIGKILL lands: one file written, others not
        real(*args, **kw)  # type: ignore[arg-type]

    with monkeypatch.context() as m, pytest.raises(KeyboardInterrupt):
        m.setattr(lanerefresh, "_place", dies_on_second)
        lanerefresh.refresh(repo, base, lane2, lane1, lane="lane-2")
    assert lanerefresh.resume(repo, lane2, lane="lane-2") > 0
    assert _files(lane2)["a.py"] == "a from lane 1\n"
    assert _files(lane2)["b.py"] == "b1 lane 2\nb2\nb3 lane 1\n"
    assert not (lane2 / "gone.py").exists()
    assert lanerefresh.resume(repo, lane2, lane="lane-2") == 0
    assert os.listdir(repo).count("refresh-lane-2.json") == 0


def test_the_program_prints_one_json_line_and_is_idempotent(
    trees: tuple[Path, Path, Path, str], tmp_path: Path
) -> None:
    lane1, lane2, repo, base = trees
    argv = [sys.executable, "-I", "-m", "flamechase.tools.lanerefresh", "refresh"]
    argv += ["--repo", str(repo), "--base", base, "--lane", "lane-2"]
    argv += ["--copy", str(lane2), "--onto", str(lane1)]
    first = subprocess.run(argv, cwd=lane2, capture_output=True, text=True, check=True)
    got = json.loads(first.stdout)
    assert got["conflicts"] == ["c.py"] and got["written"] > 0
    after = _files(lane2)
    again = json.loads(subprocess.run(argv, cwd=lane2, capture_output=True, text=True).stdout)
    assert again["conflicts"] == ["c.py"] and _files(lane2) == after  # asked again: the same
    bad = subprocess.run(
        [*argv[:7], "--base", "0" * 40, *argv[9:]], capture_output=True, text=True, check=False
    )
    assert bad.returncode == 1 and "error" in json.loads(bad.stdout)
