"""A kept copy brought back to its base in O(changed): whatever was done in it, and the base
never written."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from flamechase.workspace.reuse import CopyPool, scan, sync


def _tree(root: Path) -> dict[str, object]:
    """Everything a measurement could see: bytes, link targets, modes, file mtimes."""
    found: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = os.fspath(path.relative_to(root))
            st = os.lstat(path)
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ("dir", mode)
            elif stat.S_ISREG(st.st_mode):
                found[rel] = ("file", mode, st.st_mtime_ns, path.read_bytes())
            else:
                found[rel] = ("special", mode)
    found[""] = ("root", stat.S_IMODE(os.lstat(root).st_mode))
    return found


@pytest.fixture
def base(tmp_path: Path) -> Path:
    root = tmp_path / "base"
    (root / "pkg" / "deep").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "README.md").write_text("readme\n")
    (root / "pkg" / "mod.py").write_text("X = 1\n")
    (root / "pkg" / "deep" / "data.txt").write_text("0123456789\n")
    (root / "docs" / "a.md").write_text("a\n")
    (root / "script.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "script.sh").chmod(0o755)
    os.symlink("pkg/mod.py", root / "link")
    for i in range(50):
        (root / "pkg" / f"f{i}.txt").write_text(f"file {i}\n")
    return root


def _lent(pool: CopyPool, base: Path, dest: Path) -> Path:
    pool.take(base, dest)
    return dest


def test_every_hostile_change_is_undone_and_the_base_is_never_written(
    base: Path, tmp_path: Path
) -> None:
    before = _tree(base)
    pool = CopyPool(tmp_path / "pool")
    copy = _lent(pool, base, tmp_path / "measure-1")
    assert _tree(copy) == before
    # What a hostile evaluator could do in its measurement place:
    data = copy / "pkg" / "deep" / "data.txt"
    st = os.stat(data)
    with open(data, "r+b") as f:  # overwritten in place, same size...
        f.write(b"9876543210\n")
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns))  # ...and its mtime set back
    with open(copy / "pkg" / "mod.py", "r+b") as f:
        f.truncate(2)
    (copy / "script.sh").chmod(0o777)
    (copy / "README.md").unlink()
    (copy / "new.py").write_text("planted\n")
    (copy / "pkg" / "extra").mkdir()
    (copy / "pkg" / "extra" / "x.txt").write_text("x\n")
    (copy / "docs" / "a.md").unlink()
    (copy / "docs").rmdir()
    os.symlink(os.fspath(base), copy / "docs")  # a directory swapped for a link to the base
    os.link(copy / "pkg" / "f1.txt", copy / "hardlink.txt")
    os.mkfifo(copy / "fifo")
    os.unlink(copy / "link")
    os.symlink("/etc/passwd", copy / "link")
    (copy / "pkg" / "deep").chmod(0o000)
    pool.give(copy)
    again = _lent(pool, base, tmp_path / "measure-2")
    assert pool.last is not None  # reused, not a whole copy
    assert _tree(base) == before
    assert _tree(again) == before


def test_only_what_changed_is_restored(base: Path, tmp_path: Path) -> None:
    pool = CopyPool(tmp_path / "pool")
    copy = _lent(pool, base, tmp_path / "m1")
    inodes = {rel: sig[1] for rel, sig in scan(copy).items()}
    (copy / "pkg" / "f3.txt").write_text("changed\n")
    (copy / "pkg" / "f4.txt").unlink()
    pool.give(copy)
    again = _lent(pool, base, tmp_path / "m2")
    assert pool.last is not None
    assert (pool.last.restored, pool.last.removed) == (2, 1)
    assert pool.last.bytes == len("file 3\n") + len("file 4\n")
    now = {rel: sig[1] for rel, sig in scan(again).items()}
    others = set(inodes) - {"", "pkg", "pkg/f3.txt", "pkg/f4.txt"}
    assert all(now[rel] == inodes[rel] for rel in others)  # the rest was left as it was
    assert _tree(again) == _tree(base)


def test_a_change_to_the_base_reaches_the_kept_copy(base: Path, tmp_path: Path) -> None:
    pool = CopyPool(tmp_path / "pool")
    copy = _lent(pool, base, tmp_path / "m1")
    pool.give(copy)
    (base / "pkg" / "mod.py").write_text("X = 2\n")
    (base / "added").mkdir()
    (base / "added" / "n.txt").write_text("n\n")
    (base / "docs" / "a.md").unlink()
    again = _lent(pool, base, tmp_path / "m2")
    assert _tree(again) == _tree(base)


def test_sync_is_idempotent_after_an_interrupted_one(base: Path, tmp_path: Path) -> None:
    pool = CopyPool(tmp_path / "pool")
    copy = _lent(pool, base, tmp_path / "m1")
    seen_base, seen_copy = scan(base), scan(copy)
    (copy / "pkg" / "f9.txt").write_text("changed\n")
    base_now, copy_now, first = sync(base, copy, seen_base, seen_copy)
    assert first.restored == 1
    _, _, second = sync(base, copy, base_now, copy_now)
    assert (second.restored, second.removed) == (0, 0)
    assert _tree(copy) == _tree(base)


def test_two_copies_lent_at_once_are_apart(base: Path, tmp_path: Path) -> None:
    pool = CopyPool(tmp_path / "pool")
    one = _lent(pool, base, tmp_path / "m1")
    two = _lent(pool, base, tmp_path / "m2")
    (one / "README.md").write_text("one's\n")
    assert (two / "README.md").read_text() == "readme\n"
    pool.give(one)
    pool.give(two)
    three = _lent(pool, base, tmp_path / "m3")
    four = _lent(pool, base, tmp_path / "m4")
    assert _tree(three) == _tree(four) == _tree(base)


def test_kept_copies_are_removed_when_a_new_engine_opens_the_run(
    base: Path, tmp_path: Path
) -> None:
    pool = CopyPool(tmp_path / "pool")
    copy = _lent(pool, base, tmp_path / "m1")
    (copy / "pkg").chmod(0o500)
    pool.give(copy)
    CopyPool.remove(pool.root)
    assert not pool.root.exists()


def test_a_change_to_the_base_while_it_is_copied_reaches_the_copy_at_its_next_use(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The base may be the user's tree, written while a copy of it is made: its manifest is
    taken before the copy, so what moved during the copy is restored the next time."""
    import flamechase.workspace.reuse as reuse

    real = reuse.snapshot

    def copy_then_write(src: Path, dest: Path) -> None:
        real(src, dest)
        (src / "pkg" / "mod.py").write_text("X = 2  # written as the copy ended\n")

    monkeypatch.setattr(reuse, "snapshot", copy_then_write)
    pool = CopyPool(tmp_path / "pool")
    pool.give(_lent(pool, base, tmp_path / "planning"))
    monkeypatch.setattr(reuse, "snapshot", real)
    again = _lent(pool, base, tmp_path / "lane-2")
    assert pool.last is not None
    assert _tree(again) == _tree(base)


