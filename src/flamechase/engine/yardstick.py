"""A yardstick run (`Run.frozen`): the copy it runs in, its frozen files checked, and removed.

A gate that runs in the tree it judges can be changed under it: the builders' code it runs
writes that tree, and a hash taken beside the run proves nothing about the bytes that ran.
So a yardstick runs in a fresh copy of its place, made by the runtime just before it starts
(nothing else can write the copy), in which every frozen file must be a regular file, reached
through real directories, with exactly its recorded SHA-256; the jail then keeps those files
read-only (`protected`) while it runs. The copy goes when the run ends; a crash's leftovers
go when the run is opened again.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path

from flamechase.fsutil import private_dirs
from flamechase.workspace.snapshots import snapshot

__all__ = ["check", "make", "remove"]

_CHUNK = 1 << 20


def make(source: Path, dest: Path, frozen: Mapping[str, str], top: Path) -> str | None:
    """A fresh copy of `source` at `dest` (below `top`), its `frozen` files checked; why the
    yardstick must not run, or None."""
    remove(dest.parent)
    private_dirs(dest.parent, top)
    snapshot(source, dest)
    for rel, sha in sorted(frozen.items()):
        problem = check(dest, rel, sha)
        if problem is not None:
            return f"the frozen file {rel} {problem}; the yardstick did not run"
    return None


def check(root: Path, rel: str, sha: str) -> str | None:
    """Whether `root/rel` is a regular file with SHA-256 `sha`, no link on its way; what is
    wrong with it, or None."""
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return "is not a path inside the tree"
    node = root
    for part in parts[:-1]:
        node = node / part
        try:
            mode = os.lstat(node).st_mode
        except FileNotFoundError:
            return "is missing"
        if not stat.S_ISDIR(mode):
            return f"lies under {node.relative_to(root)}, which is not a directory"
    try:
        fd = os.open(root / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return "is missing"
        if exc.errno == errno.ELOOP:
            return "is a symbolic link"
        return f"cannot be read ({exc.strerror or exc})"
    digest = hashlib.sha256()
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "is not a regular file"
        while block := os.read(fd, _CHUNK):
            digest.update(block)
    finally:
        os.close(fd)
    if digest.hexdigest() != sha:
        found = digest.hexdigest()[:12]
        return f"does not match its frozen hash (sha256 {found}, frozen {sha[:12]})"
    return None


def remove(path: Path) -> None:
    """Remove a yardstick's directory (not following links), if it is there."""
    if os.path.lexists(path):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
