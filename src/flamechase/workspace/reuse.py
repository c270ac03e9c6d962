"""Copies of a place kept for reuse, brought back to it in O(changed): measurement places
between submissions, and a dropped snapshot (a planner's) as the copy asked for with it.

Where the file system has no reflink, a fresh copy of a 20,000-file tree for every
submission measured writes the whole tree each time. Instead a copy is kept between uses
with two manifests, one of the copy and one of its base, of every entry's
(type, inode, size, mtime_ns, ctime_ns, mode), and `sync` restores only the entries whose
signature moved on either side: a path the measured code wrote, truncated, chmodded, renamed,
replaced or added in the copy, or one the base itself changed. The ctime is the safeguard:
the measured code can set a file's mtime back (`os.utime`) but no unprivileged process can
set a ctime, which the kernel stamps on every change of content or metadata; the inode
catches a file replaced by another. Only what the runtime itself restored is re-stamped in
the manifest, so the copy is, after `sync`, what its base is.

A copy only ever reads its base: nothing here writes the base, and nothing written in a copy
reaches it (restores copy bytes from base to copy, never link them). Sync never follows a
link and handles parents before children, so a directory swapped for a link is removed as a
link, not written through. The copies are this engine's: their manifests live in memory and a
crash's leftovers are removed when the run is opened again (`remove`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import marshal
import operator
import os
import stat
import threading
import time
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from flamechase.workspace.snapshots import remove_tree, snapshot

__all__ = ["CopyPool", "Sig", "SyncStats", "listings", "open_dir", "scan", "sync"]

# (type bits, inode, size, mtime_ns, ctime_ns, permission bits)
Sig = tuple[int, int, int, int, int, int]
FICLONE = 0x40049409  # linux/fs.h: share the source's extents (reflink) where the FS can
_TICK_NS = 20_000_000  # longer than a coarse clock tick (HZ >= 100): see `_settle`
_CTIME = operator.itemgetter(4)


def _sig(st: os.stat_result) -> Sig:
    return (
        stat.S_IFMT(st.st_mode),
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        stat.S_IMODE(st.st_mode),
    )


_KEPT = frozenset({stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK})


def open_dir(path: str, *, own: bool, dir_fd: int | None = None, follow: bool = False) -> int:
    """A descriptor to list directory `path` (relative to `dir_fd`) through, its last link
    not followed unless `follow`. `own`: the runtime's copy, where a directory the measured
    code made unreadable is made readable first; anything else (a base: it may be the
    user's tree) is only read."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        return os.open(path, flags, dir_fd=dir_fd)
    except PermissionError:
        if not own:
            raise
        os.chmod(path, 0o700, dir_fd=dir_fd)
        return os.open(path, flags, dir_fd=dir_fd)


def listings(
    top: str, stack: list[str], *, own: bool
) -> Iterator[tuple[str, Iterator[os.DirEntry[str]]]]:
    """Each directory below `top` the caller puts on `stack` (relative paths, `""` the top
    itself), popped last in first out: its path prefix (`"a/b/"`) and its entries. Each is
    listed through a descriptor relative to the top's, so the caller's lstat of an entry
    (`entry.stat`) is relative to its directory (fstatat) rather than a walk of its whole
    path again; `own` as in `open_dir`. A directory is opened only while it is listed."""
    top_fd = open_dir(top, own=own, follow=True)
    try:
        while stack:
            rel = stack.pop()
            fd = open_dir(rel, own=own, dir_fd=top_fd) if rel else top_fd
            try:
                with os.scandir(fd) as entries:
                    yield (f"{rel}/" if rel else ""), entries
            finally:
                if fd != top_fd:
                    os.close(fd)
    finally:
        os.close(top_fd)


def scan(root: Path, *, specials: bool = False) -> dict[str, Sig]:
    """Every directory, regular file and link below `root` (`""` is the root itself), by
    relative path; FIFOs, sockets and devices only with `specials`: the copy's side (a
    snapshot leaves them out of a copy, so a copy that has one was given it). On the copy's
    side a directory the owner made unreadable is made readable first (it is the runtime's
    copy); a base is only read (it may be the user's tree)."""
    # One lstat an entry and nothing more: the walk is what a sync costs (about 3 us a
    # syscall here). Each lstat is relative to its directory (`listings`), and the signature
    # is built inline rather than through `_sig`.
    top = os.fspath(root)
    out: dict[str, Sig] = {"": _sig(os.lstat(top))}
    stack = [""]
    for prefix, entries in listings(top, stack, own=specials):
        for entry in entries:
            st = entry.stat(follow_symlinks=False)
            mode = st.st_mode
            kind = stat.S_IFMT(mode)
            if not specials and kind not in _KEPT:
                continue
            child = prefix + entry.name
            out[child] = (
                kind,
                st.st_ino,
                st.st_size,
                st.st_mtime_ns,
                st.st_ctime_ns,
                mode & 0o7777,
            )
            if kind == stat.S_IFDIR:
                stack.append(child)
    return out


@dataclass
class SyncStats:
    restored: int = 0  # files, links and directories put back from the base
    removed: int = 0  # entries the base does not have
    bytes: int = 0  # bytes copied


def _depth_key(rel: str) -> tuple[str, ...]:
    # Parents sort before their children, and a directory's whole subtree right after it.
    return tuple(rel.split("/")) if rel else ()


def _remove(path: str) -> None:
    if stat.S_ISDIR(os.lstat(path).st_mode):
        remove_tree(Path(path))  # read-only directories the measured code left included
    else:
        os.unlink(path)


def clone_file(src: str, dst: str) -> int:
    """Copy `src`'s bytes, mode and times to a new file `dst`: shared extents where the file
    system has reflink, a plain copy elsewhere; the bytes copied (0 for a clone)."""
    sfd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(sfd)
        dfd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            copied = 0
            try:
                fcntl.ioctl(dfd, FICLONE, sfd)
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EXDEV, errno.EINVAL, errno.ENOTTY):
                    raise
                while n := os.sendfile(dfd, sfd, None, 1 << 30):
                    copied += n
            os.fchmod(dfd, stat.S_IMODE(st.st_mode))
            os.utime(dfd, ns=(st.st_atime_ns, st.st_mtime_ns))
        finally:
            os.close(dfd)
    finally:
        os.close(sfd)
    return copied


