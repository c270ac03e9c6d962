"""The `sim` actor in a lane that works through git and pull requests.

When a turn's workspace is a clone with an outbox (`flamechase.outbox` in its git config)
and the turn may make requests ($FLAMECHASE_REQUESTS), the simulated actor works as a lane of
a pull-request flow would: it starts a branch `LANE/tTURN-aATTEMPT` from the latest
`origin/main`, climbs its ladder rung(s) on the sample's solver (`SimSession._climb`, real
tests and bench runs), and when that lowered STEPS it commits, pushes the branch and asks for
a PR with `flamechase pr open` and `flamechase pr ready`, exactly as an agent would. The
runtime then measures, merges or rejects it.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flamechase.agents.backend import TurnRequest
from flamechase.agents.turnio import agent_env

if TYPE_CHECKING:
    from flamechase.agents.sim import SimSession

__all__ = ["speaks_pr", "turn"]


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def speaks_pr(request: TurnRequest) -> bool:
    """Whether this turn works through git and PRs (see the module docstring)."""
    if not request.lane or "FLAMECHASE_REQUESTS" not in request.env:
        return False
    if not (request.workspace / ".git").is_dir():
        return False
    found = _run(
        ["git", "config", "--get", "flamechase.outbox"], request.workspace, agent_env(request)
    )
    return found.returncode == 0 and bool(found.stdout.strip())


def _steps(env: dict[str, str], cwd: Path, *argvs: list[str]) -> tuple[list[str], bool]:
    """Run each command in turn: the one-line outcome of each, and whether all exited 0
    (it stops at the first that did not)."""
    done: list[str] = []
    for argv in argvs:
        proc = _run(argv, cwd, env)
        shown = " ".join(argv[2:] if argv[:1] == [sys.executable] else argv)
        last = (proc.stdout.strip() or proc.stderr.strip()).splitlines()
        done.append(f"{shown}: exit {proc.returncode}" + (f" ({last[-1][:200]})" if last else ""))
        if proc.returncode != 0:
            return done, False
    return done, True


async def turn(session: SimSession) -> dict[str, Any]:
    """One lane turn through git: branch from main, climb, push, open and ready a PR."""
    req = session.request
    ws, env = req.workspace, agent_env(req)
    branch = f"{req.lane}/t{req.turn}-a{req.attempt}"
    start, _ = await asyncio.to_thread(
        _steps,
        env,
        ws,
        ["git", "fetch", "-q", "origin"],
        ["git", "checkout", "-q", "-f", "-B", branch, "origin/main"],
        ["git", "clean", "-q", "-fd"],
    )
    before = await session.checks.bench(ws)
    report = await session._climb(before, [], publish=False)
    changed = await asyncio.to_thread(_run, ["git", "diff", "--quiet"], ws, env)
    if report.get("status") != "progress" or changed.returncode == 0:
        report.setdefault("evidence", []).extend(start)
        return report
    pr = [sys.executable, "-m", "flamechase", "pr"]
    steps, ok = await asyncio.to_thread(
        _steps,
        env,
        ws,
        ["git", "commit", "-q", "-am", report["summary"][:200]],
        ["git", "push", "-q", "origin", branch],
        [
            *pr,
            "open",
            "--title",
            report["summary"][:120],
            "--hypothesis",
            "one rung further down the ladder lowers STEPS",
        ],
        [*pr, "ready"],
    )
    report["summary"] += (
        f" Pushed {branch} and asked for a PR, made ready for the runtime to measure."
        if ok
        else f" Could not publish {branch}: {steps[-1]}"
    )
    report.setdefault("changes", []).append(f"branch {branch} (from origin/main)")
    report.setdefault("evidence", []).extend([*start, *steps])
    return report
