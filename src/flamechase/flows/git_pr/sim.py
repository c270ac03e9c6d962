"""parallel_flame_chase:git_pr's simulated actor: the coordinator's plan, and lanes that work
through git and pull requests.

A lane turn on the sample works as a lane of this flow would: it starts a branch
`LANE/tTURN-aATTEMPT` from the latest `origin/main`, climbs its ladder rung(s) on the
sample's solver (the shared sample-lane actor's `climb`: real tests and bench runs), and when
that lowered STEPS it commits, pushes the branch and asks for a PR with `flamechase pr open`
and `flamechase pr ready`, exactly as an agent would, every program run as the turn's own
(in its jail). The runtime then measures, merges or rejects it. The plan is
parallel_flame_chase's.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from flamechase.flow.sim import SimTurn
from flamechase.flows.parallel_flame_chase.plans import PlanResult
from flamechase.flows.parallel_flame_chase.sim import PfcActor, plan
from flamechase.flows.sample_lanes import is_sample
from flamechase.flows.sample_lanes.checks import bench

__all__ = ["ACTOR", "GitPrActor"]


class GitPrActor(PfcActor):
    async def act(self, turn: SimTurn) -> dict[str, Any] | None:
        if turn.result.model is PlanResult:
            return plan(turn)
        if turn.lane is None or not is_sample(turn.workspace):
            return None
        return await self._lane(turn)

    async def _lane(self, turn: SimTurn) -> dict[str, Any]:
        """One lane turn through git: branch from main, climb, push, open and ready a PR."""
        ws = turn.workspace
        branch = f"{turn.lane}/t{turn.number}-a{turn.attempt}"
        start, _ = await _steps(
            turn,
            ["git", "fetch", "-q", "origin"],
            ["git", "checkout", "-q", "-f", "-B", branch, "origin/main"],
            ["git", "clean", "-q", "-fd"],
        )
        before = await bench(turn.runner, ws)
        report = await self.climb(turn, before, [], publish=False)
        changed = await turn.runner.run(["git", "diff", "--quiet"], ws)
        if report.get("status") != "progress" or changed.code == 0:
            report.setdefault("evidence", []).extend(start)
            return report
        pr = [sys.executable, "-m", "flamechase", "pr"]
        steps, ok = await _steps(
            turn,
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


ACTOR = GitPrActor()


async def _steps(turn: SimTurn, *argvs: Sequence[str]) -> tuple[list[str], bool]:
    """Run each command in turn: the one-line outcome of each, and whether all exited 0
    (it stops at the first that did not)."""
    done: list[str] = []
    for argv in argvs:
        check = await turn.runner.run(argv, turn.workspace, timeout=60.0)
        shown = " ".join(argv[2:] if list(argv[:1]) == [sys.executable] else argv)
        last = check.output.strip().splitlines()
        done.append(f"{shown}: exit {check.code}" + (f" ({last[-1][:200]})" if last else ""))
        if not check.ok:
            return done, False
    return done, True