class _Fixer:
    """The writes of one sync, below `copy`: parents opened for writing once each."""

    def __init__(self, base: Path, copy: Path) -> None:
        self.base, self.copy = os.fspath(base), os.fspath(copy)
        self.stats = SyncStats()
        self._opened: set[str] = set()

    def src(self, rel: str) -> str:
        return os.path.join(self.base, rel) if rel else self.base

    def dst(self, rel: str) -> str:
        return os.path.join(self.copy, rel) if rel else self.copy

    def open_parent(self, rel: str) -> None:
        # A read-only directory (the base's own, or one the measured code chmodded): the
        # runtime owns the copy, so it may write there; the directory's mode is put back last.
        parent = rel.rpartition("/")[0]
        if parent not in self._opened:
            self._opened.add(parent)
            path = self.dst(parent)
            mode = stat.S_IMODE(os.lstat(path).st_mode)
            if mode & 0o700 != 0o700:
                os.chmod(path, mode | 0o700)

    def remove(self, rel: str) -> None:
        self.open_parent(rel)
        _remove(self.dst(rel))
        self.stats.removed += 1

    def put(self, rel: str, kind: int) -> None:
        """Make `rel` (nothing there now, its parent a real directory) what the base has."""
        self.open_parent(rel)
        src, dst = self.src(rel), self.dst(rel)
        if kind == stat.S_IFLNK:
            os.symlink(os.readlink(src), dst)
        elif kind == stat.S_IFREG:
            tmp = os.path.join(os.path.dirname(dst), f".restore-{uuid.uuid4().hex}")
            try:
                self.stats.bytes += clone_file(src, tmp)
                os.rename(tmp, dst)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                raise
        else:
            os.mkdir(dst, 0o700)
        self.stats.restored += 1

    def dir_meta(self, rel: str) -> None:
        st = os.lstat(self.src(rel))
        os.chmod(self.dst(rel), stat.S_IMODE(st.st_mode))
        os.utime(self.dst(rel), ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)


def sync(
    base: Path, copy: Path, base_seen: dict[str, Sig], copy_seen: dict[str, Sig]
) -> tuple[dict[str, Sig], dict[str, Sig], SyncStats]:
    """Bring `copy` back to what `base` is now, touching only what moved since the manifests
    `base_seen` and `copy_seen` were taken (when the copy last equalled the base); the new
    manifests and what was done."""
    base_now, copy_now = scan(base), scan(copy, specials=True)
    _settle(base_now)  # a base that is written meanwhile (the user's tree) moves past it
    fix = _Fixer(base, copy)
    touched: set[str] = set()  # entries restored, and directories whose entries changed
    skip: str | None = None  # a subtree removed: nothing of the copy is left below it
    # Neither side moved: the copy still has what the base has. Only the rest is sorted. (The
    # entries that moved on either side, added or gone included, as set operations in C.)
    moved = {rel for rel, _ in base_now.items() ^ base_seen.items()}
    moved.update(rel for rel, _ in copy_now.items() ^ copy_seen.items())
    for rel in sorted(moved, key=_depth_key):
        b, c = base_now.get(rel), copy_now.get(rel)
        if skip is not None and rel.startswith(skip):
            c = None  # went with the subtree removed above it
        else:
            skip = None
        if c is not None and (b is None or b[0] != c[0] or b[0] != stat.S_IFDIR):
            if rel == "":
                raise OSError(errno.ENOTDIR, "the copy's root is not a directory", copy)
            fix.remove(rel)  # not the base's, or not a directory that can be fixed in place
            skip = rel + "/"
            c = None
        touched.add(rel.rpartition("/")[0])
        if b is None:
            continue
        if c is None:
            fix.put(rel, b[0])
        touched.add(rel)
    # Directories last, deepest first: their entries are right, now their mode and times.
    touched &= base_now.keys()  # not what was inside a subtree removed whole
    for rel in sorted(touched, key=_depth_key, reverse=True):
        if base_now[rel][0] == stat.S_IFDIR:
            fix.dir_meta(rel)
    copy_next = copy_now
    for rel in copy_now.keys() - base_now.keys():
        del copy_next[rel]  # removed above, with whatever was below it
    copy_next.update({rel: _sig(os.lstat(fix.dst(rel))) for rel in touched})
    _settle(copy_next)
    return base_now, copy_next, fix.stats


