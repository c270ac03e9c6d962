"""The per-source lock: one run per tree, released by the kernel when its owner dies."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
from pathlib import Path

import pytest

from flamechase.errors import EXIT_USAGE, LockHeld
from flamechase.workspace.locks import SourceLock, lock_path, owner, source_key


@pytest.fixture
def locks(tmp_path: Path) -> Path:
    return tmp_path / "home" / "locks"


def test_acquire_records_owner_in_private_file(locks: Path, source_tree: Path) -> None:
    lock = SourceLock(locks, source_tree)
    lock.acquire("20260101-abc")
    try:
        path = lock_path(locks, source_tree)
        assert path.name == f"{source_key(source_tree)}.lock"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(locks.stat().st_mode) == 0o700
        record = json.loads(path.read_text())
        assert record["run_id"] == "20260101-abc"
        assert record["pid"] == os.getpid()
        assert record["source"] == str(source_tree.resolve())
        assert record["acquired_at"]
        assert lock.held
    finally:
        lock.release()
    assert not lock.held


def test_second_run_on_same_source_is_refused_with_owner(
    locks: Path, source_tree: Path, tmp_path: Path
) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(source_tree)
    with SourceLock(locks, source_tree, "20260101-abc"):
        for spelling in (source_tree, alias, source_tree / "pkg" / ".."):
            with pytest.raises(LockHeld) as info:
                SourceLock(locks, spelling).acquire("20260102-def")
            message = str(info.value)
            assert "run 20260101-abc" in message
            assert str(source_tree.resolve()) in message
            assert "stop it first or wait for it" in message
            assert "\n" not in message
            assert info.value.exit_code == EXIT_USAGE
    # released on exit: the next run takes it
    with SourceLock(locks, alias, "20260102-def") as second:
        assert second.held


def test_different_sources_do_not_conflict(locks: Path, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with SourceLock(locks, tmp_path / "a", "r1"), SourceLock(locks, tmp_path / "b", "r2"):
        pass


def test_owner_reports_holder_without_taking_or_creating(locks: Path, source_tree: Path) -> None:
    assert owner(locks, source_tree) is None
    assert not locks.exists()
    lock = SourceLock(locks, source_tree)
    lock.acquire("run-1")
    try:
        info = owner(locks, source_tree)
        assert info is not None
        assert info["run_id"] == "run-1"
        lock.set_run_id("run-2")
        info = owner(locks, source_tree)
        assert info is not None
        assert info["run_id"] == "run-2"
        with pytest.raises(LockHeld, match="run run-2"):
            SourceLock(locks, source_tree).acquire("run-3")
    finally:
        lock.release()
    assert owner(locks, source_tree) is None
    lock.release()  # twice is fine


def test_context_manager_needs_a_run_id(locks: Path, source_tree: Path) -> None:
    with pytest.raises(ValueError, match="run_id"), SourceLock(locks, source_tree):
        pass


def test_lock_is_free_after_owner_is_killed(locks: Path, source_tree: Path) -> None:
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: take the lock, say so, wait to be killed
        try:
            os.close(ready_r)
            held = SourceLock(locks, source_tree)
            held.acquire("doomed-run")
            os.write(ready_w, b"x")
            signal.pause()
        finally:
            os._exit(1)
    os.close(ready_w)
    try:
        assert os.read(ready_r, 1) == b"x"
        info = owner(locks, source_tree)
        assert info is not None
        assert info["run_id"] == "doomed-run"
        assert info["pid"] == pid
        with pytest.raises(LockHeld, match="doomed-run"):
            SourceLock(locks, source_tree).acquire("next-run")
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(ready_r)
    assert owner(locks, source_tree) is None
    with SourceLock(locks, source_tree, "next-run"):
        info = owner(locks, source_tree)
        assert info is not None
        assert info["run_id"] == "next-run"


def test_lock_is_not_inherited_by_agent_processes(locks: Path, source_tree: Path) -> None:
    lock = SourceLock(locks, source_tree)
    lock.acquire("run-1")
    child = subprocess.Popen(["sleep", "30"], close_fds=False)
    try:
        lock.release()
        with SourceLock(locks, source_tree, "run-2"):
            pass
    finally:
        child.kill()
        child.wait()


def test_symlinked_lock_file_is_refused_and_not_written(locks: Path, source_tree: Path) -> None:
    locks.mkdir(parents=True)
    victim = source_tree / "README.md"
    lock_path(locks, source_tree).symlink_to(victim)
    with pytest.raises(LockHeld, match="symbolic link"):
        SourceLock(locks, source_tree).acquire("run-1")
    assert victim.read_text() == "sample\n"
    assert owner(locks, source_tree) is None


def test_stale_owner_record_of_dead_run_does_not_block(locks: Path, source_tree: Path) -> None:
    locks.mkdir(parents=True)
    lock_path(locks, source_tree).write_text(json.dumps({"run_id": "dead", "pid": 1}))
    assert owner(locks, source_tree) is None
    with SourceLock(locks, source_tree, "alive"):
        info = owner(locks, source_tree)
        assert info is not None
        assert info["run_id"] == "alive"


def test_a_tree_inside_or_above_a_held_one_is_refused_naming_the_run(
    locks: Path, tmp_path: Path
) -> None:
    outer = tmp_path / "repo"
    inner = outer / "pkg" / "sub"
    inner.mkdir(parents=True)
    alias = tmp_path / "alias"
    alias.symlink_to(outer)
    with SourceLock(locks, outer, "20260101-out"):
        for spelling in (inner, alias / "pkg"):
            with pytest.raises(LockHeld) as info:
                SourceLock(locks, spelling).acquire("20260102-in")
            message = str(info.value)
            assert "run 20260101-out" in message and f"owns {outer.resolve()}" in message
            assert "is inside it" in message and "\n" not in message
        # The refused run let its own lock go.
        assert owner(locks, inner) is None
    with SourceLock(locks, inner, "20260103-in"):
        with pytest.raises(LockHeld) as info:
            SourceLock(locks, outer).acquire("20260104-out")
        assert "run 20260103-in" in str(info.value)
        assert f"it is inside {outer.resolve()}" in str(info.value)
        # A sibling tree is not nested.
        (outer / "other").mkdir()
        with SourceLock(locks, outer / "other", "20260105-sib"):
            pass
    # Once the holder is gone, the tree above is free.
    with SourceLock(locks, outer, "20260106-out") as lock:
        assert lock.held


def test_a_held_lock_of_a_dead_owner_does_not_block_a_nested_tree(
    locks: Path, tmp_path: Path
) -> None:
    outer = tmp_path / "repo"
    (outer / "sub").mkdir(parents=True)
    lock = SourceLock(locks, outer, "20260101-out")
    lock.acquire()
    lock.release()
    # The record is cleared and the flock free: the nested run starts.
    with SourceLock(locks, outer / "sub", "20260102-in") as inner:
        assert inner.held
