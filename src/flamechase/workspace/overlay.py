"""A candidate laid over a baseline: what differs between two trees, and a copy that has it.

The runtime measures a lane's work in a fresh copy of the baseline with the lane's changed
files laid over it (and frozen files put back), never in the lane's own tree, which the lane
could have arranged to lie. Regular files and symbolic links are compared by type, size and
content; `.git` is not part of a candidate.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path

SKIP = frozenset({".git"})


def _entries(root: Path) -> dict[str, os.stat_result]:
    # One lstat an entry (scandir), links never followed, `.git` left out.
    out: dict[str, os.stat_result] = {}
    stack = [(os.fspath(root), "")]
    while stack:
        path, rel = stack.pop()
        with os.scandir(path) as entries:
            for entry in entries:
                st = entry.stat(follow_symlinks=False)
                child = f"{rel}/{entry.name}" if rel else entry.name
                if stat.S_ISDIR(st.st_mode):
                    if entry.name not in SKIP:
                        stack.append((entry.path, child))
                elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                    out[child] = st
    return out


def _same(a: Path, sa: os.stat_result, b: Path, sb: os.stat_result) -> bool:
    if stat.S_IFMT(sa.st_mode) != stat.S_IFMT(sb.st_mode):
        return False
    if stat.S_ISLNK(sa.st_mode):
        return os.readlink(a) == os.readlink(b)
    if sa.st_size != sb.st_size:
        return False
    if sa.st_mtime_ns == sb.st_mtime_ns:
        return True  # copies keep modification times: unchanged since the copy was made
    return _digest(a) == _digest(b)


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def differences(base: Path, over: Path) -> tuple[list[str], list[str]]:
    """(changed or new, deleted): paths relative to the trees, sorted."""
    a, b = _entries(base), _entries(over)
    changed = [
        rel
        for rel, sb in b.items()
        if rel not in a or not _same(base / rel, a[rel], over / rel, sb)
    ]
    deleted = [rel for rel in a if rel not in b]
    return sorted(changed), sorted(deleted)


def lay_over(dest: Path, over: Path, changed: list[str], deleted: list[str]) -> None:
    """Make `dest` (a copy of the base) hold `over`'s version of `changed` and not `deleted`."""
    for rel in deleted:
        target = dest / rel
        if target.is_symlink() or target.is_file():
            target.unlink()
    for rel in changed:
        src, target = over / rel, dest / rel
        clear(target, dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), target)
        else:
            shutil.copy2(src, target, follow_symlinks=False)


def clear(target: Path, top: Path) -> None:
    """Remove whatever is at `target` (a file, a link, a directory in the way); never above
    `top`, and never through a link on the way down."""
    for parent in list(target.relative_to(top).parents)[:-1][::-1]:
        p = top / parent
        if p.is_symlink() or (p.exists() and not p.is_dir()):
            p.unlink()
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)
