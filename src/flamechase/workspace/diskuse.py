"""How much disk a directory takes: for `gc`, `runs`, `status` and `budget.disk`.

Owns `disk_use`. Must not touch anything: it only reads metadata (`lstat`), never follows a
link, and counts a hard-linked file once (copies made with hard links cost their inodes).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

__all__ = ["disk_use", "size_text"]


def disk_use(path: Path) -> int:
    """Bytes allocated under `path` (hard-linked files counted once; links never followed)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for st in _walk_stats(path):
        key = (st.st_dev, st.st_ino)
        if st.st_nlink > 1:
            if key in seen:
                continue
            seen.add(key)
        total += st.st_blocks * 512
    return total


def _walk_stats(path: Path) -> Iterator[os.stat_result]:
    try:
        top = path.lstat()
    except OSError:
        return
    yield top
    if not stat.S_ISDIR(top.st_mode):
        return
    stack = [path]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            yield st
            if stat.S_ISDIR(st.st_mode):
                stack.append(Path(e.path))


def size_text(n: int) -> str:
    """Bytes as people read them: 512 B, 3.4 MB, 12.0 GB (powers of 1024)."""
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"
