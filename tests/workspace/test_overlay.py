"""A candidate laid over a baseline: what differs is found from one walk of each tree, and the
measurement place holds the candidate's version of exactly that."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from flamechase.workspace import overlay
from flamechase.workspace.reuse import CopyPool, scan
from flamechase.workspace.snapshots import snapshot


@pytest.fixture
def base(tmp_path: Path) -> Path:
    root = tmp_path / "base"
    (root / "pkg" / "deep").mkdir(parents=True)
    (root / ".git" / "objects").mkdir(parents=True)
    (root / "vendor" / ".git").mkdir(parents=True)
    (root / "README.md").write_text("readme\n")
    (root / "pkg" / "mod.py").write_text("X = 1\n")
    (root / "pkg" / "same.py").write_text("same\n")
    (root / "pkg" / "deep" / "data.txt").write_text("0123456789\n")
    (root / "pkg" / "gone.py").write_text("deleted by the lane\n")
    (root / ".git" / "objects" / "o").write_text("object\n")
    (root / "vendor" / ".git" / "HEAD").write_text("ref\n")
    (root / "vendor" / "lib.py").write_text("lib\n")
    os.symlink("pkg/mod.py", root / "link")
    os.symlink("README.md", root / "link2")
    return root


@pytest.fixture
def lane(base: Path, tmp_path: Path) -> Path:
    """The base's copy with a lane's work in it."""
    root = tmp_path / "lane"
    snapshot(base, root)
    (root / "pkg" / "mod.py").write_text("X = 2\n")  # same size, new content, new mtime
    st = os.stat(root / "pkg" / "same.py")
    (root / "pkg" / "same.py").write_text("same\n")  # rewritten as it was: not a change
    os.utime(root / "pkg" / "same.py", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    (root / "pkg" / "gone.py").unlink()
    (root / "pkg" / "new.py").write_text("new\n")
    (root / "pkg" / "deep" / "more").mkdir()
    (root / "pkg" / "deep" / "more" / "x.txt").write_text("x\n")
    os.unlink(root / "link")
    os.symlink("pkg/same.py", root / "link")  # retargeted
    (root / "link2").unlink()
    (root / "link2").write_text("a file where a link was\n")
    (root / ".git" / "objects" / "o2").write_text("not part of a candidate\n")
    (root / "vendor" / ".git" / "HEAD").write_text("neither is this\n")
    (root / "vendor" / "lib.py").unlink()
    os.mkfifo(root / "pkg" / "fifo")  # not part of a candidate either
    return root


CHANGED = ["link", "link2", "pkg/deep/more/x.txt", "pkg/mod.py", "pkg/new.py"]
DELETED = ["pkg/gone.py", "vendor/lib.py"]


def test_a_candidate_is_what_its_tree_changed_outside_git(base: Path, lane: Path) -> None:
    assert overlay.differences(base, lane) == (CHANGED, DELETED)


def test_a_manifest_the_pool_took_finds_the_same_candidate_as_a_walk(
    base: Path, lane: Path
) -> None:
    assert overlay.differences(base, lane, scan(base)) == (CHANGED, DELETED)


def _listings(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Every directory listed from now on (by path or through a descriptor), counted."""
    listed: Counter[str] = Counter()
    real = os.scandir

    def counting(path: str | int) -> Iterator[os.DirEntry[str]]:
        where = os.readlink(f"/proc/self/fd/{path}") if isinstance(path, int) else path
        listed[os.fspath(where)] += 1
        return real(path)  # type: ignore[type-var]

    monkeypatch.setattr(os, "scandir", counting)
    return listed


def test_a_measurement_place_lists_each_tree_once_and_holds_the_candidate(
    base: Path, lane: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.rmtree(lane / "pkg" / "deep" / "more")  # (removing it from the copy lists it)
    pool = CopyPool(tmp_path / "pool")
    dest = tmp_path / "measure"
    overlay.place(pool, base, lane, dest)  # the first: a whole copy
    (dest / "pkg" / "same.py").write_text("the evaluator wrote here\n")
    pool.give(dest)
    listed = _listings(monkeypatch)
    changed, deleted = overlay.place(pool, base, lane, dest)  # the kept copy brought back
    monkeypatch.undo()
    assert pool.last is not None
    assert (changed, deleted) == ([c for c in CHANGED if "more" not in c], DELETED)
    # The kept copy is walked where the pool keeps it, before it is moved to `dest`.
    [home] = [p for p in listed if Path(p).parent == pool.root]
    tops = {"base": os.fspath(base), "lane": os.fspath(lane), "copy": home}
    walks: Counter[tuple[str, str]] = Counter()
    for path, n in listed.items():
        [(name, top)] = [(k, t) for k, t in tops.items() if f"{path}/".startswith(f"{t}/")]
        walks[name, path[len(top) :]] += n
    assert max(walks.values()) == 1  # no directory of any tree listed twice
    for name, root in (("base", base), ("lane", lane), ("copy", base)):
        dirs = {""} | {f"/{p.relative_to(root)}" for p in root.rglob("*") if p.is_dir()}
        if name == "lane":  # a candidate's .git is not walked
            dirs = {d for d in dirs if "/.git" not in d}
        assert {d for (n, d) in walks if n == name} == dirs, name
    assert (dest / "pkg" / "same.py").read_text() == "same\n"
    assert (dest / "pkg" / "mod.py").read_text() == "X = 2\n"
    assert os.readlink(dest / "link") == "pkg/same.py"
    assert (dest / "link2").read_text() == "a file where a link was\n"
    assert not (dest / "pkg" / "gone.py").exists()
    assert (dest / ".git" / "objects" / "o").read_text() == "object\n"
    assert not (dest / ".git" / "objects" / "o2").exists()
    assert (base / "pkg" / "mod.py").read_text() == "X = 1\n"
