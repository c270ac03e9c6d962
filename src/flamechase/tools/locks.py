"""An exclusive measurement lock for a run (`flamechase lock`): performance gates measure alone.

The lock is an `flock` on a directory every jail can see, read-only: the run's directory
(`$FLAMECHASE_RUN_DIR`), or `--dir`. `flock` needs no write access, and the kernel drops it
when the holding process dies, so a crashed or jailed-and-torn-down holder frees it.

- `run --who X --max S -- CMD`: hold the lock while CMD runs (at most S seconds: then CMD's
  group is ended, rc 124), release it; CMD never runs unlocked. Nested calls pass through
  (`FLAMECHASE_LOCK_HELD`), so a holder's child never waits on its parent.
- `acquire --who X --max S`: a detached holder process takes the lock and keeps it until
  `release`, or for S seconds at most (the expiry), or until its turn ends.
- Waiting is bounded (`--wait`, default 1800 s): on timeout nothing ran, exit 75.

The runtime's own gates go first. While one needs the lock the runtime keeps a claim in the
locked directory (`flamechase-runtime-claim.json`, which only the runtime can write there: the
run's directory is read-only to every jail): no agent takes the lock while it is there, a
`run` holder ends its CMD's group (exit 76) and an `acquire` holder lets go (its `release` then
exits 76). The runtime waits a bounded grace for the flock (`engine.measurelock`) and then runs
its gate all the same: a process that holds the flock by other means delays a gate by at most
that grace, never fails it.

Who holds it is stamped in `<lane dir>/locks/<dir hash>.json` (the holder's own lane, readable
by every other lane), which `status` reads; the stamp is advice, the flock is the truth.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flamechase.errors import MachineWorkError
from flamechase.fsutil import atomic_write, read_regular_file
from flamechase.interpreter import runtime_module

__all__ = [
    "EXIT_PREEMPTED",
    "EXIT_TIMEOUT",
    "LockError",
    "acquire",
    "claim",
    "claimed",
    "lock_dir",
    "release",
    "run",
    "status",
    "try_take",
    "unclaim",
]

EXIT_TIMEOUT = 75  # EX_TEMPFAIL: the lock was not had in time; nothing ran
EXIT_PREEMPTED = 76  # one of the runtime's gates needed the lock: the hold was ended
HELD_VAR = "FLAMECHASE_LOCK_HELD"
MAX_HOLD = 900.0
CLAIM = "flamechase-runtime-claim.json"
POLL = 0.05  # seconds between looks at the lock and the runtime's claim
STAMP_LIMIT = 64 * 1024


class LockError(MachineWorkError):
    """A lock command that cannot be done: one line."""


def lock_dir(given: str | None, env: Mapping[str, str]) -> Path:
    path = given or env.get("FLAMECHASE_LOCK_DIR") or env.get("FLAMECHASE_RUN_DIR")
    if not path:
        raise LockError("no lock to take: run inside a flamechase turn or pass --dir")
    if not Path(path).is_dir():
        raise LockError(f"lock directory {path} does not exist")
    return Path(path)


def _stamp_path(target: Path, env: Mapping[str, str]) -> Path:
    run, lane = env.get("FLAMECHASE_RUN_DIR"), env.get("FLAMECHASE_LANE")
    home = (
        Path(run) / "lanes" / lane / "locks"
        if run and lane
        else Path(env.get("TMPDIR") or "/tmp") / "flamechase-locks"  # noqa: S108
    )
    tag = hashlib.sha256(str(target.resolve()).encode()).hexdigest()[:16]
    return home / f"{tag}.json"


def _read_json(path: Path) -> dict[str, Any] | None:
    """A small JSON object from a regular file (never a FIFO that would block), or None."""
    try:
        data = json.loads(read_regular_file(path, STAMP_LIMIT))
    except (OSError, ValueError):  # FileRefused is a ValueError
        return None
    return data if isinstance(data, dict) else None


def claimed(target: Path) -> dict[str, Any] | None:
    """The runtime's claim on the lock of `target` (who, since), or None."""
    if not os.path.lexists(target / CLAIM):
        return None
    return _read_json(target / CLAIM) or {"who": "runtime"}


def claim(target: Path, who: str) -> None:
    """The runtime needs the lock of `target` (written by the runtime only)."""
    atomic_write(
        target / CLAIM, json.dumps({"who": who, "since": time.time()}).encode(), mode=0o644
    )


