"""One run per source tree: an advisory `flock` keyed by the source's resolved path.

Trees nest: a run on a directory inside or above a tree another live run holds is refused too
(both would write the same files). Once its own lock is taken, a run looks at every other held
lock; a holder whose tree is this one's ancestor or descendant, by path or by the directory's
device and inode (a bind mount, another spelling), makes it let go and refuse. Each of two
racing runs records itself before it looks, so at least one of them sees the other.

Owns: `SourceLock` (take, describe, release the lock file `<locks>/<sha256(path)>.lock`, which
holds the owner as JSON) and `owner` (who holds it, for `status`, without holding it).
Must not touch: the run database, the source tree, any file but the lock file.

The kernel drops a `flock` when the last descriptor of the open file goes away, so a run that
is SIGKILLed frees its source at once. The descriptor is O_CLOEXEC: agent processes never
inherit it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import stat
import time
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from flamechase.errors import LockHeld

__all__ = ["SourceLock", "lock_path", "owner", "source_key"]

_OWNER_LIMIT = 64 * 1024
_CONTENTION_RETRIES = 5
_CONTENTION_DELAY = 0.01


def source_key(source: Path) -> str:
    """sha256 (hex) of the resolved source path: the same tree gives the same key."""
    return hashlib.sha256(os.fsencode(Path(source).resolve())).hexdigest()


def lock_path(locks_dir: Path, source: Path) -> Path:
    return Path(locks_dir) / f"{source_key(source)}.lock"


def _read_owner(fd: int) -> dict[str, Any] | None:
    try:
        raw = os.pread(fd, _OWNER_LIMIT, 0)
        data = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _held_message(source: Path, info: dict[str, Any] | None) -> str:
    run = info.get("run_id") if info else None
    pid = info.get("pid") if info else None
    who = f"run {run}" if isinstance(run, str) and run else "owner not yet recorded"
    if isinstance(pid, int) and not isinstance(pid, bool):
        who += f", pid {pid}"
    return f"another flamechase run ({who}) owns source {source}; stop it first or wait for it"


class SourceLock:
    """The advisory lock on one source tree.

    `acquire(run_id)` or `with SourceLock(locks, src, run_id):` takes it (LockHeld if another
    process has it) and records `{run_id, pid, source, acquired_at}`; `release()` clears the
    record and frees it. Re-acquiring a lock this object already holds only rewrites the
    record. Dropping the object without `release()` keeps the lock until the process exits.
    """

    def __init__(self, locks_dir: Path, source: Path, run_id: str | None = None) -> None:
        self.locks_dir = Path(locks_dir)
        self.source = Path(source).resolve()
        self.path = lock_path(self.locks_dir, self.source)
        self.run_id = run_id
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def _open(self) -> int:
        self.locks_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(
                self.path,
                os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK,
                0o600,
            )
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise LockHeld(
                    f"lock file {self.path} is a symbolic link; remove it and run again"
                ) from None
            raise LockHeld(
                f"cannot open lock file {self.path} ({exc.strerror or exc}); "
                "check the state home's permissions"
            ) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise LockHeld(f"lock file {self.path} is not a regular file; remove it and run again")
        return fd

    def acquire(self, run_id: str | None = None) -> None:
        """Take the lock for `run_id` (or the one given at construction); LockHeld if taken."""
        if run_id is not None:
            self.run_id = run_id
        if self._fd is not None:
            self._write_owner()
            return
        fd = self._open()
        for attempt in range(_CONTENTION_RETRIES):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                # The holder may be a reader probing for a moment (`owner()`): look again a
                # few times before refusing. A real owner holds it for the whole run.
                if attempt + 1 < _CONTENTION_RETRIES:
                    time.sleep(_CONTENTION_DELAY)
                    continue
                info = _read_owner(fd)
                os.close(fd)
                raise LockHeld(_held_message(self.source, info)) from None
            except OSError as exc:
                os.close(fd)
                raise LockHeld(
                    f"cannot lock {self.path} ({exc.strerror or exc}); "
                    "use a state home on a local filesystem"
                ) from None
        self._fd = fd
        try:
            self._write_owner()
        except OSError:
            self.release()
            raise
        nested = _nested_holder(self.locks_dir, self.source, self.path)
        if nested is not None:
            self.release()
            raise LockHeld(nested)

    def _write_owner(self) -> None:
        assert self._fd is not None
        record = {
            "version": 1,
            "run_id": self.run_id,
            "pid": os.getpid(),
            "source": os.fspath(self.source),
            "acquired_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        data = json.dumps(record, sort_keys=True).encode("utf-8")
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)
        os.fsync(self._fd)

    def set_run_id(self, run_id: str) -> None:
        """Record a different run id in the held lock (e.g. once the run is created)."""
        self.run_id = run_id
        if self._fd is not None:
            self._write_owner()

    def release(self) -> None:
        """Clear the owner record and free the lock (the file stays). Safe to call twice."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> SourceLock:
        if self._fd is None:
            if self.run_id is None:
                raise ValueError("SourceLock needs a run_id to be used as a context manager")
            self.acquire(self.run_id)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _chain(path: Path) -> set[tuple[int, int]]:
    """(device, inode) of `path` and of each directory above it."""
    out = set()
    for p in (path, *path.parents):
        with contextlib.suppress(OSError):
            st = os.stat(p)
            out.add((st.st_dev, st.st_ino))
    return out


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _nests(mine: Path, theirs: Path) -> str | None:
    """ "inside" if `mine` lies in `theirs`, "above" if it holds it, "same" if it is that
    directory by another path, else None."""
    if mine == theirs:
        return None  # the same path: the lock file itself said so already
    if theirs in mine.parents:
        return "inside"
    if mine in theirs.parents:
        return "above"
    me, them = _identity(mine), _identity(theirs)
    if me is None or them is None:
        return None
    if me == them:
        return "same"  # the same directory by another path (a bind mount)
    if them in _chain(mine):
        return "inside"
    if me in _chain(theirs):
        return "above"
    return None


def _held_record(path: Path) -> dict[str, Any] | None:
    """The owner record of the lock file `path` if a live process holds it (`{}` if it wrote
    none yet), else None. Holds a shared lock for an instant only if the lock looks free."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_owner(fd) or {}
        except OSError:
            return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _nested_holder(locks_dir: Path, source: Path, own: Path) -> str | None:
    """The one-line refusal if a live run holds a tree inside or above `source`."""
    try:
        entries = sorted(p for p in locks_dir.iterdir() if p.suffix == ".lock" and p != own)
    except OSError:
        return None
    for path in entries:
        info = _held_record(path)
        other = info.get("source") if info else None
        if not isinstance(other, str) or not other:
            continue
        where = _nests(source, Path(other))
        if where is None:
            continue
        assert info is not None
        run, pid = info.get("run_id"), info.get("pid")
        who = f"run {run}" if isinstance(run, str) and run else "an unrecorded run"
        if isinstance(pid, int) and not isinstance(pid, bool):
            who += f", pid {pid}"  # what to stop it by, where its terminal is not at hand
        place = {
            "inside": f"{source} is inside it",
            "above": f"it is inside {source}",
            "same": f"{source} is that directory by another path",
        }[where]
        return (
            f"another flamechase run ({who}) owns {other} and {place}; both would write the "
            "same files: stop it first or wait for it"
        )
    return None


def owner(locks_dir: Path, source: Path) -> dict[str, Any] | None:
    """Who holds the lock on `source`: its owner record, `{}` if held but unrecorded, or None.

    Never creates anything; holds a shared lock for an instant only if the lock looks free.
    """
    return _held_record(lock_path(Path(locks_dir), Path(source)))
