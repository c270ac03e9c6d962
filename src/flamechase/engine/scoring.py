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


async def run_evaluator(command: str, cwd: Path, pattern: str, timeout: float,
                        env: dict[str, str] | None = None,
                        jail: JailSpec | None = None) -> dict[str, Any]:
    """Run `command` with /bin/sh in `cwd`; the receipt of what it printed.

    `jail`: confine it as the submitting lane's turns are (it runs the lane's code).
    """
    t0 = time.monotonic()
    receipt: dict[str, Any] = {"command": command, "cwd": str(cwd), "exit_code": None,
                               "duration": 0.0, "output_sha256": None, "value": None,
                               "error": None}
    argv = jails.wrap(["/bin/sh", "-c", command], jail)
    proc = await procs.Proc.start(argv, cwd=cwd,
                                  env=env if env is not None else dict(os.environ))
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
                tail = (tail + line + b"\n")[-65536:]
        code = await proc.wait_exit(deadline=deadline, silence=timeout)
        receipt["exit_code"] = jails.decode_exit(code, jail)
    except (procs.TurnTimeout, procs.SilenceTimeout):
        receipt["error"] = f"evaluator ran past {timeout:g}s"
    finally:
        with contextlib.suppress(Exception):
            await proc.kill(grace=1.0)
        with contextlib.suppress(Exception):  # and whatever of it left the group (setsid)
            await procs.end_group(None, proc.token, grace=1.0, since=proc.since)
    receipt["duration"] = round(time.monotonic() - t0, 3)
    receipt["output_sha256"] = digest.hexdigest()
    if receipt["error"] is None and receipt["exit_code"] != 0:
        receipt["error"] = f"evaluator exited with code {receipt['exit_code']}"
    if receipt["error"] is None:
        matches = re.findall(pattern, tail.decode("utf-8", "replace"), flags=re.MULTILINE)
        if not matches:
            receipt["error"] = f"evaluator output has no match for {pattern!r}"
        else:
            last = matches[-1]
            text = last if isinstance(last, str) else last[0]
            try:
                value = float(text)
            except ValueError:
                receipt["error"] = f"evaluator printed {text!r}, not a number"
            else:
                if math.isfinite(value):
                    receipt["value"] = value
                else:
                    receipt["error"] = "evaluator printed a non-finite value"
    return receipt
