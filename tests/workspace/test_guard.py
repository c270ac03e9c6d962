"""Control paths: links, swaps and replacements of the run directory stop the run."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flamechase.errors import ControlPathViolation, RunFailed
from flamechase.fsutil import atomic_write
from flamechase.workspace.guard import ControlPaths


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    root = tmp_path / "run"
    for sub in ("private/lane-2", "shared/artifacts/lane-2", "shared/reports"):
        (root / sub).mkdir(parents=True)
    (root / "run.db").write_bytes(b"db")
    (root / "shared" / "reports" / "lane-2.jsonl").write_bytes(b"")
    return root


@pytest.fixture
def guard(run_dir: Path) -> ControlPaths:
    paths = ControlPaths()
    paths.record(run_dir, "dir")
    paths.record(run_dir / "private" / "lane-2", "dir")
    paths.record(run_dir / "shared" / "artifacts" / "lane-2", "dir")
    paths.record(run_dir / "run.db", "file")
    paths.record(run_dir / "shared" / "reports" / "lane-2.jsonl", "file")
    paths.record(run_dir / "shared" / "checkpoints" / "lane-2.json", "file", optional=True)
    return paths


def _violation(guard: ControlPaths, path: Path) -> str:
    with pytest.raises(ControlPathViolation) as info:
        guard.verify()
    message = str(info.value)
    assert f"control path {path} " in message
    assert message.endswith("the run stopped to protect your files")
    assert "\n" not in message
    assert isinstance(info.value, RunFailed)
    return message


def test_untouched_layout_verifies(guard: ControlPaths, run_dir: Path) -> None:
    guard.verify()
    (run_dir / "run.db").write_bytes(b"written in place")
    with open(run_dir / "shared" / "reports" / "lane-2.jsonl", "ab") as log:
        log.write(b"{}\n")
    guard.verify()
    assert len(guard) == 6
    assert run_dir / "run.db" in guard


def test_snapshot_root_replaced_by_symlink_is_caught(guard: ControlPaths, run_dir: Path) -> None:
    lane = run_dir / "private" / "lane-2"
    os.rename(lane, run_dir / "private" / "moved")
    lane.symlink_to(run_dir / "private" / "moved")  # same inode behind the link
    assert "symbolic link" in _violation(guard, lane)


def test_artifact_root_linked_into_user_tree_is_caught(
    guard: ControlPaths, run_dir: Path, source_tree: Path
) -> None:
    root = run_dir / "shared" / "artifacts" / "lane-2"
    os.rmdir(root)
    root.symlink_to(source_tree)
    _violation(guard, root)


def test_directory_swapped_for_a_fresh_one_is_caught(guard: ControlPaths, run_dir: Path) -> None:
    lane = run_dir / "private" / "lane-2"
    os.rename(lane, run_dir / "private" / "old")
    lane.mkdir()
    assert "different object" in _violation(guard, lane)


def test_parent_directory_swapped_for_link_is_caught(guard: ControlPaths, run_dir: Path) -> None:
    private = run_dir / "private"
    os.rename(private, run_dir / "private-moved")
    private.symlink_to(run_dir / "private-moved")  # lane-2 keeps its dev/ino through the link
    _violation(guard, private)


def test_file_replaced_by_symlink_or_hard_link_is_caught(
    guard: ControlPaths, run_dir: Path, tmp_path: Path
) -> None:
    db = run_dir / "run.db"
    os.rename(db, tmp_path / "db-moved")
    db.symlink_to(tmp_path / "db-moved")
    _violation(guard, db)
    db.unlink()
    victim = tmp_path / "bashrc"
    victim.write_text("user file")
    os.link(victim, db)
    assert "different object" in _violation(guard, db)


def test_missing_control_path_is_caught(guard: ControlPaths, run_dir: Path) -> None:
    (run_dir / "shared" / "reports" / "lane-2.jsonl").unlink()
    assert "missing" in _violation(guard, run_dir / "shared" / "reports" / "lane-2.jsonl")


def test_optional_file_may_be_absent_but_never_a_link(
    guard: ControlPaths, run_dir: Path, tmp_path: Path
) -> None:
    checkpoint = run_dir / "shared" / "checkpoints" / "lane-2.json"
    guard.verify()
    checkpoint.parent.mkdir()
    checkpoint.write_text("{}")
    guard.verify()
    checkpoint.unlink()
    checkpoint.symlink_to("/etc/passwd")
    _violation(guard, checkpoint)
    checkpoint.unlink()
    checkpoint.mkdir()
    assert "directory" in _violation(guard, checkpoint)


def test_recorded_optional_file_keeps_its_identity(run_dir: Path) -> None:
    paths = ControlPaths()
    state = run_dir / "state.json"
    atomic_write(state, b"{}")
    paths.record(state, "file", optional=True)
    paths.verify()
    atomic_write(state, b"[]")  # a rename: new inode
    with pytest.raises(ControlPathViolation):
        paths.verify()
    paths.record(state, "file", optional=True)  # the runtime re-records after its own write
    paths.verify()
    state.unlink()
    paths.verify()


def test_record_refuses_link_wrong_type_and_missing(run_dir: Path, tmp_path: Path) -> None:
    paths = ControlPaths()
    (run_dir / "link").symlink_to(tmp_path)
    with pytest.raises(ControlPathViolation, match="symbolic link"):
        paths.record(run_dir / "link", "dir")
    with pytest.raises(ControlPathViolation, match="directory"):
        paths.record(run_dir / "private", "file")
    with pytest.raises(ControlPathViolation, match="missing"):
        paths.record(run_dir / "nope", "dir")
    with pytest.raises(ValueError, match="kind"):
        paths.record(run_dir, "fifo")  # type: ignore[arg-type]
    assert len(paths) == 0


def test_stored_identities_are_what_resume_checks(guard: ControlPaths, run_dir: Path) -> None:
    stored = guard.to_json()
    lane = run_dir / "private" / "lane-2"
    os.rename(lane, run_dir / "private" / "old")
    lane.mkdir()
    # A fresh record would accept the swapped directory; the stored one does not.
    fresh = ControlPaths()
    fresh.record(lane, "dir")
    fresh.verify()
    resumed = ControlPaths.from_json(stored)
    assert [entry.path for entry in resumed.entries] == [entry.path for entry in guard.entries]
    _violation(resumed, lane)
    guard.forget(lane)
    guard.verify()


def test_round_trip_verifies_untouched_layout(guard: ControlPaths) -> None:
    again = ControlPaths.from_json(guard.to_json())
    again.verify()
    assert again.to_json() == guard.to_json()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '{"version": 2, "paths": []}',
        '{"version": 1, "paths": {}}',
        '{"version": 1, "paths": [{"path": "rel", "kind": "dir", "optional": false,'
        ' "dev": 1, "ino": 2}]}',
        '{"version": 1, "paths": [{"path": "/x", "kind": "dir", "optional": false,'
        ' "dev": null, "ino": null}]}',
        '{"version": 1, "paths": [{"path": "/x", "kind": "sock", "optional": false,'
        ' "dev": 1, "ino": 2}]}',
        '{"version": 1, "paths": [{"path": "/x", "kind": "dir", "optional": false,'
        ' "dev": true, "ino": 2}]}',
        pytest.param("[" * 100_000, id="deep-nesting"),
    ],
    ids=lambda text: text[:40],
)
def test_malformed_stored_identities_fail_closed(text: str) -> None:
    with pytest.raises(ControlPathViolation, match="cannot be verified"):
        ControlPaths.from_json(text)


@settings(max_examples=15, deadline=None)
@given(st.text(max_size=200))
def test_from_json_never_crashes(text: str) -> None:
    with contextlib.suppress(ControlPathViolation):
        ControlPaths.from_json(text)


def test_from_json_accepts_its_own_output_only(tmp_path: Path) -> None:
    paths = ControlPaths()
    paths.record(tmp_path, "dir")
    data = json.loads(paths.to_json())
    data["paths"][0]["ino"] += 1
    with pytest.raises(ControlPathViolation, match="different object"):
        ControlPaths.from_json(json.dumps(data)).verify()
