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
"""

# long file: the simulated actor's profiles, work and reports are one program read top to bottom.

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from flamechase import jail, procs
from flamechase.agents import sim_fronts, sim_git
from flamechase.agents.backend import Answer, Backend, Session, SpawnHook, TurnRequest, Usage
from flamechase.agents.sim_ladder import RUNGS, TOP, approach_of, next_rung, rung_of
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

# Fake prices (USD per token) so budgets and views have figures to show.
_PRICE_INPUT = 3.0 / 1_000_000
_PRICE_OUTPUT = 15.0 / 1_000_000
_PRICE_CACHE_READ = 0.3 / 1_000_000

# The sample's bench takes well under a second; anything near this is a hung solver.
_CHECK_TIMEOUT = 20.0
_MAX_CANDIDATES = 6  # inbox artifacts measured per turn, at most
_MAX_RISKS = 30  # the report schema's limit on `risks`
_MAX_BLOB = 1 << 20  # an inbox solver.py larger than this is not a solver worth measuring
_STEPS_LINE = re.compile(r"^STEPS: (\d+)\s*$", re.MULTILINE)
_RAN_LINE = re.compile(r"^Ran (\d+) tests?", re.MULTILINE)
_LANE_NAME = re.compile(r"\blane-(\d+)\b")

Fate = Literal["work", "crash", "invalid_first", "silent", "blocked"]
Report = dict[str, Any]


def sample_dir() -> Path:
    """The bundled sample repository (package data; copy it before running anything in it)."""
    return Path(__file__).resolve().parent.parent / "sample"


def seed_of(request: TurnRequest) -> int:
    """The turn's seed: the same run, role, lane, turn and attempt always give the same one."""
    key = "\0".join(
        [request.run_id, request.role, request.lane, str(request.turn), str(request.attempt)]
    )
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")


def fate_of(profile: str, request: TurnRequest) -> Fate:
    """What a turn of `profile` will do, decided before any work (tests use it too)."""
    if profile == "silent":
        return "silent"
    # The actor's own second turn: a lane's two actors alternate, actor a first, so actor a
    # takes lane turns 1, 3, 5... and actor b 2, 4, 6...: its second is lane turn 3 or 4.
    if profile == "blocked" and request.lane and (request.turn + 1) // 2 == 2:
        return "blocked"
    if profile == "flaky":
        # Independent of the bits the usage figures are drawn from (those use the whole seed).
        roll = (seed_of(request) >> 40) % 4
        if roll == 0:
            return "crash"
        if roll == 1:
            return "invalid_first"
    return "work"


def _usage(seed: int, ask: int, *, repair: bool) -> Usage:
    rng = random.Random(f"{seed}/{ask}")
    if repair:
        input_tokens = 1_500 + rng.randrange(2_500)
        output_tokens = 150 + rng.randrange(450)
    else:
        input_tokens = 9_000 + rng.randrange(27_000)
        output_tokens = 700 + rng.randrange(3_300)
    cache_read = rng.randrange(input_tokens)
    cost = (
        input_tokens * _PRICE_INPUT + output_tokens * _PRICE_OUTPUT + cache_read * _PRICE_CACHE_READ
    )
    return Usage(
        cost_usd=round(cost, 6),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        self_reported=True,
    )


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


# ---- measurements ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Check:
    """One finished subprocess: exit code (None on timeout) and its merged output."""

    code: int | None
    output: str

    @property
    def ok(self) -> bool:
        return self.code == 0


@dataclasses.dataclass(frozen=True, slots=True)
class _Bench:
    check: _Check

    @property
    def steps(self) -> int | None:
        """The measured STEPS: only from a run that exited 0 and printed exactly one line."""
        if not self.check.ok:
            return None
        found = _STEPS_LINE.findall(self.check.output)
        return int(found[0]) if len(found) == 1 else None

    def line(self, label: str = "python bench.py") -> str:
        if self.check.code is None:
            return f"{label}: timed out after {_CHECK_TIMEOUT:.0f} s"
        if self.steps is not None:
            return f"{label}: STEPS: {self.steps} (exit 0)"
        return f"{label}: no STEPS (exit {self.check.code}): {_tail(self.check.output)}"


def _tests_line(check: _Check) -> str:
    ran = _RAN_LINE.search(check.output)
    count = f"{ran.group(1)} tests" if ran else "no test count"
    if check.code is None:
        return f"python -m unittest -q: timed out after {_CHECK_TIMEOUT:.0f} s"
    if check.ok:
        return f"python -m unittest -q: OK ({count})"
    return f"python -m unittest -q: FAILED, exit {check.code} ({count}): {_tail(check.output)}"


def _tail(text: str, limit: int = 300) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-3:])[-limit:] or "no output"


