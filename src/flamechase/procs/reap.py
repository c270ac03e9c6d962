"""The reaper: finding and ending processes by group and by token, now or in the background.

A process group id recorded by a dead engine may since have been reused by an unrelated
program, so a group is signalled only when one of its members still carries the turn's token
in its environment (or the caller knows the group leader is not yet reaped). Stray token
carriers (daemons that left the group) are ended too.

`Reaper` batches the sweep for escaped descendants of finished turns into one pass over /proc
every SWEEP_PERIOD seconds: a pass per turn would cost every turn milliseconds of CPU beside
the control loop. The engine owns one reaper per run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time

TOKEN_VAR = "FLAMECHASE_PROC_TOKEN"  # noqa: S105 -- a variable name, not a secret
KILL_GRACE = 5.0
SWEEP_PERIOD = 1.0


_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def boot_ticks() -> int:
    """Now, in clock ticks since boot (the unit of /proc/PID/stat's start time)."""
    try:
        with open("/proc/uptime", "rb") as f:
            return int(float(f.read().split()[0]) * _CLK_TCK)
    except (OSError, ValueError, IndexError):
        return 0


def _proc_entries() -> list[tuple[int, int, str, int]]:
    """(pid, pgid, state, start ticks) of every process we can see."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
        except OSError:
            continue
        rest = stat[stat.rfind(")") + 2 :].split()
        if len(rest) < 20:
            continue
        out.append((int(name), int(rest[2]), rest[0], int(rest[19])))
    return out


def _has_token(pid: int, token: str) -> bool:
    needle = f"{TOKEN_VAR}={token}".encode()
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return needle in f.read().split(b"\0")
    except OSError:
        return False


def _scan(
    pgid: int | None, token: str, trust_group: bool = False, since: int = 0
) -> tuple[list[int], bool]:
    """Live members, and whether group `pgid` is ours.

    Unless `trust_group` (the caller knows the leader is not yet reaped, so the number cannot
    have been reused), the group is ours only if one of its members carries the token: after
    the leader was reaped, its number may belong to an unrelated group.
    """
    me = os.getpid()
    found = []
    group_ours = trust_group and pgid is not None
    strangers = []
    for pid, group, state, started in _proc_entries():
        if pid == me or state in ("Z", "X"):
            continue
        # A process older than the token cannot carry it: skip reading its environment
        # (reading every process's environment costs milliseconds per turn on a busy box).
        if started + 1 >= since and _has_token(pid, token):
            found.append(pid)
            group_ours = group_ours or (pgid is not None and group == pgid)
        elif pgid is not None and group == pgid:
            strangers.append(pid)
    if group_ours:
        found.extend(strangers)
    return found, group_ours


def members(pgid: int | None, token: str, since: int = 0) -> list[int]:
    """`live_members`, reading the environment only of processes started after boot tick
    `since` (an older one cannot carry the token): cheap enough to ask while a turn runs."""
    return _scan(pgid, token, since=since)[0]


def live_members(pgid: int | None, token: str) -> list[int]:
    """Non-zombie processes carrying `token`, plus the rest of group `pgid` when that group
    is ours (some member carries the token)."""
    return _scan(pgid, token)[0]


def _signal_all(pgid: int | None, pids: list[int], sig: int) -> None:
    if pgid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


async def end_group(
    pgid: int | None,
    token: str,
    *,
    grace: float = KILL_GRACE,
    trust_group: bool = False,
    since: int = 0,
) -> bool:
    """TERM, wait up to `grace`, KILL. Returns whether anything had to be signalled.

    `trust_group`: signal group `pgid` even if no member carries the token (see `_scan`).
    """
    members, ours = _scan(pgid, token, trust_group, since)
    if not members:
        return False
    group = pgid if ours else None
    _signal_all(group, members, signal.SIGTERM)
    _signal_all(group, members, signal.SIGCONT)  # a stopped process cannot act on TERM
    end = time.monotonic() + grace
    while time.monotonic() < end:
        await asyncio.sleep(min(0.05, max(end - time.monotonic(), 0.0)))
        members, ours = _scan(pgid, token, trust_group, since)
        if not members:
            return True
    # KILL until nothing is left: a process may fork between a scan and a signal.
    for _ in range(100):
        members, ours = _scan(pgid, token, trust_group, since)
        if not members:
            break
        _signal_all(pgid if ours else None, members, signal.SIGKILL)
        await asyncio.sleep(0.02)
    return True


def _group_empty(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


class Reaper:
    """Sweeps the tokens of finished turns for escaped descendants, in the background."""

    def __init__(self, period: float = SWEEP_PERIOD) -> None:
        self.period = period
        self._pending: dict[str, tuple[int, float]] = {}
        self._task: asyncio.Task[None] | None = None

    def later(self, token: str, since: int, grace: float) -> None:
        """Sweep `token` soon (a process older than boot tick `since` cannot carry it)."""
        self._pending[token] = (since, grace)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._run())

    def pending(self) -> set[str]:
        """Tokens not yet swept."""
        return set(self._pending)

    async def _sweep(self) -> None:
        # Tokens leave the queue only once swept, so a cancelled pass loses none of them.
        batch = dict(self._pending)
        if not batch:
            return
        carriers = await asyncio.to_thread(find_carriers, set(batch))
        for token in carriers:
            since, grace = batch[token]
            await end_group(None, token, grace=grace, since=since)
        for token in batch:
            self._pending.pop(token, None)

    async def _run(self) -> None:
        while self._pending:
            await asyncio.sleep(self.period)
            await self._sweep()

    async def settle(self) -> None:
        """Sweep everything pending now and wait for it (before the run ends)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        await self._sweep()


def find_carriers(tokens: set[str]) -> dict[str, list[int]]:
    """Live processes carrying any of `tokens`, in one pass over /proc."""
    me = os.getpid()
    found: dict[str, list[int]] = {}
    prefix = f"{TOKEN_VAR}=".encode()
    for pid, _group, state, _started in _proc_entries():
        if pid == me or state in ("Z", "X"):
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        for item in env:
            if item.startswith(prefix):
                tok = item[len(prefix) :].decode("ascii", "replace")
                if tok in tokens:
                    found.setdefault(tok, []).append(pid)
    return found


def end_group_now(pgid: int | None, token: str) -> None:
    """Synchronous hard kill, for resume clean-up of a crashed engine's leftovers."""
    for _ in range(10):
        members, ours = _scan(pgid, token)
        if not members:
            return
        _signal_all(pgid if ours else None, members, signal.SIGKILL)
        time.sleep(0.02)
