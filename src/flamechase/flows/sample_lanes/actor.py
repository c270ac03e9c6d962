"""The simulated lane actor: real, measured work on the bundled sample, one turn at a time.

Lane 1 (the integrating lane, in the user's tree) first integrates the best inbox artifact
that verifies against its sha256 and measures better than the tree (in a scratch copy),
otherwise climbs one rung itself; lane k (k >= 2) leaps k rungs per turn in its private
copy and publishes each measured improvement as a deliverable with a submission; at the top
of the ladder a lane reports `no_result`. Turns outside lanes, turns that do not end with the
turn report and trees that are not the sample are left to the `sim` backend (None).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flamechase.flow import REPORT
from flamechase.flow.sim import SimActor, SimTurn
from flamechase.flows.sample_lanes import EVALUATOR, METRIC, is_sample
from flamechase.flows.sample_lanes.checks import Attempt, Bench, bench, tests, tests_line
from flamechase.flows.sample_lanes.inbox import Candidate, scratch_copy, verified_candidates
from flamechase.flows.sample_lanes.ladder import RUNGS, TOP, approach_of, next_rung, rung_of
from flamechase.flows.sample_lanes.ladder import stride as stride_of
from flamechase.fsutil import atomic_write

__all__ = ["LaneActor"]

# asyncio is imported where a turn runs (each coroutine below): a flow's module imports its
# actor, and loading a flow for `status` or a replay should not pay for the event loop.

INTEGRATOR = "lane-1"  # the lane that takes other lanes' packages into the user's tree
_MAX_RISKS = 30  # the report schema's limit on `risks`

Report = dict[str, Any]


class LaneActor(SimActor):
    """Lane turns ending with the turn report, on the sample (see the module docstring)."""

    async def act(self, turn: SimTurn) -> Report | None:
        import asyncio

        if turn.lane is None or turn.result.model is not REPORT.model:
            return None
        ws = turn.workspace
        if not await asyncio.to_thread(is_sample, ws):
            return None
        # The integrating lane weighs the inbox's verified artifacts against the tree, all
        # measured at once.
        candidates: list[Candidate] = []
        risks: list[str] = []
        if turn.lane == INTEGRATOR:
            current = await asyncio.to_thread((ws / "solver.py").read_bytes)
            candidates, risks = await asyncio.to_thread(
                verified_candidates, turn.env.get("FLAMECHASE_INBOX"), current
            )
        before, *measured = await asyncio.gather(
            bench(turn.runner, ws), *(_measure(turn, c) for c in candidates)
        )
        if candidates:
            integrated = await _integrate(turn, before, candidates, measured, risks)
            if integrated is not None:
                return bounded(integrated)
        return bounded(await self.climb(turn, before, risks))

    # long: one simulated turn's work (edit, test, measure, report) in order.
    async def climb(
        self, turn: SimTurn, before: Bench, risks: list[str], *, publish: bool = True
    ) -> Report:
        """Apply this lane's next ladder rung; keep it only if it measures better.

        `publish`: exploring lanes publish the result as an artifact package (a lane that
        works through git and PRs does not: its branch is what it publishes)."""
        import asyncio

        ws = turn.workspace
        lane = turn.lane or ""
        current_text = await asyncio.to_thread((ws / "solver.py").read_text, "utf-8")
        current = rung_of(current_text)
        was = approach_of(current_text) or "an unknown approach"
        target = next_rung(current, stride_of(lane))
        if target is None:
            return {
                "status": "no_result",
                "summary": f"solver.py is already at the best approach this actor knows ({was}); "
                f"STEPS {_fmt(before.steps)}. Nothing left to try.",
                "evidence": [before.line()],
                "risks": risks,
                "next_step": "a new idea is needed to go below this STEPS",
            }
        rung = RUNGS[target]
        attempt = await _try(turn, rung.source.encode(), before)
        tests_said = tests_line(attempt.tests)
        evidence = [
            before.line("python bench.py before"),
            attempt.bench.line("python bench.py after"),
        ]
        if not attempt.kept:
            return {
                "status": "no_result",
                "summary": f"Tried {rung.approach} ({rung.change}) on top of {was}; it did not "
                f"both pass the tests and lower STEPS, so solver.py was restored.",
                "tests": [tests_said],
                "evidence": evidence,
                "risks": risks,
                "next_step": "try a different approach",
            }
        after = attempt.bench.steps
        change = f"solver.py: {was} -> {rung.approach} ({rung.change})"
        next_step = "next rung" if target < TOP else "no further idea after this one"
        if lane == INTEGRATOR:
            return {
                "status": "progress",
                "summary": f"Switched solver.py to {rung.approach}: STEPS {_fmt(before.steps)} "
                f"-> {after}, tests green.",
                "changes": [change],
                "tests": [tests_said],
                "evidence": evidence,
                "risks": risks,
                "next_step": next_step,
            }
        root = turn.env.get("FLAMECHASE_ARTIFACTS")
        if not root or not publish:
            if publish:
                risks.append("no FLAMECHASE_ARTIFACTS given, so nothing could be published")
            return {
                "status": "progress",
                "summary": f"Switched solver.py to {rung.approach} in this lane's copy: STEPS "
                f"{_fmt(before.steps)} -> {after}, tests green"
                + ("; not published." if publish else "."),
                "changes": [change],
                "tests": [tests_said],
                "evidence": evidence,
                "risks": risks,
            }
        rel = await asyncio.to_thread(_publish, turn, Path(root), ws / "solver.py")
        title = f"solver.py with {rung.approach}"
        return {
            "status": "deliverable_ready",
            "summary": f"{title}: STEPS {_fmt(before.steps)} -> {after}, tests green; "
            f"published as {rel}.",
            "changes": [change],
            "tests": [tests_said],
            "evidence": evidence,
            "risks": risks,
            "next_step": next_step,
            "deliverable": {
                "title": title,
                "artifacts": [
                    {"path": rel, "description": f"the whole solver.py ({rung.approach})"}
                ],
                "integration_notes": f"Replace solver.py with {rel}; it is a complete file. "
                f"Measured here: STEPS {after} with `{EVALUATOR}`, tests green.",
                "approach_class": rung.approach,
                "validation": [tests_said, attempt.bench.line()],
            },
            "submission": {
                "title": title,
                "metric": METRIC,
                "value": after,
                "direction": "minimize",
                "evaluator": EVALUATOR,
                "evidence": [attempt.bench.line(), tests_said],
            },
        }


async def _integrate(
    turn: SimTurn,
    before: Bench,
    candidates: Sequence[Candidate],
    measured: Sequence[Bench],
    risks: list[str],
) -> Report | None:
    """Take the best verified artifact that measured better than the tree.

    Appends to `risks` what was not integrated and why; None when nothing was.
    """
    ranked = sorted(
        (bench.steps, index)
        for index, bench in enumerate(measured)
        if bench.steps is not None and (before.steps is None or bench.steps < before.steps)
    )
    for index, measure in enumerate(measured):
        if measure.steps is None:
            c = candidates[index]
            risks.append(f"report {c.report_id} {c.path}: did not pass bench ({measure.line()})")
    for _, index in ranked:
        cand = candidates[index]
        attempt = await _try(turn, cand.data, before)
        if not attempt.kept:
            risks.append(
                f"report {cand.report_id} {cand.path}: measured better in a scratch copy but "
                f"not in the tree ({tests_line(attempt.tests)}; {attempt.bench.line()}); "
                "reverted"
            )
            continue
        approach = approach_of(cand.data.decode("utf-8", "replace")) or "unknown approach"
        return {
            "status": "progress",
            "summary": f"Integrated report {cand.report_id} from {cand.lane} ({approach}): "
            f"STEPS {_fmt(before.steps)} -> {attempt.bench.steps}, tests green.",
            "changes": [
                f"solver.py: replaced by artifact {cand.path} of report {cand.report_id} "
                f"from {cand.lane} (sha256 {cand.sha256[:16]}, verified)"
            ],
            "tests": [tests_line(attempt.tests)],
            "evidence": [
                f"integrated report_id {cand.report_id}",
                measured[index].line("python bench.py on a scratch copy with the artifact"),
                before.line("python bench.py before"),
                attempt.bench.line("python bench.py after"),
            ],
            "risks": risks,
            "next_step": "integrate any better package next; otherwise climb one rung",
        }
    return None


async def _try(turn: SimTurn, new: bytes, before: Bench) -> Attempt:
    """Write `new` as solver.py, run tests and bench; restore the old file unless better."""
    import asyncio

    path = turn.workspace / "solver.py"
    old = await asyncio.to_thread(path.read_bytes)
    await asyncio.to_thread(_write_bytes, path, new)
    try:
        checked, measured = await asyncio.gather(
            tests(turn.runner, turn.workspace), bench(turn.runner, turn.workspace)
        )
    except BaseException:
        await asyncio.to_thread(_write_bytes, path, old)
        raise
    better = (
        checked.ok
        and measured.steps is not None
        and (before.steps is None or measured.steps < before.steps)
    )
    if not better:
        await asyncio.to_thread(_write_bytes, path, old)
    return Attempt(kept=better, tests=checked, bench=measured)


async def _measure(turn: SimTurn, cand: Candidate) -> Bench:
    """bench.py on a scratch copy of the tree's Python files with the candidate solver."""
    import asyncio

    scratch = await asyncio.to_thread(scratch_copy, turn.workspace, cand.data)
    try:
        return await bench(turn.runner, scratch)
    finally:
        await asyncio.to_thread(shutil.rmtree, scratch, True)


def _publish(turn: SimTurn, root: Path, source: Path) -> str:
    """Copy `source` under a path of its own (a new one per candidate), return it relative."""
    base = f"turn-{turn.number:03d}-attempt-{turn.attempt}"
    name, n = base, 1
    while (root / name).exists():  # never overwrite an earlier candidate
        n += 1
        name = f"{base}-{n}"
    (root / name).mkdir(parents=True)
    shutil.copyfile(source, root / name / "solver.py")
    return f"{name}/solver.py"


def bounded(report: Report) -> Report:
    """Keep a report inside the schema's list limits, however full the inbox was."""
    risks = report.get("risks")
    if isinstance(risks, list) and len(risks) > _MAX_RISKS:
        more = len(risks) - (_MAX_RISKS - 1)
        report["risks"] = [*risks[: _MAX_RISKS - 1], f"and {more} more not integrated"]
    return report


def _fmt(steps: int | None) -> str:
    return "unmeasured (bench failed)" if steps is None else str(steps)


def _write_bytes(path: Path, data: bytes) -> None:
    """Through a temporary name and a rename, so nobody ever reads half a file."""
    atomic_write(path, data, 0o644, durable=False)
