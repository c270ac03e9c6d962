"""Helpers for tests that drive the real `flamechase` command in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

FLAMECHASE = [sys.executable, "-m", "flamechase"]


def cli(*args: str, cwd: Path, timeout: float = 60, env: dict[str, str] | None = None,
        check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run `flamechase ARGS` in `cwd`; FLAMECHASE_HOME comes from the test's environment."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    proc = subprocess.run([*FLAMECHASE, *args], cwd=cwd, env=full_env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)
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


def status(cwd: Path, run: str = "last") -> dict[str, Any]:
    out = cli("status", run, "--json", cwd=cwd, check=True)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def events(cwd: Path, run: str = "last") -> list[dict[str, Any]]:
    out = cli("events", run, "--json", cwd=cwd, check=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
