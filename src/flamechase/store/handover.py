"""Handing a verified candidate to the user's tree.

When the runtime builds a candidate's measurement copy (the baseline with the lane's changed
files laid over it), it freezes the files the candidate changed into the run's blob store and
keeps, beside them, what the baseline held at every path the candidate touches: meta
`candidate:<place>`. A run's end records what the source tree held at those paths
(meta `tree_at_end`). Applying a candidate later re-hashes every blob it writes, refuses when the
tree no longer holds what the run left there, and writes path by path through no link: the
lane's own tree, which its agents could change after the measurement, is never read.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from flamechase.errors import ArtifactError
from flamechase.store.blobs import ArtifactRefused, BlobStore

ABSENT = ""  # nothing at the path
OTHER = "other"  # something that is not a regular file (a link, a directory, ...)
TREE_AT_END = "tree_at_end"
PREFIX = "candidate:"

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_CHUNK = 1 << 20


def meta_key(place: str) -> str:
    return PREFIX + place


def _open_parent(root: Path, parts: list[str]) -> int | str:
    """A descriptor of the directory holding parts[-1], or ABSENT/OTHER; no link followed."""
    fd = os.open(root, _DIR)
    for name in parts[:-1]:
        try:
            nxt = os.open(name, _DIR, dir_fd=fd)
        except OSError as exc:
            os.close(fd)
            return ABSENT if exc.errno == errno.ENOENT else OTHER
        os.close(fd)
        fd = nxt
    return fd


def _hash_at(dir_fd: int, name: str) -> str:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return ABSENT
    if not stat.S_ISREG(st.st_mode):
        return OTHER
    fd = os.open(name, _READ, dir_fd=dir_fd)
    try:
        h = hashlib.sha256()
        while chunk := os.read(fd, _CHUNK):
            h.update(chunk)
        return h.hexdigest()
    finally:
        os.close(fd)


def tree_state(root: Path, paths: Iterable[str]) -> dict[str, str]:
    """path -> SHA-256 of the regular file there, ABSENT or OTHER; no link followed."""
    out: dict[str, str] = {}
    for path in paths:
        parts = path.split("/")
        try:
            fd = _open_parent(root, parts)
        except OSError:
            out[path] = OTHER
            continue
        if isinstance(fd, str):
            out[path] = fd
            continue
        try:
            out[path] = _hash_at(fd, parts[-1])
        except OSError:
            out[path] = OTHER
        finally:
            os.close(fd)
    return out


def freeze_candidate(
    blobs: BlobStore, base: Path, dest: Path, changed: Iterable[str], deleted: Iterable[str]
) -> dict[str, Any] | None:
    """Freeze an overlay's changed files (from `dest`, the runtime's own copy) and the base's
    state of every touched path; None when a changed path is not a plain file (a link, too big):
    such a candidate is measured but cannot be applied."""
    changed, deleted = sorted(changed), sorted(deleted)
    try:
        frozen = blobs.freeze(dest, [(p, "candidate") for p in changed])
    except ArtifactRefused:
        return None
    return {
        "files": {f.path: {"sha256": f.sha256, "size": f.size} for f in frozen},
        "deleted": deleted,
        "base": tree_state(base, [*changed, *deleted]),
    }


def touched(package: Mapping[str, Any]) -> list[str]:
    return sorted([*package["files"], *package["deleted"]])


def drifted(
    package: Mapping[str, Any], expected: Mapping[str, str], now: Mapping[str, str]
) -> list[str]:
    """Paths where the tree holds neither what it held (`expected`) nor the candidate."""
    out = []
    for path in touched(package):
        want = package["files"][path]["sha256"] if path in package["files"] else ABSENT
        if now.get(path) not in (expected.get(path), want):
            out.append(path)
    return out


def apply(blobs: BlobStore, root: Path, package: Mapping[str, Any]) -> dict[str, list[str]]:
    """Lay `package` over `root`: every blob verified before anything is written, files renamed
    into place (never written through a link), deletions by name in a directory opened without
    following links. Returns {"changed", "added", "deleted"} (already-equal paths are left)."""
    now = tree_state(root, touched(package))
    files = package["files"]
    todo = [
        {"path": p, "sha256": f["sha256"], "size": f["size"]}
        for p, f in files.items()
        if now[p] != f["sha256"]
    ]
    if todo:
        blobs.extract(todo, root)
    gone = [p for p in package["deleted"] if now[p] != ABSENT]
    for path in gone:
        _unlink(root, path)
    return {
        "changed": [t["path"] for t in todo if now[t["path"]] != ABSENT],
        "added": [t["path"] for t in todo if now[t["path"]] == ABSENT],
        "deleted": gone,
    }


def _unlink(root: Path, path: str) -> None:
    parts = path.split("/")
    fd = _open_parent(root, parts)
    if isinstance(fd, str):
        return
    try:
        st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            raise ArtifactError(f"{root / path} is a directory now; remove it yourself")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(parts[-1], dir_fd=fd)
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)
