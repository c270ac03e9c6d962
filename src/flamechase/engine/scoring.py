"""Measurements the runtime runs itself: a shell command in a place, and its receipt.

The receipt (command, cwd, exit code, duration, output hash, value or error) is what a score
rests on: agents claim, the runtime measures. The command runs confined like the turns of its
place (it runs the place's code).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import time
from pathlib import Path
from typing import Any

from flamechase import jail as jails
from flamechase import procs
from flamechase.jail import JailSpec

OUTPUT_LIMIT = 8 * 1024 * 1024


OUTPUT_TAIL = 64 * 1024  # of a command's output, kept in its receipt


async def run_command(
    argv: list[str],
    cwd: Path,
    timeout: float,
    env: dict[str, str] | None = None,
    jail: JailSpec | None = None,
) -> dict[str, Any]:
    """Run `argv` in `cwd` (jailed by `jail`); the receipt: exit code, duration, the SHA-256
    of its output (up to OUTPUT_LIMIT), the last OUTPUT_TAIL bytes of it, and an error when
    it did not exit 0 in time."""
    t0 = time.monotonic()
    receipt: dict[str, Any] = {
        "argv": argv,
        "cwd": str(cwd),
        "exit_code": None,
        "duration": 0.0,
        "output_sha256": None,
        "output": "",
        "error": None,
    }
    try:
        proc = await procs.Proc.start(
            jails.wrap(argv, jail), cwd=cwd, env=env if env is not None else dict(os.environ)
        )
    except OSError as exc:
        receipt["error"] = f"cannot start {argv[0]}: {exc.strerror or exc}"
        return receipt
    digest = hashlib.sha256()
    tail = b""
    size = 0
    deadline = t0 + timeout
    try:
        while True:
            line = await proc.next_line(deadline=deadline, silence=timeout)
            if line is None:
                break
            size += len(line) + 1
            if size <= OUTPUT_LIMIT:
                digest.update(line + b"\n")
            tail = (tail + line + b"\n")[-OUTPUT_TAIL:]
        code = await proc.wait_exit(deadline=deadline, silence=timeout)
        receipt["exit_code"] = jails.decode_exit(code, jail)
    except (procs.TurnTimeout, procs.SilenceTimeout):
        receipt["error"] = f"ran past {timeout:g}s"
    finally:
        with contextlib.suppress(Exception):
            await proc.kill(grace=1.0)
        with contextlib.suppress(Exception):  # and whatever of it left the group (setsid)
            await procs.end_group(None, proc.token, grace=1.0, since=proc.since)
    receipt["duration"] = round(time.monotonic() - t0, 3)
    receipt["output_sha256"] = digest.hexdigest()
    receipt["output"] = tail.decode("utf-8", "replace")
    if receipt["error"] is None and receipt["exit_code"] != 0:
        receipt["error"] = f"exited with code {receipt['exit_code']}"
    return receipt


async def run_evaluator(
    command: str,
    cwd: Path,
    pattern: str,
    timeout: float,
    env: dict[str, str] | None = None,
    jail: JailSpec | None = None,
) -> dict[str, Any]:
    """Run `command` with /bin/sh in `cwd`; the receipt of what it printed, with the value:
    the last match of `pattern`'s group in its output.

    `jail`: confine it as the submitting lane's turns are (it runs the lane's code).
    """
    receipt = await run_command(["/bin/sh", "-c", command], cwd, timeout, env, jail)
    receipt = {
        "command": command,
        **{k: v for k, v in receipt.items() if k != "argv"},
        "value": None,
    }
    if receipt["error"] is not None:
        receipt["error"] = f"evaluator {receipt['error']}"
        return receipt
    matches = re.findall(pattern, receipt["output"], flags=re.MULTILINE)
    if not matches:
        receipt["error"] = f"evaluator output has no match for {pattern!r}"
        return receipt
    last = matches[-1]
    text = last if isinstance(last, str) else last[0]
    try:
        value = float(text)
    except ValueError:
        receipt["error"] = f"evaluator printed {text!r}, not a number"
        return receipt
    if math.isfinite(value):
        receipt["value"] = value
    else:
        receipt["error"] = "evaluator printed a non-finite value"
    return receipt
