"""PUBLIC: run a flow through the real engine with scripted turns and a clock that jumps.

For flow authors' tests and ours: the engine, its store (real SQLite), its places (real
copies) and the flow are the real ones; only the agents and time are not. A `ScriptedExecutor`
answers each turn job with what a script says (a report, a failure, a usage limit...) after
a simulated duration; a `FakeClock` jumps straight to the next thing due, so a run of hours
takes milliseconds and never depends on how busy the machine is.

    clock = FakeClock()
    executor = ScriptedExecutor(clock, lambda job: FakeTurn(report={"status": "progress",
                                                                    "summary": "did it"}))
    run = run_engine("flame_chase", workspace, settings={"budget.turns": "4"},
                     executor=executor, clock=clock)
    assert run.status == "finished"
    record = run.record()           # typed events, the flow's state, turns (flamechase.record)

The run is stored in a temporary state home of its own, never the user's (`home=` names one,
`keep=True` keeps the temporary one); `read_run(run_dir)` reads any stored run.
"""

from __future__ import annotations

import asyncio
import dataclasses
import heapq
import itertools
import shutil
import sys
import tempfile
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from flamechase.agents.backend import Usage
from flamechase.engine.clock import iso
from flamechase.engine.ending import RunEnd
from flamechase.engine.executor import Executor, MeasureJob, TurnJob, TurnResult
from flamechase.engine.jobs import inline
from flamechase.engine.ledger import Observer
from flamechase.engine.loop import Engine
from flamechase.flow.commands import ResultModelBroke
from flamechase.record import RunRecord, read_run
from flamechase.store import home as state_home

__all__ = [
    "EngineRun",
    "FakeClock",
    "FakeTurn",
    "RunRecord",
    "ScriptedExecutor",
    "read_run",
    "run_engine",
    "run_for_real",
]


