"""A full disk mid-run: recognised under whatever error reports it, said in one line.

SQLite says "database or disk is full", file writes raise ENOSPC (or EDQUOT), and a wrapper
(a snapshot that failed, a store error) may carry either as its cause. The run ends `failed`
with one line naming the file system and the space to free; it stays resumable, since every
commit before the failure is whole.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
from pathlib import Path

# What a resumed run needs at least: a few commits, a turn's files, room for SQLite's WAL.
NEEDED = 64 * 1024 * 1024


def is_disk_full(exc: BaseException) -> bool:
    """Whether `exc`, or anything it was raised from, says a disk is full."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, sqlite3.OperationalError) and "full" in str(cur).lower():
            return True
        if isinstance(cur, OSError) and cur.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if "no space left on device" in str(cur).lower():
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def mount_point(path: Path) -> Path:
    """The mount point of the file system holding `path`."""
    p = path.resolve()
    while not os.path.ismount(p) and p != p.parent:
        p = p.parent
    return p


def message(run_dir: Path) -> str:
    where = mount_point(run_dir)
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        free = 0
    return (
        f"the file system at {where} (holding {run_dir}) is full: {_mib(free)} free; free "
        f"at least {_mib(NEEDED)} there and resume the run with --resume (nothing "
        "recorded so far is lost)"
    )


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.0f} MiB" if n >= 1024 * 1024 else f"{n} bytes"
