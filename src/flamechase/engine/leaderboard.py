"""Candidate submissions: measured by the runtime, ranked per (metric, direction).

With an `evaluator` param the runtime runs it itself in the submitting lane's workspace
after the turn, keeps a receipt (command, exit code, duration, output hash, value) and ranks
the measured value; a claim it cannot reproduce is kept but marked unverified and never
ranked. Without an evaluator, claims are ranked as the reference runtime does, labelled
`verified: false`. Strictly better replaces the incumbent; ties keep it.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flamechase import jail as jails
from flamechase import procs
from flamechase.jail import JailSpec

OUTPUT_LIMIT = 8 * 1024 * 1024


def metric_key(metric: str) -> str:
    return " ".join(metric.casefold().split())


def better(new: float, old: float, direction: str) -> bool:
    return new < old if direction == "minimize" else new > old


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


def claim_matches(claimed: float, measured: float) -> bool:
    return math.isclose(claimed, measured, rel_tol=1e-6, abs_tol=1e-9)


def board(submissions: Sequence[dict[str, Any]], declared: dict[str, str] | None,
          *, evaluator: bool) -> dict[str, Any]:
    """The leaderboard derived from submission rows (oldest first).

    `declared` ({metric, direction}) fixes the primary metric; otherwise the first ranked
    submission does (as in the reference).
    """
    leaders: dict[tuple[str, str], dict[str, Any]] = {}
    primary: tuple[str, str] | None = None
    if declared:
        primary = (metric_key(declared["metric"]), declared["direction"])
    for s in submissions:
        ranked = s["verified"] if evaluator else True
        if not ranked:
            continue
        value = s["measured"] if s["measured"] is not None else s["claimed"]
        ident = (metric_key(s["metric"]), s["direction"])
        if primary is None:
            primary = ident
        cur = leaders.get(ident)
        if cur is None or better(value, cur["value"], s["direction"]):
            leaders[ident] = {"report_id": s["report_id"], "lane": s["lane"],
                              "metric": s["metric"], "direction": s["direction"],
                              "value": value, "claimed": s["claimed"],
                              "verified": s["verified"], "at": s["at"]}
    best = leaders.get(primary) if primary else None
    return {
        "submission_count": len(submissions),
        "measured_by_runtime": evaluator,
        "primary": ({"metric": primary[0], "direction": primary[1]} if primary else None),
        "best": best,
        "leaders": list(leaders.values()),
    }
