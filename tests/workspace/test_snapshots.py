"""Snapshots: full copies made under a temp name, then renamed; never half, never in the source."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest

from flamechase.errors import SnapshotFailed
from flamechase.workspace import snapshots
from flamechase.workspace.snapshots import clean_partials, snapshot


def _tree(root: Path) -> dict[str, object]:
    """Everything under root: file bytes, link targets, dir markers."""
    found: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = os.fspath(path.relative_to(root))
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                found[rel] = "dir"
            elif path.is_file():
                found[rel] = path.read_bytes()
            else:
                found[rel] = "special"
    return found


def _partials(parent: Path) -> list[str]:
    return [name for name in os.listdir(parent) if ".partial-" in name]


@pytest.fixture
def rich_source(source_tree: Path, tmp_path: Path) -> Path:
    (source_tree / ".git").mkdir()
    (source_tree / ".git" / "config").write_text("[core]\n")
    (source_tree / "rel-link").symlink_to("pkg/mod.py")
    (source_tree / "abs-link").symlink_to(tmp_path / "outside-target")
    (source_tree / "dangling").symlink_to("no/such/file")
    (source_tree / "empty-dir").mkdir()
    os.chmod(source_tree / "README.md", 0o640)
    return source_tree


def test_snapshot_copies_everything_and_keeps_links_as_links(
    rich_source: Path, tmp_path: Path
) -> None:
    dest = tmp_path / "run" / "lane-2"
    dest.parent.mkdir()
    snapshot(rich_source, dest)
    assert _tree(dest) == _tree(rich_source)
    assert os.readlink(dest / "abs-link") == str(tmp_path / "outside-target")
    assert (dest / "README.md").stat().st_mode & 0o777 == 0o640
    assert _partials(dest.parent) == []


def test_snapshot_of_finished_destination_is_never_redone(
    source_tree: Path, tmp_path: Path
) -> None:
    dest = tmp_path / "lane-2"
    snapshot(source_tree, dest)
    (dest / "README.md").write_text("lane work\n")
    (source_tree / "new.txt").write_text("later\n")
    snapshot(source_tree, dest)
    assert (dest / "README.md").read_text() == "lane work\n"
    assert not (dest / "new.txt").exists()


def test_snapshot_refuses_destination_inside_source(source_tree: Path) -> None:
    with pytest.raises(SnapshotFailed, match="into itself"):
        snapshot(source_tree, source_tree / "pkg" / "copy")
    with pytest.raises(SnapshotFailed, match="into itself"):
        snapshot(source_tree, source_tree)
    assert not (source_tree / "pkg" / "copy").exists()


def test_snapshot_refuses_destination_inside_source_via_symlinked_parent(
    source_tree: Path, tmp_path: Path
) -> None:
    (tmp_path / "sneaky").symlink_to(source_tree)
    with pytest.raises(SnapshotFailed, match="into itself"):
        snapshot(source_tree, tmp_path / "sneaky" / "copy")


def test_snapshot_refuses_destination_replaced_by_symlink(
    source_tree: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    dest = tmp_path / "lane-2"
    dest.symlink_to(elsewhere)
    with pytest.raises(SnapshotFailed, match="not a directory"):
        snapshot(source_tree, dest)
    assert list(elsewhere.iterdir()) == []


def test_snapshot_needs_existing_parent(source_tree: Path, tmp_path: Path) -> None:
    with pytest.raises(SnapshotFailed, match="does not exist"):
        snapshot(source_tree, tmp_path / "no" / "lane-2")
    with pytest.raises(SnapshotFailed, match="check the workspace"):
        snapshot(tmp_path / "missing-source", tmp_path / "lane-2")


@pytest.mark.parametrize("use_cp", [True, False])
def test_snapshot_skips_fifo_without_hanging(
    source_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use_cp: bool
) -> None:
    if not use_cp:
        monkeypatch.setattr(snapshots, "_cp_binary", lambda: None)
    os.mkfifo(source_tree / "pkg" / "pipe")
    dest = tmp_path / "lane-2"
    snapshot(source_tree, dest)
    assert not os.path.lexists(dest / "pkg" / "pipe")
    assert (dest / "pkg" / "mod.py").read_text() == "X = 1\n"


def test_snapshot_uses_cp_when_available(
    source_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_python_copy(*_args: object) -> None:
        raise AssertionError("python fallback used although cp works")

    monkeypatch.setattr(snapshots, "_copy_with_python", no_python_copy)
    snapshot(source_tree, tmp_path / "lane-2")
    assert _tree(tmp_path / "lane-2") == _tree(source_tree)


def test_snapshot_without_cp_uses_python_copy(
    rich_source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snapshots, "_cp_binary", lambda: None)
    dest = tmp_path / "lane-3"
    snapshot(rich_source, dest)
    assert _tree(dest) == _tree(rich_source)


def test_snapshot_falls_back_when_cp_fails(
    source_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snapshots, "CP_ARGS", ("--no-such-option", "--"))
    dest = tmp_path / "lane-3"
    snapshot(source_tree, dest)
    assert _tree(dest) == _tree(source_tree)
    assert _partials(tmp_path) == []


def test_snapshot_fallback_checks_free_space(
    source_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snapshots, "_cp_binary", lambda: None)

    class Usage:
        free = 3

    monkeypatch.setattr(shutil, "disk_usage", lambda _p: Usage)
    dest = tmp_path / "lane-2"
    with pytest.raises(SnapshotFailed, match="not enough free space") as info:
        snapshot(source_tree, dest)
    assert "\n" not in str(info.value)
    assert not dest.exists()
    assert _partials(tmp_path) == []


def test_snapshot_crash_leaves_no_half_copy(
    source_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_copy = snapshots._copy_tree

    def copy_then_fail(source: Path, tmp: Path, dest: Path) -> None:
        real_copy(source, tmp, dest)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(snapshots, "_copy_tree", copy_then_fail)
    dest = tmp_path / "lane-2"
    with pytest.raises(SnapshotFailed, match="No space left") as info:
        snapshot(source_tree, dest)
    assert str(dest) in str(info.value)
    assert not dest.exists()
    assert _partials(tmp_path) == []


def test_snapshot_killed_mid_copy_leaves_only_a_partial_that_is_cleaned(
    source_tree: Path, tmp_path: Path
) -> None:
    dest = tmp_path / "lane-2"
    pid = os.fork()
    if pid == 0:  # child: copy, then die by SIGKILL before the rename
        try:
            real = snapshots._copy_tree

            def crash(source: Path, tmp: Path, dest: Path) -> None:
                real(source, tmp, dest)
                os.kill(os.getpid(), signal.SIGKILL)

            snapshots._copy_tree = crash
            snapshot(source_tree, dest)
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert not os.path.lexists(dest)
    leftovers = _partials(tmp_path)
    assert len(leftovers) == 1
    assert clean_partials(tmp_path) == [tmp_path / leftovers[0]]
    assert _partials(tmp_path) == []
    snapshot(source_tree, dest)
    assert _tree(dest) == _tree(source_tree)


def test_clean_partials_touches_only_partials_and_never_follows_links(tmp_path: Path) -> None:
    keep = tmp_path / "lane-2"
    keep.mkdir()
    (keep / "work.py").write_text("x")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("y")
    link = tmp_path / f".lane-3.partial-{'a' * 32}"
    link.symlink_to(victim)
    stale = tmp_path / f".lane-2.partial-{'b' * 32}"
    (stale / "sub").mkdir(parents=True)
    (stale / "sub" / "f").write_text("z")
    os.chmod(stale / "sub", 0o555)
    other = tmp_path / ".lane-2.partial-notahex"
    other.mkdir()
    removed = clean_partials(tmp_path)
    assert sorted(removed) == sorted([link, stale])
    assert not os.path.lexists(link)
    assert not stale.exists()
    assert (victim / "precious").read_text() == "y"
    assert (keep / "work.py").exists()
    assert other.exists()
    assert clean_partials(tmp_path / "missing") == []