def test_a_base_that_cannot_be_read_is_refused_never_chmodded(base: Path, tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every directory")
    shut = base / "docs"
    shut.chmod(0)
    try:
        with pytest.raises(PermissionError):
            scan(base)
        assert stat.S_IMODE(os.lstat(shut).st_mode) == 0
    finally:
        shut.chmod(0o755)


def test_a_copy_that_cannot_be_brought_back_is_made_whole_again(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import flamechase.workspace.reuse as reuse

    pool = CopyPool(tmp_path / "pool")
    pool.give(_lent(pool, base, tmp_path / "m1"))

    def broken(*args: object) -> None:
        raise OSError("the kept copy is unreadable")

    monkeypatch.setattr(reuse, "sync", broken)
    again = _lent(pool, base, tmp_path / "m2")
    assert pool.last is None  # a whole copy
    assert _tree(again) == _tree(base)
    assert not list((tmp_path / "pool").iterdir())


def test_a_lent_copy_keeps_its_manifests_packed(tmp_path: Path) -> None:
    """Every private lane's copy is lent for the whole run: its two manifests (every entry of
    the tree, twice) are held packed, not as about 340 bytes of tuples an entry each."""
    import tracemalloc

    base = tmp_path / "big"
    for i in range(3000):
        d = base / f"d{i // 100}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"module_{i}.py").write_text("x")
    pool = CopyPool(tmp_path / "pool")
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        pool.take(base, tmp_path / "lane-2")
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 3030 * 150  # bytes an entry: unpacked, two manifests held about 700


def test_a_brief_copy_is_kept_only_for_a_copy_reserved_before_the_next_eviction(
    base: Path, tmp_path: Path
) -> None:
    pool = CopyPool(tmp_path / "pool")
    pool.take(base, tmp_path / "planning", brief=True)
    pool.give(tmp_path / "planning")
    assert pool.reserve(base, tmp_path / "lane-2")
    assert pool.evict() == []  # set aside: not evicted
    pool.take(base, tmp_path / "lane-2", brief=True)
    assert pool.last is not None  # the planner's copy, brought back
    pool.give(tmp_path / "lane-2")
    [gone] = pool.evict()  # nothing asked for it: the caller removes it
    assert not pool.reserve(base, tmp_path / "lane-3")
    assert gone.parent == tmp_path / "pool"
