"""Measuring the source and the large-copy warning (reference flaw 12 fixed)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from flamechase.errors import WorkspaceInvalid
from flamechase.workspace.stats import SourceStats, large_copy_warning, measure


def test_measure_counts_regular_files_and_apparent_bytes(source_tree: Path) -> None:
    (source_tree / ".git").mkdir()
    (source_tree / ".git" / "HEAD").write_bytes(b"ref: main\n")
    with open(source_tree / "sparse.bin", "wb") as handle:
        handle.truncate(10_000_000)
    stats = measure(source_tree)
    expected = sum(
        os.lstat(os.path.join(d, f)).st_size for d, _, fs in os.walk(source_tree) for f in fs
    )
    assert stats == SourceStats(files=5, bytes=expected, skipped_special=0)
    assert stats.bytes >= 10_000_000


def test_measure_does_not_follow_symlinks(source_tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    for index in range(10):
        (outside / f"f{index}").write_bytes(b"x" * 1000)
    before = measure(source_tree)
    (source_tree / "dirlink").symlink_to(outside)
    (source_tree / "filelink").symlink_to(outside / "f0")
    (source_tree / "dangling").symlink_to(tmp_path / "nowhere")
    assert measure(source_tree) == before


def test_special_files_are_skipped_not_fatal(source_tree: Path) -> None:
    os.mkfifo(source_tree / "pipe")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(os.fspath(source_tree / "pkg" / "s"))
        stats = measure(source_tree)
    finally:
        sock.close()
    assert stats.skipped_special == 2
    assert stats.files == 3


def test_measure_refuses_non_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(WorkspaceInvalid, match="not a directory"):
        measure(tmp_path / "file")
    with pytest.raises(WorkspaceInvalid, match="cannot be read"):
        measure(tmp_path / "missing")


def test_no_warning_under_thresholds_or_without_copies() -> None:
    stats = SourceStats(files=100, bytes=1000, skipped_special=0)
    assert large_copy_warning(stats, 3, 5000, 10**9) is None
    huge = SourceStats(files=10**6, bytes=10**12, skipped_special=0)
    assert large_copy_warning(huge, 0, 5000, 10**9) is None


def test_file_count_is_multiplied_by_copies() -> None:
    stats = SourceStats(files=2000, bytes=1000, skipped_special=0)
    assert large_copy_warning(stats, 2, 5000, 10**9) is None
    text = large_copy_warning(stats, 3, 5000, 10**9)
    assert text is not None
    assert "6,000 files" in text


def test_warning_text_names_counts_copies_thresholds_and_ends_plainly() -> None:
    stats = SourceStats(files=12_345, bytes=400_000_000, skipped_special=2)
    text = large_copy_warning(
        stats,
        3,
        5000,
        1_073_741_824,
        source=Path("/work/repo"),
        description="3 workspace snapshots (planning, lane-2, lane-3)",
    )
    assert text is not None
    lines = text.splitlines()
    assert lines[0] == (
        "WARNING: source workspace /work/repo contains 12,345 regular files and "
        "400,000,000 apparent bytes."
    )
    assert "3 workspace snapshots (planning, lane-2, lane-3)" in text
    assert "1,200,000,000 bytes" in text
    assert "37,035 files" in text
    assert "5,000 files" in text
    assert "1,073,741,824 bytes" in text
    assert "2 special files" in text
    assert lines[-1] == "No copy has been made yet."


def test_bytes_estimate_triggers_alone() -> None:
    stats = SourceStats(files=1, bytes=600, skipped_special=0)
    assert large_copy_warning(stats, 1, 5000, 1000) is None
    text = large_copy_warning(stats, 2, 5000, 1000)
    assert text is not None
    assert "2 workspace copies" in text
    assert "the source workspace" in text
