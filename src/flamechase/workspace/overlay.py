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
from collections.abc import Mapping
from pathlib import Path

from flamechase.workspace.reuse import CopyPool, Sig, listings, scan

SKIP = frozenset({".git"})
_COMPARED = frozenset({stat.S_IFREG, stat.S_IFLNK})
# (type bits, size, mtime_ns): what tells a candidate's entry from the base's without reading it
_Entry = tuple[int, int, int]


def place(pool: CopyPool, base: Path, over: Path, dest: Path) -> tuple[list[str], list[str]]:
    """Make `dest` (not there) a copy of `base` from `pool` with `over`'s differences from
    `base` laid over; (changed or new, deleted). The base is walked once, by the pool (its
    manifest is what `over` is compared with), `over` once, the copy once: a submission
    measured in a 20,000-file tree costs three stat walks and what changed."""
    seen = pool.take(base, dest)
    changed, deleted = differences(base, over, seen)
    lay_over(dest, over, changed, deleted)
    return changed, deleted


def _entries(root: Path) -> dict[str, _Entry]:
    # Regular files and links, one lstat each (relative to their directory's descriptor); a
    # directory is known by its directory entry's type (no lstat), `.git` left out, links
    # never followed.
    out: dict[str, _Entry] = {}
    stack = [""]
    for prefix, entries in listings(os.fspath(root), stack, own=False):
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIP:
                    stack.append(prefix + entry.name)
                continue
            if not (entry.is_file(follow_symlinks=False) or entry.is_symlink()):
                continue  # a FIFO, socket or device is not part of a candidate
            st = entry.stat(follow_symlinks=False)
            kind = stat.S_IFMT(st.st_mode)
            if kind in _COMPARED:  # (not replaced by something else meanwhile)
                out[prefix + entry.name] = (kind, st.st_size, st.st_mtime_ns)
    return out


def _same(sa: Sig, sb: _Entry, a: str, b: str, rel: str) -> bool:
    """Whether `rel` is the same in trees `a` (its manifest's `sa`) and `b` (`sb`)."""
    if sa[0] != sb[0]:
        return False
    if sb[0] == stat.S_IFLNK:
        return os.readlink(os.path.join(a, rel)) == os.readlink(os.path.join(b, rel))
    if sa[2] != sb[1]:
        return False
    if sa[3] == sb[2]:
        return True  # copies keep modification times: unchanged since the copy was made
    return _digest(os.path.join(a, rel)) == _digest(os.path.join(b, rel))


def _digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _in_git(rel: str) -> bool:
    return "/.git/" in f"/{rel}"  # below a directory named .git, at any depth


def differences(
    base: Path, over: Path, base_seen: Mapping[str, Sig] | None = None
) -> tuple[list[str], list[str]]:
    """(changed or new, deleted): paths relative to the trees, sorted. `base_seen`: the
    base's manifest (`reuse.scan`) just taken, instead of walking the base again."""
    a = scan(base) if base_seen is None else base_seen
    b = _entries(over)
    top_a, top_b = os.fspath(base), os.fspath(over)
    changed = []
    for rel, sb in b.items():
        sa = a.get(rel)
        if sa is None or not _same(sa, sb, top_a, top_b, rel):
            changed.append(rel)
    deleted = [rel for rel in a.keys() - b.keys() if a[rel][0] in _COMPARED and not _in_git(rel)]
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
