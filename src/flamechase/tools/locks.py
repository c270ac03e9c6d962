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
from flamechase.fsutil import atomic_write
from flamechase.interpreter import runtime_module

__all__ = ["EXIT_TIMEOUT", "LockError", "acquire", "lock_dir", "release", "run", "status"]

EXIT_TIMEOUT = 75  # EX_TEMPFAIL: the lock was not had in time; nothing ran
HELD_VAR = "FLAMECHASE_LOCK_HELD"
MAX_HOLD = 900.0


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


def _take(target: Path, wait: float) -> int | None:
    """An fd holding the lock on `target`, or None after `wait` seconds."""
    fd = os.open(target, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(0.05)


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
        try:
            return proc.wait(timeout=max_seconds)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
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
    while not done and time.monotonic() < deadline:
        time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
    with contextlib.suppress(OSError):
        stamp.unlink()
    os.close(fd)
    return 0


def release(target: Path, env: Mapping[str, str]) -> bool:
    """End this lane's holder of the lock; whether there was one."""
    stamp = _stamp_path(target, env)
    try:
        info = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return False
    if info.get("ns") == _ns():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(int(info["pid"]), signal.SIGTERM)
        deadline = time.monotonic() + 10
        while stamp.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    with contextlib.suppress(OSError):
        stamp.unlink()
    return True


def status(target: Path, env: Mapping[str, str]) -> dict[str, Any]:
    fd = _take(target, 0)
    held = fd is None
    if fd is not None:
        os.close(fd)
    own = _stamp_path(target, env)
    run_dir = env.get("FLAMECHASE_RUN_DIR")
    paths = sorted((Path(run_dir) / "lanes").glob(f"*/locks/{own.name}")) if run_dir else []
    stamps = []
    for p in dict.fromkeys([*paths, own]):
        with contextlib.suppress(OSError, ValueError):
            lane = p.parent.parent.name if run_dir and p in paths else None
            stamps.append({**json.loads(p.read_text()), "lane": lane})
    return {"dir": str(target), "held": held, "holders": stamps if held else []}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 6 and args[0] == "hold":
        return hold(Path(args[1]), Path(args[2]), args[3], float(args[4]), float(args[5]))
    print("usage: use `flamechase lock`", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
