"""Port blocks: a block of TCP ports per lane that no other lane of a live run here uses.

Owns `<state home>/ports.json` (which block each run's lane holds, and the engine process
that last used it) and its lock `<state home>/locks/ports.lock` (an advisory `flock`, so a
SIGKILLed engine frees it at once). Must not touch: run databases, copies, anything else.

A lane keeps its block for as long as its entry stands, so its turns and its resumes see
the same ports (a dev server's URL in a lane's notes stays right). An entry is given up only
when its run is removed (`release_run`), or when every block is held and the entry's engine
is gone (not running now: `pid` with its start time, so a reused pid does not count as it).
A block is also skipped when something already listens on one of its ports: a hostile lane
or another program squatting there must not be handed to the next lane as free.

The registry is one state home's; runs of other state homes (another user's, a test's) share
the machine's ports. So the engine that hands a lane a block also claims it on the machine,
for as long as it runs the lane's run: an abstract Unix socket named after the block
(`@flamechase/ports/BASE`; abstract names are machine-wide within a network namespace, as
ports are, need no file, and are given back by the kernel when the engine dies). A block
another live engine claims is never handed out; a lane whose block was claimed elsewhere
while its run was not running gets a free one on resume.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flamechase.errors import PortsExhausted
from flamechase.fsutil import atomic_write, read_regular_file
from flamechase.store.home import ensure_private_dir, locks_dir, state_home

__all__ = ["FIRST", "LAST", "SIZE", "PortBlock", "allocate", "held", "let_go", "release_run"]

# Below Linux's ephemeral range (32768-60999), so a client's outgoing connection is never
# given a port of some lane's block.
FIRST = 20000
LAST = 32767
SIZE = 20
_REGISTRY_LIMIT = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class PortBlock:
    base: int
    count: int

    @property
    def ports(self) -> range:
        return range(self.base, self.base + self.count)


def _registry(home: Path) -> Path:
    return home / "ports.json"


@contextlib.contextmanager
def _locked(home: Path) -> Iterator[None]:
    path = ensure_private_dir(locks_dir(home)) / "ports.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _load(home: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(read_regular_file(_registry(home), _REGISTRY_LIMIT))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return {}  # unreadable: start again (entries are re-made on each lane's next turn)
    if not isinstance(data, dict):
        return {}
    return {
        k: v
        for k, v in data.items()
        if isinstance(v, dict) and isinstance(v.get("base"), int) and isinstance(k, str)
    }


def _save(home: Path, entries: dict[str, dict[str, Any]]) -> None:
    # Not fsynced (a lane's first turn waits on it): only a machine crash can lose it, which
    # ends every lane that held a block too, and an unreadable registry is started afresh.
    atomic_write(
        _registry(home), json.dumps(entries, indent=1, sort_keys=True).encode(), durable=False
    )


def _started(pid: int) -> str | None:
    """The kernel's start time of `pid` (None if it is not running)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return "?"
        return "?"
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    fields = raw[raw.rfind(b")") + 2 :].split()
    return fields[19].decode() if len(fields) > 19 else "?"


def _alive(entry: dict[str, Any]) -> bool:
    pid = entry.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    now = _started(pid)
    return now is not None and (now == "?" or now == entry.get("started"))


def _listened(block: PortBlock) -> bool:
    """Whether something already listens on a port of `block` (on the loopback or any)."""
    for port in block.ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            # SO_REUSEADDR: a port in TIME_WAIT is free; a listener still refuses the bind.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return True
    return False


def _key(run_id: str, slot: str) -> str:
    return f"{run_id}/{slot}"


# The blocks this process claims on the machine: base -> (its socket, the run it is for).
_CLAIMED: dict[int, tuple[socket.socket, str]] = {}


def _claim(base: int, run_id: str) -> bool:
    """Claim `base` on the machine for `run_id` (True), unless another process holds it."""
    held = _CLAIMED.get(base)
    if held is not None:
        return held[1] == run_id
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind(f"\0flamechase/ports/{base}")
    except OSError:
        s.close()
        return False
    _CLAIMED[base] = (s, run_id)
    return True


def _unclaim(base: int) -> None:
    held = _CLAIMED.pop(base, None)
    if held is not None:
        held[0].close()


def let_go(run_id: str) -> None:
    """Give up this process's machine claims for `run_id` (its engine is done with it); the
    registry keeps its blocks, which its next engine claims again."""
    for base in [b for b, (_, r) in _CLAIMED.items() if r == run_id]:
        _unclaim(base)


def allocate(run_id: str, slot: str, *, home: Path | None = None) -> PortBlock:
    """The block of `slot` (a lane, or `@role`) of run `run_id`: the one it holds, else a
    free one, recorded under this engine process."""
    root = home or state_home()
    me = {"pid": os.getpid(), "started": _started(os.getpid())}
    with _locked(root):
        entries = _load(root)
        key = _key(run_id, slot)
        entry = entries.get(key)
        if entry is not None and not _claim(int(entry["base"]), run_id):
            # Claimed by a live engine of another state home while this run was stopped.
            del entries[key]
            entry = None
        if entry is None:
            base = _free_base(entries, run_id, slot)
            entry = {"base": base, "run_id": run_id, "slot": slot}
        if any(entry.get(k) != v for k, v in me.items()):
            # Written only when it changes (a new block, a resumed engine): a lane's next
            # turn in the same engine costs a read, not an fsync.
            entry.update(me)
            entries[key] = entry
            _save(root, entries)
        return PortBlock(int(entry["base"]), SIZE)


def _free_base(entries: dict[str, dict[str, Any]], run_id: str, slot: str) -> int:
    for reclaim in (False, True):
        if reclaim:
            # Every block is held: give up those whose engines are gone.
            for k in [k for k, v in entries.items() if not _alive(v)]:
                del entries[k]
        taken = {int(v["base"]) for v in entries.values()}
        for base in _search_order(_key(run_id, slot)):
            if base in taken or not _claim(base, run_id):
                continue
            if not _listened(PortBlock(base, SIZE)):
                return base
            _unclaim(base)
    raise PortsExhausted(
        f"every port block of {FIRST}-{LAST} is held by a live lane or in use; "
        "stop a run or free the ports"
    )


def _search_order(key: str) -> list[int]:
    """Every block's base, starting at one picked by `key`'s hash and going round. Were every
    new lane to take the lowest free block, a block an engine gives back when it dies (a
    SIGKILL, a crash) would be the very next one any run on the machine is handed, and its
    lane would come back from the resume on other ports; spread this way, a new lane lands on
    a given freed block about once in the range's 638 blocks."""
    bases = list(range(FIRST, LAST - SIZE + 2, SIZE))
    start = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % len(bases)
    return bases[start:] + bases[:start]


def held(run_id: str, *, home: Path | None = None) -> dict[str, PortBlock]:
    """The blocks run `run_id`'s lanes hold, by slot (for `status`)."""
    root = home or state_home()
    with _locked(root):
        entries = _load(root)
    return {
        str(v.get("slot")): PortBlock(int(v["base"]), SIZE)
        for v in entries.values()
        if v.get("run_id") == run_id
    }


def release_run(run_id: str, *, home: Path | None = None) -> None:
    """Give up every block of run `run_id` (its run is being removed)."""
    root = home or state_home()
    with _locked(root):
        entries = _load(root)
        kept = {k: v for k, v in entries.items() if v.get("run_id") != run_id}
        if kept != entries:
            _save(root, kept)
