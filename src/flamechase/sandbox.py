"""Confining a lane's agent: writes allowed only under its own directories (Landlock).

Lanes 2..N must not write the user's tree, the run database, the report store, the frozen
artifacts or another lane's files. Landlock (Linux >= 5.13) enforces that per process tree,
unprivileged. Landlock cannot carve a read-only hole in a writable tree, so a grant that
contains the source tree or the state home is dropped, never widened: each sandboxed lane
gets a private TMPDIR instead of /tmp. Imports nothing else of flamechase.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from collections.abc import Iterable
from pathlib import Path

LAUNCHER = Path(__file__).with_name("sandbox_exec.py")
# Device files agents legitimately write.
DEVICES = ("/dev/null", "/dev/zero", "/dev/tty", "/dev/full", "/dev/random", "/dev/urandom",
           "/dev/pts", "/dev/shm")  # noqa: S108 -- a grant, not a temp file we create


@functools.cache
def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when unavailable."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        abi = int(libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1)))
    except (OSError, AttributeError):
        return 0
    return max(abi, 0)


def _contains(outer: Path, inner: Path) -> bool:
    try:
        inner.relative_to(outer)
    except ValueError:
        return False
    return True


def safe_grants(wanted: Iterable[Path], protected: Iterable[Path]) -> list[Path]:
    """The grants of `wanted` that contain none of `protected` (nor sit inside them unless
    explicitly wanted there): a grant over the source would make it writable."""
    prot = [p.resolve() for p in protected]
    out: list[Path] = []
    for w in wanted:
        r = w.resolve()
        if not r.exists():
            continue
        if any(_contains(r, p) for p in prot):
            continue
        out.append(r)
    return out


def wrap(argv: list[str], writable: Iterable[Path]) -> list[str]:
    """`argv` run under the launcher with writes allowed only beneath `writable`."""
    out = [sys.executable, "-I", "-S", str(LAUNCHER)]
    for path in writable:
        out += ["--write", str(path)]
    for dev in DEVICES:
        if os.path.exists(dev):
            out += ["--write", dev]
    return [*out, "--", *argv]
