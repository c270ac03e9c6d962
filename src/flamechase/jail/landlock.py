"""The Landlock fallback: writes confined to the grants, signals scoped where the kernel can.

Landlock (Linux >= 5.13) confines a process tree without privileges or namespaces, which is
why it is the fallback where bubblewrap cannot create namespaces. What it cannot do is said in
`coverage`: it has no rights for metadata (chmod, chown, utime, xattr), does not hide reads,
and has no PID namespace; ABI 6 (Linux 6.12) adds the scoping that keeps a jailed process from
signalling, or connecting to the abstract sockets of, anything outside its own turn.

Landlock also keeps a lane's turns to their port block (`JailSpec.ports`, ABI 4, Linux 6.7:
binding a TCP port outside it fails with EACCES; port 0, connecting and UDP stay free), under
either jail: here in the launcher's ruleset, under bubblewrap through the launcher's
network-only form inside the jail (`net_argv`). On an older kernel the block is only advised.

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
# The launcher is imported, not run as a script: a script is compiled at every start, a
# module comes from its cached bytecode (written at install, or by the first unjailed start),
# a fifth of the launcher's start-up. Its directory goes last on the path: nothing there
# shadows what it imports. The cache is the installation's, never writable by a jail.
BOOT = (
    f"import sys; sys.path.append({str(LAUNCHER.parent)!r}); from landlock_exec import main; main()"
)
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
NET_ABI = 4  # TCP bind (and connect) rules


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


def enforces_ports() -> bool:
    """Whether this kernel can keep a process to a block of TCP ports."""
    return landlock_abi() >= NET_ABI


def _ports(spec: JailSpec) -> list[str]:
    if spec.ports is None or not enforces_ports():
        return []
    first, count = spec.ports
    return ["--ports", f"{first}:{count}"]


def net_argv(argv: list[str], spec: JailSpec) -> list[str] | None:
    """`argv` under the launcher's network-only form (binds in the spec's port block), or
    None when there is nothing to enforce here. One interpreter start, which execs `argv`."""
    ports = _ports(spec)
    if not ports:
        return None
    return [sys.executable, "-I", "-S", "-c", BOOT, "--net-only", *ports, "--", *argv]


def landlock_argv(argv: list[str], spec: JailSpec) -> list[str]:
    """`argv` under the launcher: writes only beneath the spec's grants, signals scoped,
    TCP binds in the spec's port block where the kernel can."""
    out = [sys.executable, "-I", "-S", "-c", BOOT, *_ports(spec)]
    grants = outermost(safe_grants(spec.wanted(), spec.protected))
    for path in grants:
        out += ["--write", str(path)]
    for dev in DEVICES:
        if os.path.exists(dev):
            out += ["--write", dev]
    if spec.home is not None:
        out += ["--home", str(spec.home.resolve())]
    return [*out, "--", *argv]
