"""fsutil: durable replacement that never writes through a link; bounded reads of regular files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from flamechase.fsutil import FileRefused, atomic_write, fsync_dir, read_regular_file


def _leftovers(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith(".tmp"))


def test_atomic_write_creates_file_with_mode_whatever_the_umask(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    old = os.umask(0o000)
    try:
        atomic_write(target, b"{}")
    finally:
        os.umask(old)
    assert target.read_bytes() == b"{}"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    atomic_write(target, b"[]", mode=0o644)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_atomic_write_replaces_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    target.write_bytes(b"old")
    atomic_write(target, b"new" * 1000)
    assert target.read_bytes() == b"new" * 1000
    assert _leftovers(tmp_path) == []


def test_atomic_write_refuses_symlink_and_never_writes_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"user data")
    target = tmp_path / "state.json"
    target.symlink_to(victim)
    with pytest.raises(FileRefused, match="symbolic link") as info:
        atomic_write(target, b"evil")
    assert "\n" not in str(info.value)
    assert str(target) in str(info.value)
    assert victim.read_bytes() == b"user data"
    assert target.is_symlink()
    assert _leftovers(tmp_path) == []


def test_atomic_write_refuses_dangling_symlink(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    target.symlink_to(tmp_path / "would-be-created")
    with pytest.raises(FileRefused):
        atomic_write(target, b"x")
    assert not (tmp_path / "would-be-created").exists()


def test_atomic_write_refuses_directory_and_fifo(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(FileRefused, match="directory"):
        atomic_write(tmp_path / "d", b"x")
    os.mkfifo(tmp_path / "p")
    with pytest.raises(FileRefused, match="FIFO"):
        atomic_write(tmp_path / "p", b"x")


def test_atomic_write_failure_keeps_old_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "state.json"
    target.write_bytes(b"old")

    def broken_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="Input/output"):
        atomic_write(target, b"new")
    monkeypatch.undo()
    assert target.read_bytes() == b"old"
    assert _leftovers(tmp_path) == []


def test_fsync_dir(tmp_path: Path) -> None:
    fsync_dir(tmp_path)
    with pytest.raises(FileNotFoundError):
        fsync_dir(tmp_path / "missing")


def test_read_regular_file_reads_up_to_limit(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert read_regular_file(path, 100) == b"x" * 100
    with pytest.raises(FileRefused, match="over the 99-byte limit"):
        read_regular_file(path, 99)


def test_read_regular_file_refuses_sparse_oversized_file(tmp_path: Path) -> None:
    path = tmp_path / "big"
    with open(path, "wb") as handle:
        handle.truncate(1024 * 1024 + 1)
    with pytest.raises(FileRefused, match="limit"):
        read_regular_file(path, 1024 * 1024)


def test_read_regular_file_refuses_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.write_bytes(b"secret")
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(FileRefused, match="symbolic link"):
        read_regular_file(link, 100)


def test_read_regular_file_refuses_dev_null_through_symlink(tmp_path: Path) -> None:
    link = tmp_path / "null"
    link.symlink_to("/dev/null")
    with pytest.raises(FileRefused, match="symbolic link"):
        read_regular_file(link, 100)
    with pytest.raises(FileRefused, match="device"):
        read_regular_file("/dev/zero", 100)


def test_read_regular_file_never_blocks_on_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(FileRefused, match="FIFO"):
        read_regular_file(fifo, 100)


def test_read_regular_file_refuses_directory_and_missing(tmp_path: Path) -> None:
    with pytest.raises(FileRefused, match="directory"):
        read_regular_file(tmp_path, 100)
    with pytest.raises(FileRefused, match="does not exist") as info:
        read_regular_file(tmp_path / "nope", 100)
    assert info.value.path == str(tmp_path / "nope")
    assert isinstance(info.value, ValueError)