def _settle(manifest: dict[str, Sig]) -> None:
    """Wait until the clock has left the tick of the newest ctime recorded: a change made in
    that same coarse tick could otherwise carry the very ctime the manifest holds (a tree
    nothing wrote in the last tick costs no wait)."""
    newest = max(map(_CTIME, manifest.values()))
    while (wait := newest + _TICK_NS - time.time_ns()) > 0:
        time.sleep(wait / 1e9)


@dataclass
class _Copy:
    """A copy and its two manifests, packed (zlib over marshal: about 15 bytes an entry
    instead of about 340 as dicts of tuples): every private lane's copy is lent for the
    whole run, and unpacked only when it is given back and taken again."""

    path: Path
    packed: bytes
    brief: bool = False  # given back, kept only for a copy asked for in the same round

    @classmethod
    def of(
        cls, path: Path, base_seen: dict[str, Sig], copy_seen: dict[str, Sig], brief: bool
    ) -> _Copy:
        return cls(path, zlib.compress(marshal.dumps((base_seen, copy_seen)), 1), brief)

    def seen(self) -> tuple[dict[str, Sig], dict[str, Sig]]:
        base_seen, copy_seen = marshal.loads(zlib.decompress(self.packed))  # noqa: S302 - ours
        return base_seen, copy_seen


@dataclass
class CopyPool:
    """Copies of places kept under `root` between uses. `take` puts a copy equal to a base at
    a destination (reusing a returned one in O(changed), or snapshotting); `give` takes it
    back instead of removing it. A `brief` copy (a snapshot: its place is not asked for
    again and again, as measurement places are) is kept only for a copy `reserve`d before
    the next `evict`. Thread-safe: places are made in worker threads."""

    root: Path
    _free: dict[Path, list[_Copy]] = field(default_factory=dict)
    _lent: dict[Path, tuple[Path, _Copy]] = field(default_factory=dict)
    _reserved: dict[Path, _Copy] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    last: SyncStats | None = None  # what the latest `take` did (None: a whole snapshot)

    def reserve(self, base: Path, dest: Path) -> bool:
        """Set a kept copy of `base` aside for the `take` of `dest` (False: none is kept)."""
        with self._lock:
            free = self._free.get(base, [])
            if free and dest not in self._reserved:
                self._reserved[dest] = free.pop()
            return dest in self._reserved

    def evict(self) -> list[Path]:
        """Brief copies nothing reserved: no longer the pool's (the caller removes them)."""
        with self._lock:
            out = [c.path for free in self._free.values() for c in free if c.brief]
            for base, free in self._free.items():
                self._free[base] = [c for c in free if not c.brief]
        return out

    def take(self, base: Path, dest: Path, *, brief: bool = False) -> dict[str, Sig]:
        """Make `dest` (not there) a copy of `base`; `brief`: see the class. The manifest of
        `base` taken for it (what `overlay.place` compares a candidate with, rather than
        walking the base again)."""
        with self._lock:
            kept = self._reserved.pop(dest, None)
            free = self._free.get(base, [])
            if kept is None and free:
                kept = free.pop()
        if kept is not None:
            try:
                base_seen, copy_seen, self.last = sync(base, kept.path, *kept.seen())
                kept = _Copy.of(kept.path, base_seen, copy_seen, brief)
                os.rename(kept.path, dest)
            except OSError:  # a copy that cannot be brought back: a whole one instead
                with contextlib.suppress(OSError):
                    _remove(os.fspath(kept.path))
                kept = None
        if kept is None:
            base_seen = scan(base)  # before the copy: what moves during it is restored later
            _settle(base_seen)
            snapshot(base, dest)
            copy_seen = scan(dest, specials=True)
            _settle(copy_seen)
            kept = _Copy.of(dest, base_seen, copy_seen, brief)
            self.last = None
        with self._lock:
            self._lent[dest] = (base, kept)
        return base_seen

    def lent(self, path: Path) -> bool:
        with self._lock:
            return path in self._lent

    def give(self, path: Path) -> None:
        """Take back the copy `take` put at `path` (whatever was done in it since)."""
        with self._lock:
            base, kept = self._lent.pop(path)
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            _remove(os.fspath(path))  # not the copy any more: nothing to keep
            return
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        home = self.root / uuid.uuid4().hex
        os.rename(path, home)
        kept.path = home
        with self._lock:
            self._free.setdefault(base, []).append(kept)

    @staticmethod
    def remove(root: Path) -> None:
        """Remove the copies a previous engine kept (their manifests went with it)."""
        if os.path.lexists(root):
            _remove(os.fspath(root))
