"""Which TCP ports a set of processes listens on, read from /proc (Linux).

A listening socket is a line of `/proc/PID/net/tcp` or `tcp6` in state LISTEN (`0A`) with
its inode; a process holds it when one of its `/proc/PID/fd/*` links reads `socket:[INODE]`.
The tables are those of the process's network namespace, so `netns` tells whether a process
shares ours (a port it listens on in a namespace of its own cannot collide with anyone's).

Everything here is read-only and bounded by what /proc shows: a process that is gone, or
whose descriptors we may not read, is skipped, never an error. Imports nothing else of
flamechase.
"""

from __future__ import annotations

import contextlib
import os

__all__ = ["ephemeral_range", "listening", "netns", "socket_inodes"]

_LISTEN = "0A"


def listening(pid: int | str = "self") -> dict[int, int]:
    """inode -> port of every TCP socket listening in `pid`'s network namespace."""
    out: dict[int, int] = {}
    for name in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{name}", "rb") as f:
                lines = f.read().decode("ascii", "replace").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != _LISTEN:
                continue
            with contextlib.suppress(ValueError, IndexError):
                port = int(fields[1].rsplit(":", 1)[1], 16)
                inode = int(fields[9])
                if inode:
                    out[inode] = port
    return out


def socket_inodes(pid: int) -> set[int]:
    """Inodes of the sockets `pid` holds open (empty if it is gone or not ours to read)."""
    found: set[int] = set()
    base = f"/proc/{pid}/fd"
    try:
        names = os.listdir(base)
    except OSError:
        return found
    for name in names:
        try:
            target = os.readlink(f"{base}/{name}")
        except OSError:
            continue
        if target.startswith("socket:[") and target.endswith("]"):
            with contextlib.suppress(ValueError):
                found.add(int(target[8:-1]))
    return found


def netns(pid: int | str = "self") -> str | None:
    """The network namespace of `pid` (`net:[4026531840]`), None if it cannot be read."""
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def ephemeral_range() -> range:
    """The ports the kernel picks from for a bind to port 0 (and outgoing connections)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", "rb") as f:
            low, high = (int(x) for x in f.read().split()[:2])
        return range(low, high + 1)
    except (OSError, ValueError):
        return range(32768, 61000)  # Linux's default
