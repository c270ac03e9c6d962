"""The Landlock fallback: writes confined to the grants, signals scoped where the kernel can.

Landlock (Linux >= 5.13) confines a process tree without privileges or namespaces, which is
why it is the fallback where bubblewrap cannot create namespaces. What it cannot do is said in
`coverage`: it has no rights for metadata (chmod, chown, utime, xattr), does not hide reads,
and has no PID namespace; ABI 6 (Linux 6.12) adds the scoping that keeps a jailed process from
signalling, or connecting to the abstract sockets of, anything outside its own turn.

The rules are applied by `landlock_exec.py`, run as a separate dependency-free interpreter, so
they never touch the engine and nothing runs between fork and exec in a threaded parent.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from pathlib import Path

from flamechase.jail.spec import JailSpec, outermost, safe_grants

LAUNCHER = Path(__file__).with_name("landlock_exec.py")
# Device files agents legitimately write.
DEVICES = (
    "/dev/null",
    "/dev/zero",
    "/dev/tty",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/pts",
    "/dev/shm",  # noqa: S108 -- a grant, not a temp file we create
)
SCOPE_ABI = 6  # signal and abstract-unix-socket scoping


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


def landlock_argv(argv: list[str], spec: JailSpec) -> list[str]:
    """`argv` under the launcher: writes only beneath the spec's grants, signals scoped."""
    out = [sys.executable, "-I", "-S", str(LAUNCHER)]
    grants = outermost(safe_grants(spec.wanted(), spec.protected))
    for path in grants:
        out += ["--write", str(path)]
    for dev in DEVICES:
        if os.path.exists(dev):
            out += ["--write", dev]
    if spec.home is not None:
        out += ["--home", str(spec.home.resolve())]
    return [*out, "--", *argv]
