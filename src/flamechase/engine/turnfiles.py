"""What a turn leaves under lanes/*/turns once it is recorded: less, and compressed.

A turn's directory holds its prompt, the agent's report and usage, the inbox it was given and
(for CLI agents) its gzipped transcript, one file system block or more each, for as long as
the run is kept. Once the turn's outcome is committed, a valid turn's `report.json` goes: its
report is the turn's row in the run database (`turns.report`). A failed turn's report stays
(what the agent wrote that could not be read is the evidence); it, the prompt and the usage
are gzipped in place (`prompt.md.gz`, read with `zcat`). `inbox.json` is kept as it is: it
is what the delivery audit reads. The directory is the agent's to write while it runs, so
nothing here follows a link or reads other than a bounded regular file, and every step is
relative to the directory opened once without following links; a file it cannot settle is
left as it was.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import stat
from pathlib import Path

# Files gzipped in place; larger ones (an agent's, not ours) are left alone.
COMPRESSED = ("prompt.md", "usage.json", "report.json")
LIMIT = 64 << 20
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def settle(io_dir: Path, *, valid: bool) -> None:
    """Drop what the run database records and gzip the rest of a recorded turn's files."""
    try:
        dfd = os.open(io_dir, _DIR)
    except OSError:
        return
    try:
        if valid:
            with contextlib.suppress(OSError):
                if stat.S_ISREG(os.lstat("report.json", dir_fd=dfd).st_mode):
                    os.unlink("report.json", dir_fd=dfd)
        for name in COMPRESSED:
            with contextlib.suppress(OSError):
                _gzip(dfd, name)
    finally:
        os.close(dfd)


def _gzip(dfd: int, name: str) -> None:
    fd = os.open(name, _READ, dir_fd=dfd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > LIMIT:
            return
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(LIMIT + 1)
    finally:
        os.close(fd)
    if len(data) > LIMIT:
        return
    tmp = f".{name}.gz.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp, dir_fd=dfd)
    out = os.open(tmp, _WRITE, 0o600, dir_fd=dfd)
    try:
        with os.fdopen(out, "wb") as f:
            f.write(gzip.compress(data, mtime=0))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise
    os.replace(tmp, f"{name}.gz", src_dir_fd=dfd, dst_dir_fd=dfd)
    os.unlink(name, dir_fd=dfd)
