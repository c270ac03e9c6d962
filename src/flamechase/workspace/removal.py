"""Removing a tree an agent wrote, all of it, whatever modes it left.

`shutil.rmtree(ignore_errors=True)` gives up silently on a directory an agent made read-only
(`chmod a-w`, mode 000): the files under it stay, and a half-removed tree is left for ever
(every later `gc` failing the same way). `remove_tree` gives the owner back write and search
permission on a directory it cannot empty and goes on, never following a link (a link is
removed, not what it names), and calls `each` after every entry removed (the crash tests'
hook: a SIGKILL can land between any two).

Owns nothing; touches only `path` and what is under it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from pathlib import Path

__all__ = ["remove_tree"]

_OWNER_RWX = stat.S_IRWXU


def _opened_up(d: str) -> None:
    """Give the owner rwx on directory `d` (one an agent left read-only), if we can."""
    with contextlib.suppress(OSError):
        mode = os.lstat(d).st_mode
        if stat.S_ISDIR(mode) and (mode & _OWNER_RWX) != _OWNER_RWX:
            os.chmod(d, stat.S_IMODE(mode) | _OWNER_RWX)


def _entries(d: str) -> list[os.DirEntry[str]]:
    try:
        return list(os.scandir(d))
    except PermissionError:
        _opened_up(d)
        return list(os.scandir(d))


def remove_tree(path: Path, each: Callable[[], None] | None = None) -> None:
    """Remove `path` and everything under it (a file or a link: just it). Raises OSError
    only for what cannot be removed even after opening its directory up."""
    try:
        top = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(top.st_mode):
        os.unlink(path)
        return
    # Depth first, without recursion (an agent may nest directories thousands deep).
    stack: list[tuple[str, bool]] = [(str(path), False)]
    while stack:
        d, listed = stack.pop()
        if listed:
            _rmdir(d)
            if each is not None:
                each()
            continue
        stack.append((d, True))
        _opened_up(d)  # we are about to remove its entries: it must be writable
        for e in _entries(d):
            if e.is_dir(follow_symlinks=False):
                stack.append((e.path, False))
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(e.path)
                if each is not None:
                    each()


def _rmdir(d: str) -> None:
    try:
        os.rmdir(d)
    except FileNotFoundError:
        return
    except PermissionError:
        _opened_up(os.path.dirname(d))
        os.rmdir(d)
