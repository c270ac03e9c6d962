"""Small, careful file primitives shared by the runtime: durable replacement and bounded reads.

Owns: `fsync_dir`, `atomic_write` (temp file in the same directory, fsync, rename, fsync the
directory; a symlink at the target is refused, never written through) and `read_regular_file`
(no symlink at the final component, regular files only, bounded size, never blocks on a FIFO).
Must not touch: the run database, the workspace copies, anything flamechase-specific. It imports
nothing of flamechase so every other module may use it.

Refusals raise `FileRefused` (a `ValueError`) with a one-line reason naming the path. Genuine I/O
failures while writing (disk full, permission denied) propagate as `OSError` from `atomic_write`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import uuid
from pathlib import Path

__all__ = [
    "FileRefused",
    "atomic_write",
    "fsync_dir",
    "private_dirs",
    "read_regular_file",
    "real_dir",
    "write_new",
]

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_BLOCK = 1024 * 1024


class FileRefused(ValueError):
    """A file was refused: a link, not a regular file, too large, missing or unreadable.

    `path` is the path at fault and `reason` the short reason; `str()` is one line.
    """

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


def kind_of(mode: int) -> str:
    """What a non-regular file is, for messages: 'a symbolic link', 'a FIFO', ..."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Flush a directory's entries (after a create, rename or unlink in it) to disk."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(
    path: str | os.PathLike[str],
    data: bytes,
    mode: int = 0o600,
    *,
    durable: bool = True,
    replace_odd: bool = False,
) -> None:
    """Replace `path` with `data`: readers see the old file or the new one, never half.

    The bytes go to a fresh temp file in the same directory (created O_EXCL|O_NOFOLLOW, chmod'ed
    to `mode` whatever the umask), renamed over `path`; `durable`: the file and the directory
    are fsynced too (skip it for inputs rebuilt when lost). If `path` is a symlink or not a
    regular file, `FileRefused` is raised and nothing changes, unless `replace_odd` (a file an
    agent may have planted a link at): then it is replaced, never written through. A link that
    appears after the check is replaced by the rename either way. The parent directory itself
    is trusted (control-path guards cover it). The one routine for writing a file whole.
    """
    target = Path(path)
    parent = target.parent
    name = target.name
    if not name or name in {".", ".."}:
        raise FileRefused(target, "is not a file name")
    dir_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            pass
        else:
            if stat.S_ISDIR(st.st_mode) or not (stat.S_ISREG(st.st_mode) or replace_odd):
                raise FileRefused(target, f"is {kind_of(st.st_mode)}; refusing to replace it")
        tmp = f".{name}.{uuid.uuid4().hex}.tmp"
        fd = os.open(
            tmp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
            dir_fd=dir_fd,
        )
        try:
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fchmod(fd, mode)
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
        if durable:
            os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def read_regular_file(path: str | os.PathLike[str], limit: int) -> bytes:
    """Read a whole regular file of at most `limit` bytes, refusing anything else.

    The final component must not be a symlink (O_NOFOLLOW); the file must be regular (a FIFO,
    socket or device is refused without being read, so this never blocks); more than `limit`
    bytes, by fstat or by what a growing file actually yields, is refused. Every failure,
    including a missing file, raises `FileRefused`.
    """
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        raise FileRefused(path, "does not exist") from None
    except OSError as exc:
        raise FileRefused(path, f"cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(before.st_mode):
        raise FileRefused(path, f"is {kind_of(before.st_mode)}, not a regular file")
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileRefused(path, "is a symbolic link, not a regular file") from None
        if exc.errno == errno.ENOENT:
            raise FileRefused(path, "does not exist") from None
        raise FileRefused(path, f"cannot be read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileRefused(path, f"is {kind_of(st.st_mode)}, not a regular file")
        if (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
            raise FileRefused(path, "was replaced while being opened")
        if st.st_size > limit:
            raise FileRefused(path, f"is {st.st_size} bytes, over the {limit}-byte limit")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(_BLOCK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise FileRefused(path, f"grew past the {limit}-byte limit while being read")
        return b"".join(chunks)
    except OSError as exc:
        raise FileRefused(path, f"cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def real_dir(path: str | os.PathLike[str], mode: int = 0o700) -> None:
    """`mkdir -p path`, where a link or file planted at the last component is removed first.

    For directories inside a tree an agent may write (its lane directory): `mkdir(exist_ok)`
    alone accepts a symlink to a directory anywhere, and what is then written "into" it lands
    there. The parents are trusted (control-path guards cover them).
    """
    target = Path(path)
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        os.unlink(target)
    target.mkdir(mode=mode, parents=True, exist_ok=True)


def private_dirs(path: str | os.PathLike[str], top: str | os.PathLike[str]) -> None:
    """`mkdir -p path` below `top` with every missing directory owner-only (0700), not just
    the last (`mkdir(parents=True)` gives the parents the umask's mode)."""
    target, root = Path(path), Path(top)
    missing = [p for p in (target, *target.parents) if root in p.parents and not p.exists()]
    for d in reversed(missing):
        d.mkdir(mode=0o700, exist_ok=True)


def write_new(path: str | os.PathLike[str], data: bytes, mode: int = 0o600) -> None:
    """Write `data` to `path` as a new file of `mode`; whatever was there is removed first.

    Never writes through a link or into a FIFO planted at `path` (O_EXCL|O_NOFOLLOW); not
    durable (no fsync): for inputs that are rebuilt when lost.
    """
    target = Path(path)
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(target)
        else:
            os.unlink(target)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
