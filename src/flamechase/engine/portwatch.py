"""Ports a turn listens on outside its lane's block: watched while the turn runs, said once.

A lane's namespace (engine/namespace) gives each turn a block of ports and the prompt tells
the agent to bind only those. Where the jail enforces the block (Landlock's TCP port rules,
ABI 4) a bind outside it fails and nothing is left to see here; elsewhere (an older kernel,
`sandbox=off`, turns outside lanes) nothing stops a hostile or careless agent from listening
on 8080 anyway, where another lane's server (or the user's) collides with it. So while a turn
runs, every `PERIOD` seconds, the runtime reads which TCP sockets listen on this machine
(`procs.sockets`), and for any outside the block that appeared since the turn started,
whether one of the turn's processes holds it (its process group and the token carriers that
left it). What it finds comes back with the turn (`TurnResult.ports_outside`) and the loop
says it once per lane and port: `Notice: lane-2 listened on port 8080, outside its block …`,
in the log and in `status`. The watch also writes each port to `ports-outside-block.txt` in
the turn's directory, so the agent (which may read its turn's files) can see it was noticed;
the runtime never reads that file back.

Not named: ports the kernel picks (a bind to port 0 lands in the ephemeral range, which no
block overlaps, so it cannot collide: CLIs' own helper servers do this), and turns in a
network namespace of their own (their ports cannot collide either: that is said instead). A
listener that lives less than `PERIOD` may go unseen; the scan is cheap when nothing new
listens (two reads of /proc/net) and reads the turn's processes only when something does.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path

from flamechase import procs
from flamechase.events.run import Notice
from flamechase.procs import sockets

__all__ = ["NOTICED_FILE", "PERIOD", "PortNotices", "PortWatch", "block_of"]

PERIOD = 1.0
NOTICED_FILE = "ports-outside-block.txt"


@dataclasses.dataclass(slots=True)
class PortWatch:
    """The watch over one turn's processes (made before its first process starts)."""

    block: range
    token: str
    since: int
    io_dir: Path
    groups: list[int] = dataclasses.field(default_factory=list)
    outside: set[int] = dataclasses.field(default_factory=set)
    own_netns: bool = False
    _known: set[int] = dataclasses.field(default_factory=set)  # inodes seen not the turn's
    _ours: str | None = None
    _ephemeral: range = range(0)

    @classmethod
    def of(cls, env: Mapping[str, str], io_dir: Path, since: int) -> PortWatch | None:
        """The watch of a turn whose environment names its block, else None."""
        block, token = block_of(env), env.get(procs.TOKEN_VAR)
        if block is None or not token:
            return None
        watch = cls(block, token, since, io_dir)
        watch._ours = sockets.netns()
        watch._ephemeral = sockets.ephemeral_range()
        watch._known = set(sockets.listening())  # listening before the turn: not its own
        return watch

    def spawned(self, pgid: int) -> None:
        self.groups.append(pgid)

    def scan(self) -> None:
        """One look: new listeners outside the block, and whether the turn holds them."""
        fresh = {
            inode: port
            for inode, port in sockets.listening().items()
            if inode not in self._known and port not in self.block and port not in self._ephemeral
        }
        if not fresh or not self.groups:
            return
        pids = {pid for pgid in self.groups for pid in procs.members(pgid, self.token, self.since)}
        held: set[int] = set()
        for pid in pids:
            ns = sockets.netns(pid)
            if ns is not None and self._ours is not None and ns != self._ours:
                self.own_netns = True
                continue
            held |= sockets.socket_inodes(pid) & fresh.keys()
        self._known |= fresh.keys() - held
        new = {fresh[i] for i in held} - self.outside
        if new:
            self.outside |= new
            self._tell(new)

    def _tell(self, ports: set[int]) -> None:
        with contextlib.suppress(OSError):
            fd = os.open(
                self.io_dir / NOTICED_FILE,
                os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
            )
            with os.fdopen(fd, "a") as f:
                f.write("".join(f"{p}\n" for p in sorted(ports)))

    async def run(self, period: float = PERIOD) -> None:
        """Scan every `period` seconds until cancelled."""
        while True:
            await asyncio.sleep(period)
            with contextlib.suppress(OSError):
                await asyncio.to_thread(self.scan)


@dataclasses.dataclass(slots=True)
class PortNotices:
    """What the loop says of the ports turns listened on: each lane's port once a session."""

    said: set[tuple[str, int]] = dataclasses.field(default_factory=set)

    def of(
        self, who: str, block: range | None, outside: tuple[int, ...], own_netns: bool
    ) -> list[Notice]:
        out: list[Notice] = []
        if own_netns and (who, -1) not in self.said:
            self.said.add((who, -1))
            out.append(
                Notice(
                    message=f"{who} runs in a network namespace of its own: its ports cannot "
                    "collide with other lanes', so its port block is not checked"
                )
            )
        for port in outside:
            if (who, port) in self.said:
                continue
            self.said.add((who, port))
            span = f"its block {block.start}-{block.stop - 1}" if block else "its block"
            out.append(
                Notice(
                    message=f"{who} listened on port {port}, outside {span}: another lane's "
                    "server may collide with it; bind servers and tests to "
                    "$FLAMECHASE_PORT_BASE .. $FLAMECHASE_PORT_BASE+$FLAMECHASE_PORT_COUNT-1"
                )
            )
        return out


def block_of(env: Mapping[str, str]) -> range | None:
    """The block a turn's environment names, if any."""
    try:
        base, count = int(env["FLAMECHASE_PORT_BASE"]), int(env["FLAMECHASE_PORT_COUNT"])
    except (KeyError, ValueError):
        return None
    return range(base, base + count)