@dataclasses.dataclass(frozen=True, slots=True)
class _Candidate:
    """A verified inbox artifact: its bytes hash to what the publishing lane recorded."""

    report_id: str
    lane: str
    path: str
    sha256: str
    data: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class _Attempt:
    """A change tried in the tree: kept only when tests pass and STEPS went down."""

    kept: bool
    tests: _Check
    bench: _Bench


class _CutError(Exception):
    """cut() was called: stop the turn, leave the tree as it was."""


# ---- the session ------------------------------------------------------------------------


class SimSession(Session):
    """One simulated turn. A repair request rewrites the report of the work already done."""

    continues = True

    def __init__(self, profile: str, request: TurnRequest,
                 on_spawn: SpawnHook | None = None) -> None:
        self.profile = profile
        self.request = request
        self.on_spawn = on_spawn
        self.seed = seed_of(request)
        self.fate: Fate = fate_of(profile, request) if profile in PROFILES else "work"
        self._asks = 0
        self._report: Any = None  # the correct report (or plan) once the work is done
        self._procs: set[procs.Proc] = set()
        self._one_check = asyncio.Lock()
        self._cut = False

    # ---- the Session interface ----

    async def ask(self, prompt: str, *, repair: str | None = None) -> Answer:
        self._asks += 1
        usage = _usage(self.seed, self._asks, repair=repair is not None)
        if self.profile not in PROFILES:
            return Answer(status="failed", error=f"sim: unknown profile {self.profile!r}")
        if self._cut:
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
        except _CutError:
            return Answer(status="interrupted", usage=usage, error="sim: turn was cut")
        except OSError as exc:
            return Answer(
                status="failed", usage=usage, error=f"sim: {exc.__class__.__name__}: {exc}"
            )
        summary = self._report.get("summary") if self.request.lane else "plan written"
        return Answer(status="finished", usage=usage, text=f"sim: {summary}")

    async def cut(self) -> None:
        self._cut = True
        await self._kill_all()

    async def close(self) -> None:
        await self._kill_all()

    # ---- what a turn does ----

    async def _work(self) -> Any:
        if sim_fronts.wanted(self.request.env):
            return await asyncio.to_thread(sim_fronts.work, self.request.role,
                                           self.request.workspace, self.request.env)
        if not self.request.lane:
            return await asyncio.to_thread(self._plan)
        if self.fate == "blocked":
            return self._blocked()
        ws = self.request.workspace
        if not await asyncio.to_thread(_is_sample, ws):
            return await asyncio.to_thread(self._generic)
        if await asyncio.to_thread(sim_git.speaks_pr, self.request):
            return _bounded(await sim_git.turn(self))
        # Lane 1 weighs the inbox's verified artifacts against the tree, all measured at once.
        candidates: list[_Candidate] = []
        risks: list[str] = []
        if self.request.lane == "lane-1":
            current = await asyncio.to_thread((ws / "solver.py").read_bytes)
            candidates, risks = await asyncio.to_thread(
                _verified_candidates, self.request.env.get("FLAMECHASE_INBOX"), current
            )
        before, *measured = await asyncio.gather(
            self._bench(ws), *(self._measure(c) for c in candidates)
        )
        if candidates:
            integrated = await self._integrate(before, candidates, measured, risks)
            if integrated is not None:
                return _bounded(integrated)
        return _bounded(await self._climb(before, risks))

    def _plan(self) -> dict[str, Any]:
        lanes = self._lane_names()
        measurable = _is_sample(self.request.workspace)
        objective = (
            "Lower the STEPS that `python bench.py` prints while `python -m unittest` stays green."
            if measurable
            else "Make small, verifiable progress on the task and record it."
        )
        entries = []
        for lane in lanes:
            stride = _stride(lane)
            if lane == "lane-1":
                mission = {
                    "title": "Integrate the best measured results",
                    "objective": objective + " Integrate other lanes' artifact packages "
                    "that measure better than the tree; otherwise improve it directly.",
                    "success_criteria": [
                        "every integrated package verified against its sha256",
                        "tests green after each change",
                        "STEPS never goes up",
                    ],
                    "kind": "integration",
                    "approach_class": "integration",
                    "change_scale": "integration",
                }
            else:
                pace = f"in leaps of {stride} rungs"
                mission = {
                    "title": f"Explore {pace}",
                    "objective": objective + f" Work in the private copy, {pace}, and publish "
                    "every measured improvement as an artifact package with a submission.",
                    "success_criteria": [
                        "each package measured with python bench.py before it is published",
                        "tests green on every published solver.py",
                    ],
                    "kind": "implementation",
                    "approach_class": f"leap-{stride}",
                    "change_scale": "component",
                }
            entries.append({"lane": lane, "mission": mission})
        return {"lanes": entries}

    def _lane_names(self) -> list[str]:
        given = self.request.env.get("FLAMECHASE_LANES", "")
        names = [n.strip() for n in given.split(",") if n.strip()]
        if not names:
            # An agent without the list reads its prompt, as a real one would.
            numbers = sorted({int(m) for m in _LANE_NAME.findall(self.request.prompt)})
            names = [f"lane-{n}" for n in numbers] or ["lane-1", "lane-2", "lane-3"]
        return list(dict.fromkeys(names))

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
        before: _Bench,
        candidates: Sequence[_Candidate],
        measured: Sequence[_Bench],
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
                    f"not in the tree ({_tests_line(attempt.tests)}; {attempt.bench.line()}); "
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
                "tests": [_tests_line(attempt.tests)],
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
    async def _climb(self, before: _Bench, risks: list[str], *, publish: bool = True) -> Report:
        """Apply this lane's next ladder rung; keep it only if it measures better.

        `publish`: lanes 2..N publish the result as an artifact package (a lane that works
        through git and PRs does not: its branch is what it publishes)."""
        req = self.request
        ws = req.workspace
        current_text = await asyncio.to_thread((ws / "solver.py").read_text, "utf-8")
        current = rung_of(current_text)
        was = approach_of(current_text) or "an unknown approach"
        target = next_rung(current, _stride(req.lane))
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
        tests = _tests_line(attempt.tests)
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

    async def _try(self, new: bytes, before: _Bench) -> _Attempt:
        """Write `new` as solver.py, run tests and bench; restore the old file unless better."""
        path = self.request.workspace / "solver.py"
        old = await asyncio.to_thread(path.read_bytes)
        await asyncio.to_thread(_write_bytes, path, new)
        try:
            tests, bench = await asyncio.gather(
                self._run(["-m", "unittest", "-q"], self.request.workspace),
                self._bench(self.request.workspace),
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
        return _Attempt(kept=better, tests=tests, bench=bench)

    async def _measure(self, cand: _Candidate) -> _Bench:
        """bench.py on a scratch copy of the tree's Python files with the candidate solver."""
        scratch = await asyncio.to_thread(_scratch_copy, self.request.workspace, cand.data)
        try:
            return await self._bench(scratch)
        finally:
            await asyncio.to_thread(shutil.rmtree, scratch, True)

    async def _bench(self, cwd: Path) -> _Bench:
        return _Bench(await self._run(["bench.py"], cwd))

    async def _run(self, args: Sequence[str], cwd: Path) -> _Check:
        """One check of the tree (its tests, its bench): the tree's own code, so it runs as an
        agent's process does, through `procs` (recorded with the engine before it runs, so a
        crash's sweep finds it) and in the turn's jail."""
        # One check at a time: the checks share the turn's process token, and ending one
        # (Proc.kill) ends every process carrying it, a concurrent check included.
        async with self._one_check:
            return await self._run_one(args, cwd)

    async def _run_one(self, args: Sequence[str], cwd: Path) -> _Check:
        if self._cut:
            raise _CutError
        # -S: the sample is stdlib-only, and skipping site start-up halves each check's time;
        # -B: no __pycache__ left in the user's tree. The shell merges stderr into the output.
        argv = ["/bin/sh", "-c", 'exec "$@" 2>&1', "sh", sys.executable, "-S", "-B", *args]
        req = self.request
        proc = await procs.Proc.start(jail.wrap(argv, req.jail), cwd=cwd, env=self._env(),
                                      on_spawn=self.on_spawn)
        self._procs.add(proc)
        deadline = time.monotonic() + _CHECK_TIMEOUT
        lines: list[bytes] = []
        code: int | None
        try:
            while (line := await proc.next_line(deadline=deadline, silence=_CHECK_TIMEOUT)) \
                    is not None:
                lines.append(line)
            code = jail.decode_exit(
                await proc.wait_exit(deadline=deadline, silence=_CHECK_TIMEOUT), req.jail)
        except (procs.TurnTimeout, procs.SilenceTimeout):
            code = None
        finally:
            await proc.kill(grace=0)
            self._procs.discard(proc)
        if self._cut:
            raise _CutError
        out = b"".join(ln if ln.endswith(b"\n") else ln + b"\n" for ln in lines)
        return _Check(code=code, output=out.decode("utf-8", "replace"))

    def _env(self) -> dict[str, str]:
        env = _child_env()
        if self.request.jail is not None:
            env["TMPDIR"] = str(self.request.jail.tmp)
        env.update(self.request.env)
        return env

    async def _kill_all(self) -> None:
        for proc in list(self._procs):
            with contextlib.suppress(Exception):
                await proc.kill(grace=0)


# ---- helpers ------------------------------------------------------------------------------


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    # PYTHONSAFEPATH would keep bench.py from importing solver.py next to it.
    env.pop("PYTHONSAFEPATH", None)
    env["PYTHONHASHSEED"] = "0"
    return env


def _stride(lane: str) -> int:
    """Rungs per turn: lane 1 climbs one at a time, lane k (k >= 2) leaps k rungs.

    The exploring lanes diverge from each other and get ahead of lane 1, so lane 1 has
    better packages to integrate, as the flow intends.
    """
    found = re.fullmatch(r"lane-(\d+)", lane)
    return max(int(found.group(1)), 1) if found and lane != "lane-1" else 1


def _bounded(report: Report) -> Report:
    """Keep a report inside the schema's list limits, however full the inbox was."""
    risks = report.get("risks")
    if isinstance(risks, list) and len(risks) > _MAX_RISKS:
        more = len(risks) - (_MAX_RISKS - 1)
        report["risks"] = [*risks[: _MAX_RISKS - 1], f"and {more} more not integrated"]
    return report


def _fmt(steps: int | None) -> str:
    return "unmeasured (bench failed)" if steps is None else str(steps)


def _is_sample(ws: Path) -> bool:
    return (ws / "bench.py").is_file() and (ws / "solver.py").is_file()


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


def _scratch_copy(ws: Path, solver: bytes) -> Path:
    """A temporary directory with the tree's top-level Python files and `solver` as solver.py."""
    scratch = Path(tempfile.mkdtemp(prefix="flamechase-sim-"))
    for entry in os.scandir(ws):
        if entry.name.endswith(".py") and entry.is_file(follow_symlinks=False):
            shutil.copyfile(entry.path, scratch / entry.name)
    (scratch / "solver.py").write_bytes(solver)
    return scratch


def _artifacts_of(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Artifact records of a delivered report, one per path, the hashed one where there is one.

    The engine lists frozen artifacts (with sha256 and blob) beside the report; the report's own
    deliverable lists the same paths without them.
    """
    by_path: dict[str, Mapping[str, Any]] = {}
    deliverable = report.get("deliverable")
    for source in (
        report.get("artifacts"),
        deliverable.get("artifacts") if isinstance(deliverable, Mapping) else None,
    ):
        if not isinstance(source, list):
            continue
        for art in source:
            if isinstance(art, Mapping):
                path = str(art.get("path", ""))
                held = by_path.get(path)
                if held is None or ("blob" not in held and "blob" in art):
                    by_path[path] = art
    return list(by_path.values())


def _verified_candidates(
    inbox_path: str | None, current: bytes
) -> tuple[list[_Candidate], list[str]]:
    """The inbox's solver.py artifacts whose blob hashes as recorded, and why others were not."""
    if not inbox_path:
        return [], []
    try:
        with open(inbox_path, encoding="utf-8") as f:
            inbox = json.load(f)
    except (OSError, ValueError) as exc:
        return [], [f"inbox unreadable ({exc.__class__.__name__}); nothing integrated"]
    if not isinstance(inbox, list):
        return [], ["inbox is not a JSON list; nothing integrated"]
    current_sha = hashlib.sha256(current).hexdigest()
    seen = {current_sha}
    candidates: list[_Candidate] = []
    refused: list[str] = []
    for entry in inbox:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("report"), Mapping):
            continue
        report_id = str(entry.get("report_id", "?"))
        lane = str(entry.get("lane", "?"))
        for art in _artifacts_of(entry["report"]):
            path = str(art.get("path", ""))
            if PurePosixPath(path).name != "solver.py":
                continue
            sha, blob = art.get("sha256"), art.get("blob")
            if not isinstance(sha, str) or not isinstance(blob, str):
                refused.append(f"report {report_id} {path}: no sha256/blob; not integrated")
                continue
            data = _read_blob(Path(blob))
            if data is None:
                refused.append(f"report {report_id} {path}: blob unreadable; not integrated")
                continue
            actual = hashlib.sha256(data).hexdigest()
            if actual != sha.lower():
                refused.append(
                    f"report {report_id} {path}: sha256 mismatch (recorded {sha[:16]}, "
                    f"blob {actual[:16]}); not integrated"
                )
                continue
            if actual in seen:  # already in the tree, or offered twice
                continue
            seen.add(actual)
            if len(candidates) < _MAX_CANDIDATES:
                candidates.append(_Candidate(report_id, lane, path, actual, data))
    return candidates, refused


def _read_blob(path: Path) -> bytes | None:
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > _MAX_BLOB:
            return None
        return path.read_bytes()
    except OSError:
        return None