class FakeClock:
    """Time that passes only when the engine waits, and then jumps to the next thing due."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start
        self._origin = start
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._count = itertools.count()

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now - self._origin + 1000.0

    def call_at(self, at: float, callback: Callable[[], None]) -> None:
        heapq.heappush(self._timers, (at, next(self._count), callback))

    def advance(self, seconds: float) -> None:
        """Move time on by hand (firing what falls due)."""
        self._fire(self.now + seconds)

    def _fire(self, until: float) -> None:
        while self._timers and self._timers[0][0] <= until:
            at, _, callback = heapq.heappop(self._timers)
            self.now = max(self.now, at)
            callback()
        self.now = max(self.now, until)

    async def wait(self, wake: asyncio.Event, timeout: float) -> None:
        # What is ready to run runs first; only a loop with nothing left to do moves time on.
        # (`run_engine` runs the engine's blocking file work inline, so nothing real is
        # pending in another thread while time jumps.)
        for _ in range(10):
            if wake.is_set():
                return
            await asyncio.sleep(0)
        target = self.now + max(0.0, timeout)
        if self._timers:
            target = min(target, self._timers[0][0])
        self._fire(target)
        for _ in range(10):  # let what the timers resolved run up to the loop's wake-up
            if wake.is_set():
                return
            await asyncio.sleep(0)


@dataclasses.dataclass(frozen=True, slots=True)
class FakeTurn:
    """What a scripted turn does: end valid with `report`, fail with `error`, hit a usage
    limit (`limited_for` seconds), or run until cut (`hang`); after `duration` seconds."""

    report: Mapping[str, Any] | None = None
    error: str | None = None
    duration: float = 60.0
    cost: float = 0.0
    output_tokens: int = 0
    limited_for: float | None = None
    hang: bool = False
    repaired: Mapping[str, Any] | None = None  # the report a repair ask gets, if any


Script = Callable[[TurnJob], FakeTurn]


class ScriptedExecutor(Executor):
    """Answers turn jobs from a script, on a `FakeClock`; records every job it saw."""

    def __init__(
        self,
        clock: FakeClock,
        script: Script,
        measure: Callable[[MeasureJob], Mapping[str, Any]] | None = None,
    ) -> None:
        self.clock = clock
        self.script = script
        self.measure_script = measure
        self.jobs: list[TurnJob] = []
        self.measured: list[MeasureJob] = []
        self._cuts: dict[str, asyncio.Future[str]] = {}

    async def run(self, job: TurnJob) -> TurnResult:
        self.jobs.append(job)
        turn = self.script(job)
        started = self.clock.time()
        done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._cuts[job.job_id] = done

        def end() -> None:
            if not done.done():
                done.set_result("ended")

        if not turn.hang:
            self.clock.call_at(started + turn.duration, end)
        how = await done
        self._cuts.pop(job.job_id, None)
        usage = Usage(cost_usd=turn.cost, output_tokens=turn.output_tokens)
        common: dict[str, Any] = dict(
            started=iso(started),
            ended=iso(self.clock.time()),
            duration=self.clock.time() - started,
            usage=usage,
        )
        if how == "cut":
            return TurnResult(status="interrupted", error="turn cut by a stop", **common)
        if turn.limited_for is not None:
            return TurnResult(
                status="limited",
                error="usage limit reached",
                resets_at=iso(self.clock.time() + turn.limited_for),
                **common,
            )
        if turn.report is None:
            return TurnResult(
                status="failed", error=turn.error or "the agent failed", exit_code=1, **common
            )
        return self._validated(job, turn, common)

    @staticmethod
    def _validated(job: TurnJob, turn: FakeTurn, common: dict[str, Any]) -> TurnResult:
        try:
            return ScriptedExecutor._checked(job, turn, common)
        except ResultModelBroke as exc:  # the flow's model broke: as a real executor says
            return TurnResult(status="failed", error=str(exc), flow_error=exc.detail, **common)

    @staticmethod
    def _checked(job: TurnJob, turn: FakeTurn, common: dict[str, Any]) -> TurnResult:
        try:
            return TurnResult(
                status="valid", result=job.result.validate(dict(turn.report or {})), **common
            )
        except ValueError as exc:
            problem = f"{job.result.noun} rejected: {exc}"
        if turn.repaired is not None:
            try:
                return TurnResult(
                    status="valid",
                    repairs=1,
                    result=job.result.validate(dict(turn.repaired)),
                    **common,
                )
            except ValueError as exc:
                problem = f"{job.result.noun} rejected: {exc}"
        return TurnResult(status="failed", error=problem, repairs=job.max_repairs, **common)

    async def cut(self, job_id: str) -> None:
        done = self._cuts.get(job_id)
        if done is not None and not done.done():
            done.set_result("cut")

    async def measure(self, job: MeasureJob) -> dict[str, Any]:
        self.measured.append(job)
        if self.measure_script is None:
            return {
                "command": job.command,
                "cwd": str(job.cwd),
                "exit_code": None,
                "value": None,
                "error": "no measurement scripted",
            }
        return {"command": job.command, "cwd": str(job.cwd), **self.measure_script(job)}


def run_for_real(job: MeasureJob) -> dict[str, Any]:
    """A measurement or a program (`Measure`, `Run`) run as the runtime runs it (in its place,
    jailed as the place's turns are), to its end before the fake clock moves on: for
    `ScriptedExecutor(clock, script, measure=run_for_real)`, when a test's turns write real
    files and the flow's measurements should read them. Its duration is real time."""
    from concurrent.futures import ThreadPoolExecutor

    from flamechase.engine.executor import LocalExecutor

    # On a thread of its own: the engine's loop (and the fake clock) waits for it.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, LocalExecutor().measure(job)).result()


class EngineRun:
    """What `run_engine` returns: how the run ended (`end`: `run_id`, `status`, `exit_code`,
    `message`), where it is stored (`home`, `run_dir`), and its record (`record()`, read afresh
    at each call: `flamechase.record.RunRecord`).

    A temporary state home (`run_engine` without `home`) is removed with this object, or by
    `close()` (also at the end of a `with` block); `run_engine(keep=True)` leaves it.
    """

    def __init__(self, end: RunEnd, home: Path, *, temporary: bool) -> None:
        self.end = end
        self.home = home
        self.run_dir = home / "runs" / end.run_id
        self.temporary = temporary
        self._remove = weakref.finalize(self, shutil.rmtree, home, True) if temporary else None

    @property
    def run_id(self) -> str:
        return self.end.run_id

    @property
    def status(self) -> str:
        return self.end.status

    @property
    def exit_code(self) -> int:
        return self.end.exit_code

    @property
    def message(self) -> str:
        return self.end.message

    @property
    def traceback(self) -> str:
        """The flow's own traceback when its code broke the run (also in the run directory,
        `flow-traceback.txt`); empty otherwise."""
        return self.end.traceback

    @property
    def abandoned(self) -> bool:
        """A call into the flow's code never returned: it was left running in its thread."""
        return self.end.abandoned

    def record(self) -> RunRecord:
        """The run as stored now: typed events, the flow's state, turns, reports..."""
        return read_run(self.run_dir)

    def close(self) -> None:
        """Remove the temporary state home now (nothing for a home that was given or kept)."""
        if self._remove is not None:
            self._remove()

    def __enter__(self) -> EngineRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"EngineRun({self.run_id!r}, {self.status!r}, run_dir={str(self.run_dir)!r})"


def run_engine(
    flow: str,
    workspace: Path,
    *,
    executor: Executor,
    clock: FakeClock,
    settings: Mapping[str, object] | None = None,
    agents: Sequence[tuple[str | None, str]] = (),
    task: str = "make it better",
    resume: bool = False,
    observer: Observer | None = None,
    engine_hook: Callable[[Engine], None] | None = None,
    home: Path | None = None,
    keep: bool = False,
) -> EngineRun:
    """Prepare and run `flow` on `workspace` as `exec` would, with `executor` and `clock`.

    The run is stored in `home`, a state home of the test's (for a resume, the `home` of the
    run before); without one, in a temporary one of its own (never the user's state home,
    whatever `FLAMECHASE_HOME` says), removed with the result unless `keep`. Where the run is
    stored is said on stderr. Roles without an agent in `agents` get `sim/steady` (never
    started: the executor answers). `engine_hook` sees the engine before it runs (e.g. to
    schedule a stop on the clock).
    """
    temporary = home is None
    where = Path(tempfile.mkdtemp(prefix="flamechase-test-")) if home is None else Path(home)
    try:
        with state_home.pointed_at(where):
            end = _run(
                flow,
                workspace,
                executor,
                clock,
                settings,
                agents,
                task,
                resume,
                observer,
                engine_hook,
            )
    except BaseException:
        if temporary and not keep:
            shutil.rmtree(where, ignore_errors=True)
        raise
    result = EngineRun(end, where, temporary=temporary and not keep)
    kept = (
        "a temporary state home, removed with the result; run_engine(keep=True) keeps it"
        if result.temporary
        else ("kept" if temporary else "the state home given")
    )
    print(
        f"flamechase.testing: run {end.run_id} {end.status} in {result.run_dir} ({kept})",
        file=sys.stderr,
    )
    return result


def _run(
    flow: str,
    workspace: Path,
    executor: Executor,
    clock: FakeClock,
    settings: Mapping[str, object] | None,
    agents: Sequence[tuple[str | None, str]],
    task: str,
    resume: bool,
    observer: Observer | None,
    engine_hook: Callable[[Engine], None] | None,
) -> RunEnd:
    from flamechase.config import parse_settings
    from flamechase.engine.prepare import RunRequest, prepare
    from flamechase.loader import load_flow

    loaded = load_flow(flow)
    named = {role for role, _ in agents if role}
    given = dict(settings or {})
    given.setdefault("rest_seconds", "0.05")
    try:
        _, params = parse_settings(dict(given), loaded.Params, loaded.name)
        roles = list(loaded.roles(params))
    except Exception:  # a bad param or the flow's bug: prepare() says so, as `exec` would
        roles = []
    items = [*agents, *((r, "sim/steady") for r in roles if r not in named)]
    request = RunRequest(
        flow=loaded,
        agents=list(items),
        settings=given,
        task=task,
        workspace=workspace,
        resume=resume,
        confirm=None,
        warn=lambda _text: None,
        flow_ref=flow,
    )
    engine = Engine(prepare(request), observer, executor=executor, clock=clock, offload=inline)
    if engine_hook is not None:
        engine_hook(engine)
    return asyncio.run(engine.run())
