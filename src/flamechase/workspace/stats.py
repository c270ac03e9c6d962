"""Measure the user's source tree and word the large-copy warning.

Owns: `measure` (count regular files and apparent bytes without following symlinks; FIFOs,
sockets and devices are counted as skipped, never an error) and `large_copy_warning` (the
multi-line warning shown before any copy is made, or None when under both thresholds).
Must not touch: anything on disk beyond lstat/readdir of the source (it never opens a file), the
run database, the terminal (callers print and ask).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from flamechase.errors import WorkspaceInvalid

__all__ = ["SourceStats", "large_copy_warning", "measure"]


@dataclass(frozen=True)
class SourceStats:
    """What one copy of the source costs: regular files, their apparent bytes, specials skipped."""

    files: int
    bytes: int
    skipped_special: int


def measure(source: Path) -> SourceStats:
    """Walk `source` (never following symlinks) and count what a snapshot would copy.

    Regular files count with their apparent size; directories and symlinks are free; FIFOs,
    sockets and devices are tallied in `skipped_special` (snapshots skip them). Entries that
    vanish or cannot be read during the walk are ignored. Raises `WorkspaceInvalid` if `source`
    is not a directory.
    """
    try:
        top = os.stat(source)
    except OSError as exc:
        raise WorkspaceInvalid(
            f"workspace {source} cannot be read ({exc.strerror or exc}); run from a directory"
        ) from None
    if not stat.S_ISDIR(top.st_mode):
        raise WorkspaceInvalid(f"workspace {source} is not a directory; run from a directory")
    files = 0
    total = 0
    special = 0
    for dirpath, dirnames, filenames in os.walk(source, followlinks=False):
        for name in (*dirnames, *filenames):
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            mode = st.st_mode
            if stat.S_ISREG(mode):
                files += 1
                total += st.st_size
            elif not (stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                special += 1
    return SourceStats(files=files, bytes=total, skipped_special=special)


def large_copy_warning(
    stats: SourceStats,
    copies: int,
    file_threshold: int,
    byte_threshold: int,
    *,
    source: Path | str | None = None,
    description: str | None = None,
) -> str | None:
    """The warning to show before making `copies` copies, or None if it is under both thresholds.

    Both counts are multiplied by the number of copies before comparing (the reference compared
    the file count of a single copy). `description` says what the copies are, e.g. "3 workspace
    snapshots (planning, lane-2, lane-3)"; `source` names the tree. The text ends with
    `No copy has been made yet.`
    """
    if copies <= 0:
        return None
    est_files = stats.files * copies
    est_bytes = stats.bytes * copies
    if est_files <= file_threshold and est_bytes <= byte_threshold:
        return None
    what = description or f"{copies:,} workspace cop{'y' if copies == 1 else 'ies'}"
    where = f"source workspace {source}" if source is not None else "the source workspace"
    lines = [
        f"WARNING: {where} contains {stats.files:,} regular files and "
        f"{stats.bytes:,} apparent bytes.",
        f"Starting will create {what}: about {est_files:,} files and {est_bytes:,} bytes "
        "in total, before filesystem copy-on-write savings.",
        f"Thresholds: {file_threshold:,} files, {byte_threshold:,} bytes "
        "(compared with the totals over all copies).",
    ]
    if stats.skipped_special:
        lines.append(
            f"{stats.skipped_special:,} special files (FIFOs, sockets, devices) will not be copied."
        )
    lines.append("No copy has been made yet.")
    return "\n".join(lines)
