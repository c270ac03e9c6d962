"""`simulate` and `demo`: run a flow in-process with `sim` actors, then show what happened.

Both go through the engine's own entry points (`prepare` and `Engine`), exactly as `exec`
does, only with a `sim/PROFILE` agent for every role, a short turn budget and no rest
between turns: the run is real (database, events, lane copies, artifacts, the evaluator),
only the actors are simulated. `simulate` works in a throw-away copy with a throw-away
state home unless `--keep`; `demo` copies the sample into a directory the user can look at
and records the run in the real state home, so `flamechase status last` finds it.

This module writes only what a user's `exec` would write (the copy and the run); the views
it produces read the run like any other view.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from flamechase.flow import Flow
from flamechase.store import home
from flamechase.store.db import DB_NAME, Reader
from flamechase.view.state import RunFold

__all__ = [
    "SimOutcome",
    "Summary",
    "copy_sample",
    "fresh_dir",
    "run_sim",
    "sim_settings",
    "summarize",
]

# Enough turns for every lane of parallel_flame_chase's default three to take several, and
# for lane 1 to integrate what the others published; short enough to finish in seconds.
DEFAULT_TURNS = 12
DEFAULT_REST = 0.05  # the smallest rest_seconds a flow accepts
# What the bundled sample measures: `bench.py` prints `STEPS: <int>`, lower is better.
SAMPLE_METRIC = {"metric_pattern": r"STEPS: (\d+)", "metric": "steps", "direction": "minimize"}
# Never copied into a throw-away workspace: history and caches no simulated actor reads.
_SKIP = {".git", "__pycache__", ".venv", "venv", "node_modules", ".mypy_cache", ".ruff_cache",
         ".pytest_cache", ".tox"}


def _copy_traversable(src: Traversable, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for entry in src.iterdir():
        if entry.name in _SKIP or entry.name.endswith(".pyc"):
            continue
        if entry.is_dir():
            _copy_traversable(entry, dest / entry.name)
        else:
            (dest / entry.name).write_bytes(entry.read_bytes())


def copy_sample(dest: Path) -> Path:
    """Copy the bundled sample repository (package data) to `dest` (created)."""
    _copy_traversable(resources.files("flamechase").joinpath("sample"), dest)
    return dest


def copy_workspace(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True,
                    ignore=lambda _d, names: [n for n in names if n in _SKIP])
    return dest


def fresh_dir(base: Path, name: str) -> Path:
    """`base/name`, or `base/name-2`, `-3`...: the first that does not exist yet."""
    for n in range(1, 10_000):
        candidate = base / (name if n == 1 else f"{name}-{n}")
        if not candidate.exists():
            return candidate
    raise FileExistsError(f"no free name like {base / name}")


@contextlib.contextmanager
def state_home(path: Path | None) -> Iterator[None]:
    """Point FLAMECHASE_HOME at `path` for the duration (None: leave it as it is)."""
    if path is None:
        yield
        return
    before = os.environ.get(home.HOME_VAR)
    os.environ[home.HOME_VAR] = str(path)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(home.HOME_VAR, None)
        else:
            os.environ[home.HOME_VAR] = before


def _python() -> str:
    # The evaluator runs under /bin/sh: name an interpreter that surely exists.
    found = shutil.which("python3")
    return "python3" if found else shutil.which("python") or "python3"


def sim_settings(flow: Flow, given: Mapping[str, str], *, sample: bool,
                 turns: int = DEFAULT_TURNS, rest: float = DEFAULT_REST) -> dict[str, object]:
    """The settings of a simulated run: short defaults, then what the user gave (which wins).

    A user budget replaces the default one whole: `-p budget.duration=30s` should not also
    stop at 12 turns. On the bundled sample a flow with an `evaluator` param gets the
    sample's, so candidates are measured and ranked.
    """
    out: dict[str, object] = {"rest_seconds": str(rest), "resume_mode": "fresh"}
    if not any(k.startswith("budget.") for k in given):
        out["budget.turns"] = str(turns)
    fields = flow.Params.model_fields
    if sample and "evaluator" in fields:
        out["evaluator"] = f"{_python()} bench.py"
        out.update({k: v for k, v in SAMPLE_METRIC.items() if k in fields})
    out = {k: v for k, v in out.items() if k.startswith("budget.") or k in fields}
    out.update(given)
    return out


@dataclasses.dataclass(frozen=True, slots=True)
class SimOutcome:
    run_id: str
    run_dir: Path
    status: str
    exit_code: int
    message: str
    workspace: Path


def run_sim(flow: Flow, workspace: Path, settings: Mapping[str, object], *,
            task: str | None = None, agents: Sequence[tuple[str | None, str]] = (),
            profile: str = "steady", observer: Any = None, state: Path | None = None,
            warn: Callable[[str], None] = print) -> SimOutcome:
    """Run `flow` on `workspace` with `sim/<profile>` for every role not in `agents`.

    `state`: the FLAMECHASE_HOME to use for this run (None: the current one).
    """
    from flamechase.config import parse_settings
    from flamechase.engine.loop import Engine
    from flamechase.engine.prepare import RunRequest, prepare

    with state_home(state):
        _, params = parse_settings(dict(settings), flow.Params, flow.name)
        named = {role for role, _ in agents if role}
        roles = [r for r in dict.fromkeys(flow.roles(params)) if r not in named]
        items = [*agents, *((r, f"sim/{profile}") for r in roles)]
        if task is None:
            task = "continue" if (workspace / "TASK.md").is_file() else (
                f"Simulated run of {flow.name}: make small, verifiable progress.")
        request = RunRequest(flow=flow, agents=list(items), settings=settings, task=task,
                             workspace=workspace, resume=False, confirm=None, warn=warn)
        prepared = prepare(request)
        if observer is not None and callable(observer):
            observer = observer(prepared)
        end = asyncio.run(Engine(prepared, observer).run())
        close = getattr(observer, "close", None)
        if callable(close):
            close()
        run_dir = home.runs_dir() / end.run_id
    return SimOutcome(run_id=end.run_id, run_dir=run_dir, status=end.status,
                      exit_code=end.exit_code, message=end.message, workspace=workspace)


@contextlib.contextmanager
def scratch(keep: bool) -> Iterator[Path]:
    """A temporary directory, removed afterwards unless `keep`."""
    path = Path(tempfile.mkdtemp(prefix="flamechase-sim-"))
    try:
        yield path
    finally:
        if not keep:
            shutil.rmtree(path, ignore_errors=True)


@dataclasses.dataclass(frozen=True, slots=True)
class Summary:
    """What a run amounted to, from its events: the lines `demo` and `show` print."""

    run_id: str
    flow: str
    status: str
    lanes: tuple[tuple[str, int, int, int], ...]  # lane, turns, valid, failed
    reports: int
    exchanged: int  # reports another lane received and acknowledged with a valid turn
    artifacts: int  # artifacts published
    integrated: tuple[tuple[str, str, int, str | None], ...]  # lane, report, artifacts, actor
    best: str | None
    cost: float
    turns: int
    active_seconds: float
    events: int

    def lines(self) -> list[str]:
        out = [f"run {self.run_id} · {self.flow} · {self.status} · {self.turns} turns · "
               f"${self.cost:.4f} · {self.active_seconds:.1f} s active · {self.events} events"]
        per = ", ".join(f"{name} {valid}" + (f"+{failed} failed" if failed else "")
                        for name, _, valid, failed in self.lanes)
        out.append(f"turns per lane: {per or 'none'}")
        out.append(f"reports: {self.reports} published, {self.exchanged} received by "
                   f"another lane · artifacts: {self.artifacts} published, "
                   f"{sum(n for _, _, n, _ in self.integrated)} integrated")
        for lane, rid, n, actor in self.integrated:
            out.append(f"  {lane} ({actor}) integrated {rid} ({n} artifact"
                       f"{'s' if n != 1 else ''})")
        out.append(f"best candidate: {self.best or 'none ranked'}")
        return out


def summarize_fold(fold: RunFold) -> Summary:
    best = fold.best
    best_text = None
    if best is not None:
        best_text = (f"{best.metric} = {best.value:g} ({best.direction}) from {best.lane}, "
                     f"report {best.report_id}" + (", verified" if best.verified else
                                                   ", unverified"))
    return Summary(
        run_id=fold.run_id, flow=fold.flow, status=fold.status,
        lanes=tuple((s.name, s.turns, s.valid, s.failed) for s in
                    (fold.lanes[n] for n in fold.order)),
        reports=len(fold.reports), exchanged=fold.acknowledged(),
        artifacts=sum(r.artifacts for r in fold.reports),
        integrated=tuple((lane, rid, fold.by_id[rid].artifacts, actor)
                         for lane, rid, actor in fold.integrated),
        best=best_text, cost=fold.cost, turns=fold.turns,
        active_seconds=fold.active_seconds(), events=fold.events,
    )


def summarize(run_dir: Path) -> Summary:
    """The summary of the run in `run_dir`, read-only."""
    with Reader(run_dir / DB_NAME) as r:
        run = r.run()
        fold = RunFold.from_run(run, r.lanes())
        after = 0
        while True:
            batch = r.events(after=after, limit=5000)
            for ev in batch:
                fold.apply(ev)
                after = int(ev["seq"])
            if len(batch) < 5000:
                break
    # The run row has the last word on status (a run stopped by a crash emits no end event).
    fold.status = str(run.get("status") or fold.status)
    return summarize_fold(fold)
