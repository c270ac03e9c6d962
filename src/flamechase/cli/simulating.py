"""How `simulate` and `demo` compose a simulated run: the copy, the settings, the engine.

Both go through the engine's own entry points (`prepare` and `Engine`), exactly as `exec`
does, only with a `sim/PROFILE` agent for every role, a short turn budget and no rest
between turns: the run is real (database, events, places, artifacts, the evaluator), only
the agents are simulated (each plays the flow's own simulated actor, or answers the flow's
result schemas itself). `simulate` works in a throw-away copy with a throw-away state home
unless `--keep`; `demo` copies the sample into a directory the user can look at and records
the run in the real state home, so `flamechase status last` finds it.

This module writes only what a user's `exec` would write (the copy and the run); the views
drawn afterwards read the run like any other view.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flamechase.store import home

if TYPE_CHECKING:
    from flamechase.flow import Flow

__all__ = [
    "SimOutcome",
    "copy_sample",
    "copy_workspace",
    "fresh_dir",
    "run_sim",
    "scratch",
    "sim_settings",
]

# Enough turns for every lane of a three-lane flow to take several, and for lane 1 to
# integrate what the others published; short enough to finish in seconds.
DEFAULT_TURNS = 12
DEFAULT_REST = 0.05  # the smallest rest_seconds a flow accepts
# Never copied into a throw-away workspace: history and caches no simulated actor reads.
_SKIP = {
    ".git",
    "__pycache__",
    ".venv",
    "venv",
    "node_modules",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".tox",
}


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
    shutil.copytree(
        src, dest, symlinks=True, ignore=lambda _d, names: [n for n in names if n in _SKIP]
    )
    return dest


def fresh_dir(base: Path, name: str) -> Path:
    """`base/name`, or `base/name-2`, `-3`...: the first that does not exist yet."""
    for n in range(1, 10_000):
        candidate = base / (name if n == 1 else f"{name}-{n}")
        if not candidate.exists():
            return candidate
    raise FileExistsError(f"no free name like {base / name}")


def _python() -> str:
    # The evaluator runs under /bin/sh: name an interpreter that surely exists.
    found = shutil.which("python3")
    return "python3" if found else shutil.which("python") or "python3"


def sim_settings(
    flow: Flow[Any],
    given: Mapping[str, str],
    *,
    sample: bool,
    turns: int = DEFAULT_TURNS,
    rest: float = DEFAULT_REST,
) -> dict[str, object]:
    """The settings of a simulated run: short defaults, then what the user gave (which wins).

    A user budget replaces the default one whole: `-p budget.duration=30s` should not also
    stop at 12 turns. On the bundled sample a flow with an `evaluator` param gets the
    sample's, so candidates are measured and ranked.
    """
    out: dict[str, object] = {"rest_seconds": str(rest), "resume_mode": "fresh"}
    if not any(k.startswith("budget.") for k in given):
        out["budget.turns"] = str(turns)
    fields = flow.Params.model_fields
    if sample:
        out.update(flow.demo_params(fields, f"{_python()} bench.py"))
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


def run_sim(
    flow: Flow[Any],
    workspace: Path,
    settings: Mapping[str, object],
    *,
    task: str | None = None,
    agents: Sequence[tuple[str | None, str]] = (),
    profile: str = "steady",
    observer: Any = None,
    state: Path | None = None,
    warn: Callable[[str], None] = print,
) -> SimOutcome:
    """Run `flow` on `workspace` with `sim/<profile>` for every role not in `agents`.

    `state`: the FLAMECHASE_HOME to use for this run (None: the current one).
    """
    from flamechase.config import parse_settings
    from flamechase.engine.loop import Engine
    from flamechase.engine.prepare import RunRequest, prepare

    with home.pointed_at(state):
        _, params = parse_settings(dict(settings), flow.Params, flow.name)
        named = {role for role, _ in agents if role}
        roles = [r for r in dict.fromkeys(flow.roles(params)) if r not in named]
        items = [*agents, *((r, f"sim/{profile}") for r in roles)]
        if task is None:
            task = (
                "continue"
                if (workspace / "TASK.md").is_file()
                else (f"Simulated run of {flow.name}: make small, verifiable progress.")
            )
        request = RunRequest(
            flow=flow,
            agents=list(items),
            settings=settings,
            task=task,
            workspace=workspace,
            resume=False,
            confirm=None,
            warn=warn,
        )
        prepared = prepare(request)
        if observer is not None and callable(observer):
            observer = observer(prepared)
        end = asyncio.run(Engine(prepared, observer).run())
        close = getattr(observer, "close", None)
        if callable(close):
            close()
        run_dir = home.runs_dir() / end.run_id
    return SimOutcome(
        run_id=end.run_id,
        run_dir=run_dir,
        status=end.status,
        exit_code=end.exit_code,
        message=end.message,
        workspace=workspace,
    )


@contextlib.contextmanager
def scratch(keep: bool) -> Iterator[Path]:
    """A temporary directory, removed afterwards unless `keep`."""
    path = Path(tempfile.mkdtemp(prefix="flamechase-sim-"))
    try:
        yield path
    finally:
        if not keep:
            shutil.rmtree(path, ignore_errors=True)
