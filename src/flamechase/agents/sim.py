"""The `sim/PROFILE` backend: a built-in, deterministic, offline simulated actor.

Owns what a simulated turn does. It runs in-process (no agent program, no network, no
sleeping) but does real work: on the bundled sample repository it edits `solver.py` along the
ladder in `sim_ladder`, runs the sample's tests and evaluator as real subprocesses, publishes
improved files as artifacts, integrates other lanes' artifacts after checking their hashes and
measuring them, and writes honest reports: every STEPS figure in a report was printed by a
`bench.py` run during that turn. On any other tree it appends a line to NOTES.md and says so.

Lanes: lane 1 first integrates the best inbox artifact that verifies against its sha256 and
measures better than the tree (in a scratch copy), otherwise climbs one rung itself; lane k
(k >= 2) leaps k rungs per turn in its private copy and publishes each measured improvement
as a deliverable with a submission; at the top of the ladder a lane reports `no_result`. The
planner (lane "") writes one mission per lane, lane 1's being integration.

Everything is decided by a seed made of run id, role, lane, turn and attempt, so a run can be
replayed exactly: the same seed and the same tree give the same report and the same usage.

Profiles:
  steady   always does the work, and writes a checkpoint before its report
  flaky    by seed: ~25% of turns crash (no report), ~25% first write an invalid report and
           fix it when asked to repair, the rest behave like steady (without a checkpoint)
  blocked  reports `blocked` on its own second turn (lane turn 3 for actor a, 4 for b),
           otherwise like steady
  silent   does nothing and writes no report (the engine's failure path)

What the engine passes in `TurnRequest.env`:
  FLAMECHASE_LANES       planner turns: the lanes to plan, comma-separated (lane-1,lane-2,...)
  FLAMECHASE_INBOX       lane turns: JSON list of delivered reports (artifacts carry `blob`)
  FLAMECHASE_ARTIFACTS   lane turns: this lane's artifact root
  FLAMECHASE_CHECKPOINT  lane turns: where the checkpoint goes (steady)
  FLAMECHASE_BRIEF       flows that run fronts: the turn's brief (see `sim_fronts`)

Beside it: `sim_fate` (seed, fate, usage), `sim_plan` (the planner's missions), `sim_ladder`
(the solver's rungs), `sim_checks` (tests and bench as jailed subprocesses), `sim_inbox`
(verified candidates from other lanes), `sim_git` (PR lanes), `sim_fronts` (fronts).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flamechase.agents import sim_fronts, sim_git, sim_plan
from flamechase.agents.backend import Answer, Backend, Session, SpawnHook, TurnRequest
from flamechase.agents.sim_checks import Attempt, Bench, Checks, CutError, tests_line
from flamechase.agents.sim_fate import Fate, fate_of, seed_of, usage_of
from flamechase.agents.sim_inbox import Candidate, scratch_copy, verified_candidates
from flamechase.agents.sim_ladder import RUNGS, TOP, approach_of, next_rung, rung_of, stride
from flamechase.agents.spec import AgentSpec
from flamechase.errors import BackendUnavailable
from flamechase.fsutil import atomic_write

__all__ = [
    "EVALUATOR",
    "METRIC",
    "METRIC_PATTERN",
    "PROFILES",
    "SimBackend",
    "SimSession",
    "fate_of",
    "sample_dir",
    "seed_of",
]

PROFILES = ("blocked", "flaky", "silent", "steady")
EVALUATOR = "python bench.py"
METRIC_PATTERN = r"STEPS: (\d+)"
METRIC = "steps"

_MAX_RISKS = 30  # the report schema's limit on `risks`

Report = dict[str, Any]


def sample_dir() -> Path:
    """The bundled sample repository (package data; copy it before running anything in it)."""
    return Path(__file__).resolve().parent.parent / "sample"


class SimBackend(Backend):
    """`sim/PROFILE`: one deterministic simulated actor per session."""

    self_reported = True

    def __init__(self, spec: AgentSpec) -> None:
        # `sim/PROFILE` parses to model=PROFILE.
        self.profile = spec.model
        self.spec_text = spec.text

    def check(self) -> None:
        if self.profile not in PROFILES:
            raise BackendUnavailable(
                f"agent spec {self.spec_text!r}: unknown sim profile {self.profile!r}; "
                f"expected one of {', '.join(PROFILES)} (e.g. sim/steady)"
            )

    def open(self, request: TurnRequest, on_spawn: SpawnHook) -> Session:
        # There is no agent process; the checks this session starts (the tree's own code)
        # are reported through on_spawn like an agent's, and killed by cut()/close().
        return SimSession(self.profile, request, on_spawn)

    def can_bound_cost(self) -> bool:
        return True


# ---- the session ------------------------------------------------------------------------


class SimSession(Session):
    """One simulated turn. A repair request rewrites the report of the work already done."""

    continues = True

    def __init__(
        self, profile: str, request: TurnRequest, on_spawn: SpawnHook | None = None
    ) -> None:
        self.profile = profile
        self.request = request
        self.on_spawn = on_spawn
        self.seed = seed_of(request)
        self.fate: Fate = fate_of(profile, request) if profile in PROFILES else "work"
        self._asks = 0
        self._report: Any = None  # the correct report (or plan) once the work is done
        self.checks = Checks(request, on_spawn)

    # ---- the Session interface ----

    async def ask(self, prompt: str, *, repair: str | None = None) -> Answer:
        self._asks += 1
        usage = usage_of(self.seed, self._asks, repair=repair is not None)
        if self.profile not in PROFILES:
            return Answer(status="failed", error=f"sim: unknown profile {self.profile!r}")
        if self.checks.was_cut:
            return Answer(status="interrupted", usage=usage, error="sim: turn was cut")
        if self.fate == "crash":
            return Answer(
                status="failed", usage=usage, error="sim: simulated crash (exit 1)", exit_code=1
            )
        if self.fate == "silent":
            return Answer(status="finished", usage=usage, text="sim: (no report written)")
        try:
            if self._report is None:
                self._report = await self._work()
                if self.fate == "invalid_first" and repair is None:
                    await asyncio.to_thread(
                        _write_json, self.request.report_path, self._invalid(self._report)
                    )
                    return Answer(status="finished", usage=usage, text="sim: report written")
            if self.profile == "steady" and self.request.lane:
                await asyncio.to_thread(self._write_checkpoint, self._report)
            await asyncio.to_thread(_write_json, self.request.report_path, self._report)
        except CutError:
            return Answer(status="interrupted", usage=usage, error="sim: turn was cut")
        except OSError as exc:
            return Answer(
                status="failed", usage=usage, error=f"sim: {exc.__class__.__name__}: {exc}"
            )
        summary = self._report.get("summary") if self.request.lane else "plan written"
        return Answer(status="finished", usage=usage, text=f"sim: {summary}")

    async def cut(self) -> None:
        await self.checks.cut()

    async def close(self) -> None:
        await self.checks.kill_all()

    # ---- what a turn does ----

    async def _work(self) -> Any:
        if sim_fronts.wanted(self.request.env):
            return await asyncio.to_thread(
                sim_fronts.work, self.request.role, self.request.workspace, self.request.env
            )
        if not self.request.lane:
            return await asyncio.to_thread(sim_plan.plan, self.request)
        if self.fate == "blocked":
            return self._blocked()
        ws = self.request.workspace
        if not await asyncio.to_thread(sim_plan.is_sample, ws):
            return await asyncio.to_thread(self._generic)
        if await asyncio.to_thread(sim_git.speaks_pr, self.request):
            return _bounded(await sim_git.turn(self))
        # Lane 1 weighs the inbox's verified artifacts against the tree, all measured at once.
        candidates: list[Candidate] = []
        risks: list[str] = []
        if self.request.lane == "lane-1":
            current = await asyncio.to_thread((ws / "solver.py").read_bytes)
            candidates, risks = await asyncio.to_thread(
                verified_candidates, self.request.env.get("FLAMECHASE_INBOX"), current
            )
        before, *measured = await asyncio.gather(
            self.checks.bench(ws), *(self._measure(c) for c in candidates)
        )
        if candidates:
            integrated = await self._integrate(before, candidates, measured, risks)
            if integrated is not None:
                return _bounded(integrated)
        return _bounded(await self._climb(before, risks))

    def _blocked(self) -> Report:
        return {
            "status": "blocked",
            "summary": f"sim/blocked: stopping on purpose on turn {self.request.turn} of "
            f"{self.request.lane}; nothing was changed.",
            "risks": ["this lane needs a person (or a changed objective) to go on"],
            "next_step": "release the lane or change the objective",
        }

    def _generic(self) -> Report:
        ws = self.request.workspace
        files = _count_files(ws)
        line = (
            f"- {self.request.role} (sim), {self.request.lane} turn {self.request.turn}: "
            f"read the tree ({files} files); no bench.py, so nothing to measure.\n"
        )
        with open(ws / "NOTES.md", "a", encoding="utf-8") as notes:
            notes.write(line)
        return {
            "status": "progress",
            "summary": f"Surveyed the tree ({files} files) and noted it in NOTES.md; there is "
            "no bench.py here, so no metric was measured.",
            "changes": [f"NOTES.md: appended a line for turn {self.request.turn}"],
            "evidence": [f"{files} files in the tree (excluding dot-directories)"],
            "next_step": "add a benchmark that prints a metric, so progress can be measured",
        }

    async def _integrate(
        self,
        before: Bench,
        candidates: Sequence[Candidate],
        measured: Sequence[Bench],
        risks: list[str],
    ) -> Report | None:
        """Lane 1: take the best verified artifact that measured better than the tree.

        Appends to `risks` what was not integrated and why; None when nothing was.
        """
        ranked = sorted(
            (
                (bench.steps, index)
                for index, bench in enumerate(measured)
                if bench.steps is not None and (before.steps is None or bench.steps < before.steps)
            ),
        )
        for index, bench in enumerate(measured):
            if bench.steps is None:
                c = candidates[index]
                risks.append(f"report {c.report_id} {c.path}: did not pass bench ({bench.line()})")
        for _, index in ranked:
            cand = candidates[index]
            attempt = await self._try(cand.data, before)
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

    # long: one simulated turn's work (edit, test, measure, report) in order.
    async def _climb(self, before: Bench, risks: list[str], *, publish: bool = True) -> Report:
        """Apply this lane's next ladder rung; keep it only if it measures better.

        `publish`: lanes 2..N publish the result as an artifact package (a lane that works
        through git and PRs does not: its branch is what it publishes)."""
        req = self.request
        ws = req.workspace
        current_text = await asyncio.to_thread((ws / "solver.py").read_text, "utf-8")
        current = rung_of(current_text)
        was = approach_of(current_text) or "an unknown approach"
        target = next_rung(current, stride(req.lane))
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
        attempt = await self._try(rung.source.encode(), before)
        tests = tests_line(attempt.tests)
        evidence = [
            before.line("python bench.py before"),
            attempt.bench.line("python bench.py after"),
        ]
        if not attempt.kept:
            return {
                "status": "no_result",
                "summary": f"Tried {rung.approach} ({rung.change}) on top of {was}; it did not "
                f"both pass the tests and lower STEPS, so solver.py was restored.",
                "tests": [tests],
                "evidence": evidence,
                "risks": risks,
                "next_step": "try a different approach",
            }
        after = attempt.bench.steps
        change = f"solver.py: {was} -> {rung.approach} ({rung.change})"
        if req.lane == "lane-1":
            return {
                "status": "progress",
                "summary": f"Switched solver.py to {rung.approach}: STEPS {_fmt(before.steps)} "
                f"-> {after}, tests green.",
                "changes": [change],
                "tests": [tests],
                "evidence": evidence,
                "risks": risks,
                "next_step": "next rung" if target < TOP else "no further idea after this one",
            }
        root = req.env.get("FLAMECHASE_ARTIFACTS")
        if not root:
            if publish:
                risks.append("no FLAMECHASE_ARTIFACTS given, so nothing could be published")
            return {
                "status": "progress",
                "summary": f"Switched solver.py to {rung.approach} in this lane's copy: STEPS "
                f"{_fmt(before.steps)} -> {after}, tests green"
                + ("; not published." if publish else "."),
                "changes": [change],
                "tests": [tests],
                "evidence": evidence,
                "risks": risks,
            }
        rel = await asyncio.to_thread(self._publish, Path(root), ws / "solver.py")
        title = f"solver.py with {rung.approach}"
        return {
            "status": "deliverable_ready",
            "summary": f"{title}: STEPS {_fmt(before.steps)} -> {after}, tests green; "
            f"published as {rel}.",
            "changes": [change],
            "tests": [tests],
            "evidence": evidence,
            "risks": risks,
            "next_step": "next rung" if target < TOP else "no further idea after this one",
            "deliverable": {
                "title": title,
                "artifacts": [
                    {"path": rel, "description": f"the whole solver.py ({rung.approach})"}
                ],
                "integration_notes": f"Replace solver.py with {rel}; it is a complete file. "
                f"Measured here: STEPS {after} with `{EVALUATOR}`, tests green.",
                "approach_class": rung.approach,
                "validation": [tests, attempt.bench.line()],
            },
            "submission": {
                "title": title,
                "metric": METRIC,
                "value": after,
                "direction": "minimize",
                "evaluator": EVALUATOR,
                "evidence": [attempt.bench.line(), tests],
            },
        }

    def _publish(self, root: Path, source: Path) -> str:
        """Copy `source` under a path of its own (a new one per candidate), return it relative."""
        base = f"turn-{self.request.turn:03d}-attempt-{self.request.attempt}"
        name, n = base, 1
        while (root / name).exists():  # never overwrite an earlier candidate
            n += 1
            name = f"{base}-{n}"
        (root / name).mkdir(parents=True)
        shutil.copyfile(source, root / name / "solver.py")
        return f"{name}/solver.py"

    def _write_checkpoint(self, report: Report) -> None:
        path = self.request.env.get("FLAMECHASE_CHECKPOINT")
        if not path:
            return
        req = self.request
        identity = {
            "run_id": req.run_id,
            "lane": req.lane,
            "turn": req.turn,
            "attempt": req.attempt,
            "phase": "terminal",
        }
        _write_json(Path(path), {"identity": identity, "report": report})

    def _invalid(self, good: Any) -> Any:
        """A deterministic wrong report, of a kind the engine must send back for repair."""
        if sim_fronts.wanted(self.request.env):
            return {**good, "confidence": "high"}  # a key no result schema allows
        if not self.request.lane:
            lanes = good["lanes"]
            # A plan missing its last lane (or a mission with no title, for one lane).
            if len(lanes) > 1:
                return {"lanes": lanes[:-1]}
            return {"lanes": [{"lane": lanes[0]["lane"], "mission": {"objective": "?"}}]}
        kind = random.Random(self.seed).randrange(3)
        if kind == 0:
            return {**good, "status": "done"}
        if kind == 1:
            return {k: v for k, v in good.items() if k != "summary"}
        return {**good, "confidence": "high"}

    # ---- subprocesses ----

    async def _try(self, new: bytes, before: Bench) -> Attempt:
        """Write `new` as solver.py, run tests and bench; restore the old file unless better."""
        path = self.request.workspace / "solver.py"
        old = await asyncio.to_thread(path.read_bytes)
        await asyncio.to_thread(_write_bytes, path, new)
        try:
            tests, bench = await asyncio.gather(
                self.checks.run(["-m", "unittest", "-q"], self.request.workspace),
                self.checks.bench(self.request.workspace),
            )
        except BaseException:
            await asyncio.to_thread(_write_bytes, path, old)
            raise
        better = (
            tests.ok
            and bench.steps is not None
            and (before.steps is None or bench.steps < before.steps)
        )
        if not better:
            await asyncio.to_thread(_write_bytes, path, old)
        return Attempt(kept=better, tests=tests, bench=bench)

    async def _measure(self, cand: Candidate) -> Bench:
        """bench.py on a scratch copy of the tree's Python files with the candidate solver."""
        scratch = await asyncio.to_thread(scratch_copy, self.request.workspace, cand.data)
        try:
            return await self.checks.bench(scratch)
        finally:
            await asyncio.to_thread(shutil.rmtree, scratch, True)


# ---- helpers ------------------------------------------------------------------------------


def _bounded(report: Report) -> Report:
    """Keep a report inside the schema's list limits, however full the inbox was."""
    risks = report.get("risks")
    if isinstance(risks, list) and len(risks) > _MAX_RISKS:
        more = len(risks) - (_MAX_RISKS - 1)
        report["risks"] = [*risks[: _MAX_RISKS - 1], f"and {more} more not integrated"]
    return report


def _fmt(steps: int | None) -> str:
    return "unmeasured (bench failed)" if steps is None else str(steps)


def _count_files(ws: Path, limit: int = 100_000) -> int:
    total = 0
    for _, dirs, files in os.walk(ws):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        total += len(files)
        if total >= limit:
            break
    return total


def _write_bytes(path: Path, data: bytes) -> None:
    """Write through a temporary name and rename, so nobody ever reads half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data, 0o644, durable=False)


def _write_json(path: Path, value: Any) -> None:
    _write_bytes(path, (json.dumps(value, indent=2, sort_keys=True) + "\n").encode())