def unclaim(target: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (target / CLAIM).unlink()


def try_take(target: Path) -> int | None:
    """An fd holding the flock on `target` now, or None (held, or `target` gone)."""
    try:
        fd = os.open(target, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _take(target: Path, wait: float) -> int | None:
    """An fd holding the lock on `target`, or None after `wait` seconds. Never while the
    runtime claims it: its gates go first."""
    deadline = time.monotonic() + wait
    while True:
        if claimed(target) is None:
            fd = try_take(target)
            if fd is not None:
                if claimed(target) is None:
                    return fd
                os.close(fd)  # the runtime asked meanwhile
        if time.monotonic() >= deadline:
            return None
        time.sleep(POLL)


def _end_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _stamp(path: Path, who: str, max_seconds: float, pid: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    now = time.time()
    atomic_write(
        path,
        json.dumps(
            {"who": who, "pid": pid, "acquired": now, "expires": now + max_seconds, "ns": _ns()}
        ).encode(),
        mode=0o644,
    )


def _ns() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def run(
    target: Path,
    argv: Sequence[str],
    *,
    who: str,
    max_seconds: float,
    wait: float,
    env: Mapping[str, str],
) -> int:
    """Run `argv` holding the lock; its exit code, EXIT_TIMEOUT when the lock never came."""
    child_env = dict(env)
    if env.get(HELD_VAR) == str(target.resolve()):
        return subprocess.run(list(argv), env=child_env, check=False).returncode
    fd = _take(target, wait)
    if fd is None:
        return EXIT_TIMEOUT
    stamp = _stamp_path(target, env)
    try:
        _stamp(stamp, who, max_seconds, os.getpid())
        child_env[HELD_VAR] = str(target.resolve())
        proc = subprocess.Popen(list(argv), env=child_env, start_new_session=True)
        deadline = time.monotonic() + max_seconds
        while True:
            try:
                return proc.wait(timeout=min(0.2, max(0.0, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                if claimed(target) is not None:
                    _end_group(proc)
                    return EXIT_PREEMPTED
                if time.monotonic() >= deadline:
                    _end_group(proc)
                    return 124
    finally:
        with contextlib.suppress(OSError):
            stamp.unlink()
        os.close(fd)


def acquire(
    target: Path, *, who: str, max_seconds: float, wait: float, env: Mapping[str, str]
) -> dict[str, Any]:
    """Start a holder that keeps the lock until `release` or the expiry; its stamp."""
    stamp = _stamp_path(target, env)
    holder = subprocess.Popen(
        [
            *runtime_module("flamechase.tools.locks"),
            "hold",
            str(target),
            str(stamp),
            who,
            str(max_seconds),
            str(wait),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=dict(env),
    )
    assert holder.stdout is not None
    line = holder.stdout.readline().decode().strip()
    holder.stdout.close()
    if line != "held":
        holder.wait()
        raise TimeoutError(f"the lock on {target} was not free within {wait:g} s")
    info: dict[str, Any] = json.loads(stamp.read_text())
    return info


def hold(target: Path, stamp: Path, who: str, max_seconds: float, wait: float) -> int:
    """The detached holder: take the lock, say so on stdout, keep it until told or expired."""
    fd = _take(target, wait)
    if fd is None:
        print("timeout", flush=True)
        return EXIT_TIMEOUT
    _stamp(stamp, who, max_seconds, os.getpid())
    done = False

    def stop(_sig: int, _frame: object) -> None:
        nonlocal done
        done = True

    signal.signal(signal.SIGTERM, stop)
    print("held", flush=True)
    with contextlib.suppress(OSError):
        os.close(1)
    deadline = time.monotonic() + max_seconds
    by = None
    while not done and time.monotonic() < deadline:
        by = claimed(target)
        if by is not None:
            break
        time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
    with contextlib.suppress(OSError, ValueError):
        if by is None:
            stamp.unlink()
        else:  # kept, so that `release` says the hold ended early
            info = json.loads(stamp.read_text())
            info.update(preempted_by=str(by.get("who")), preempted_at=time.time())
            atomic_write(stamp, json.dumps(info).encode(), mode=0o644)
    os.close(fd)
    return 0


def release(target: Path, env: Mapping[str, str]) -> dict[str, Any] | None:
    """End this lane's holder of the lock; its stamp (with `preempted_by` when one of the
    runtime's gates ended the hold first), None when there was none."""
    stamp = _stamp_path(target, env)
    try:
        info: dict[str, Any] = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return None
    if info.get("ns") == _ns() and not info.get("preempted_by"):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(int(info["pid"]), signal.SIGTERM)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                now = json.loads(stamp.read_text())
            except (OSError, ValueError):
                break
            if now.get("preempted_by"):  # a gate came first after all
                info = now
                break
            time.sleep(0.02)
    with contextlib.suppress(OSError):
        stamp.unlink()
    return info


def status(target: Path, env: Mapping[str, str], *, mine: bool = True) -> dict[str, Any]:
    """Whether the lock is held and by whom: the lanes' stamps (and, with `mine`, the
    caller's own stamp wherever it keeps it), and the runtime's claim."""
    runtime = claimed(target)
    fd = None if runtime else try_take(target)
    held = fd is None
    if fd is not None:
        os.close(fd)
    own = _stamp_path(target, env)
    run_dir = env.get("FLAMECHASE_RUN_DIR")
    paths = sorted((Path(run_dir) / "lanes").glob(f"*/locks/{own.name}")) if run_dir else []
    stamps = []
    for p in dict.fromkeys([*paths, *([own] if mine else [])]):
        # Each lane writes its own: read as an agent's file (a FIFO there must not block).
        found = _read_json(p)
        if found is not None:
            lane = p.parent.parent.name if run_dir and p in paths else None
            stamps.append({**found, "lane": lane})
    holders = [st for st in stamps if not st.get("preempted_by")] if held else []
    if runtime:
        holders.append({"who": str(runtime.get("who")), "lane": None, "runtime": True})
    return {"dir": str(target), "held": held, "holders": holders}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 6 and args[0] == "hold":
        return hold(Path(args[1]), Path(args[2]), args[3], float(args[4]), float(args[5]))
    print("usage: use `flamechase lock`", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
