"""Helpers for tests that drive the real `flamechase` command in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

FLAMECHASE = [sys.executable, "-m", "flamechase"]
# As the `flamechase` command starts (no working directory on the path), and stricter: for a
# test whose tree holds a `flamechase.py` an agent left there.
ISOLATED = [sys.executable, "-I", "-m", "flamechase"]


def cli(
    *args: str,
    cwd: Path,
    timeout: float = 60,
    env: dict[str, str] | None = None,
    check: bool = False,
    isolated: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run `flamechase ARGS` in `cwd`; FLAMECHASE_HOME comes from the test's environment."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    proc = subprocess.run(
        [*(ISOLATED if isolated else FLAMECHASE), *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"flamechase {args} exited {proc.returncode}:\n{proc.stderr}")
    return proc


def actor(tmp: Path, name: str, body: str) -> Path:
    """An executable `exec:` actor script with `body` (sh)."""
    path = tmp / name
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body).lstrip())
    path.chmod(0o755)
    return path


REPORT_OK = """echo '{"status":"progress","summary":"did a turn"}' > "$FLAMECHASE_REPORT"\n"""


def status(cwd: Path, run: str = "last", isolated: bool = False) -> dict[str, Any]:
    out = cli("status", run, "--json", cwd=cwd, check=True, isolated=isolated)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def status_when_readable(cwd: Path, run: str = "last") -> dict[str, Any] | None:
    """`status` of a run that may still be starting: None until its store is readable (the
    run's directory exists a moment before its database has its first rows)."""
    out = cli("status", run, "--json", cwd=cwd)
    if out.returncode != 0:
        assert "no readable runs" in out.stderr or "no runs under" in out.stderr, out.stderr
        return None
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def events(cwd: Path, run: str = "last", isolated: bool = False) -> list[dict[str, Any]]:
    out = cli("events", run, "--json", cwd=cwd, check=True, isolated=isolated)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def _pending(pid: int) -> int:
    """Signals pending for `pid` (its main thread's and the process's), as a bit mask."""
    mask = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("SigPnd:", "ShdPnd:")):
                    mask |= int(line.split()[1], 16)
    except FileNotFoundError:
        return 0
    return mask


def send_signal(proc: subprocess.Popen[Any], sig: int, timeout: float = 20) -> None:
    """Send `sig` and return once the kernel has delivered it, so a signal sent next counts
    as a second one rather than merging into a first still pending (waits for the event,
    not for a fixed time)."""
    proc.send_signal(sig)
    bit = 1 << (sig - 1)
    deadline = time.monotonic() + timeout
    while _pending(proc.pid) & bit and proc.poll() is None:
        if time.monotonic() > deadline:
            raise AssertionError(f"signal {sig} still pending for {proc.pid} after {timeout}s")
        time.sleep(0.01)


def wait_for_process(pattern: str, timeout: float = 20) -> None:
    """Wait until a process whose command line matches `pattern` (pgrep -f) exists."""
    deadline = time.monotonic() + timeout
    while subprocess.run(["pgrep", "-f", pattern], capture_output=True).returncode != 0:
        if time.monotonic() > deadline:
            raise AssertionError(f"no process matching {pattern!r} after {timeout}s")
        time.sleep(0.05)
