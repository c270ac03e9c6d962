"""The seam between the control loop and the machines turns run on: jobs in, results out.

A `TurnJob` is everything needed to run one turn (the agent spec, the request with its paths
and prompt, the result schema, the repair prompt, where a checkpoint may be); a `TurnResult`
is everything the loop records of it (outcome, validated result, usage, the processes it
spawned). Both are frozen and picklable, with no open handles and no callbacks into the loop,
so an executor may run the job in another process or on another machine. The local executor
runs jobs as asyncio tasks beside the loop (today's behaviour).
"""

from __future__ import annotations

import abc
import asyncio
import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from flamechase.agents.backend import Backend, TurnRequest, Usage
from flamechase.flow.commands import ResultSpec
from flamechase.jail import JailSpec

OutcomeStatus = Literal["valid", "failed", "interrupted", "limited"]


@dataclasses.dataclass(frozen=True, slots=True)
class ShippedFile:
    """A file brought back from the machine a turn ran on: its path relative to the job's
    artifact root, its SHA-256 as hashed there, and its bytes."""

    path: str
    sha256: str
    data: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class TurnJob:
    job_id: str
    agent: str  # the agent spec text (`claude/opus:high`, `exec:/path`, ...)
    request: TurnRequest
    result: ResultSpec
    # The repair prompt, split where the reason goes: before + reason + after.
    repair: tuple[str, str]
    checkpoint: Path | None = None
    checkpoint_identity: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    max_repairs: int = 2
    # Where the agent may append requests for the runtime (JSON lines), if anywhere.
    requests: Path | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class TurnResult:
    status: OutcomeStatus
    started: str
    ended: str
    duration: float
    result: dict[str, Any] | None = None
    error: str | None = None
    exit_code: int | None = None
    usage: Usage = dataclasses.field(default_factory=Usage)
    recovered_from_checkpoint: bool = False
    resets_at: str | None = None  # ISO time a usage window reopens (status limited)
    transcript: str | None = None
    repairs: int = 0
    # (process group id, token) of every agent process the turn started, and the boot tick
    # just before the first: what the loop's reaper sweeps for escaped descendants.
    spawned: tuple[tuple[int, str], ...] = ()
    since: int = 0
    # Ports the turn's processes listened on outside its lane's block (engine/portwatch),
    # and whether they ran in a network namespace of their own (then nothing is checked).
    ports_outside: tuple[int, ...] = ()
    own_netns: bool = False
    # What the agent asked the runtime for, and the lines refused (one line each: why).
    requests: tuple[dict[str, Any], ...] = ()
    requests_refused: tuple[str, ...] = ()
    # The declared artifacts of a turn that ran on another machine: the loop lands them in
    # the job's artifact root, checking every hash on arrival, then freezes them as usual.
    # Empty for a turn that ran here (the loop reads the artifact root itself).
    artifacts: tuple[ShippedFile, ...] = ()
    host: str | None = None  # the machine it ran on, when not this one ("HOST, node ID")
    # Failed because the machine it ran on was lost (a Ray node gone mid-turn), not because of
    # anything the turn did: recorded as such, and not held against the lane.
    host_lost: bool = False
    # The flow's result model broke while it checked the result (`ResultModelBroke`): its
    # traceback. The turn is failed, and the run stops on it (a flow bug).
    flow_error: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class MeasureJob:
    """A program the runtime runs itself (an evaluator, a gate, git): `argv` in `cwd`. With a
    `pattern`, a measurement: `command` through /bin/sh, its value the pattern's last match.
    With a `lock`, the directory whose measurement lock the runtime holds while it runs."""

    key: str
    argv: tuple[str, ...]
    cwd: Path
    timeout: float
    env: Mapping[str, str]
    jail: JailSpec | None = None
    pattern: str | None = None
    command: str | None = None
    lock: Path | None = None


class Executor(abc.ABC):
    """Runs turn jobs and measurements. `cut` stops a job under way as soon as it can."""

    @abc.abstractmethod
    async def run(self, job: TurnJob) -> TurnResult: ...

    @abc.abstractmethod
    async def cut(self, job_id: str) -> None: ...

    @abc.abstractmethod
    async def measure(self, job: MeasureJob) -> dict[str, Any]: ...

    async def close(self) -> None:  # noqa: B027 -- optional hook
        """Release what the executor holds (connections, workers)."""


class LocalExecutor(Executor):
    """Turns run on this machine, as tasks of the engine's event loop."""

    def __init__(self, backends: Mapping[str, Backend] | None = None) -> None:
        # Backends already checked by `prepare`, by agent spec text; others are built on use.
        self._backends = dict(backends or {})
        self._cuts: dict[str, asyncio.Event] = {}

    def _backend(self, agent: str) -> Backend:
        backend = self._backends.get(agent)
        if backend is None:
            from flamechase.agents.registry import backend_for
            from flamechase.agents.spec import parse_spec

            backend = backend_for(parse_spec(agent))
            self._backends[agent] = backend
        return backend

    async def run(self, job: TurnJob) -> TurnResult:
        from flamechase.engine.turns import run_job

        cut = self._cuts.setdefault(job.job_id, asyncio.Event())
        try:
            return await run_job(self._backend(job.agent), job, cut)
        finally:
            self._cuts.pop(job.job_id, None)

    async def cut(self, job_id: str) -> None:
        event = self._cuts.get(job_id)
        if event is not None:
            event.set()

    async def measure(self, job: MeasureJob) -> dict[str, Any]:
        from flamechase.engine.scoring import run_command, run_evaluator

        if job.pattern is not None and job.command is not None:
            return await run_evaluator(
                job.command, job.cwd, job.pattern, job.timeout, env=dict(job.env), jail=job.jail
            )
        return await run_command(
            list(job.argv), job.cwd, job.timeout, env=dict(job.env), jail=job.jail
        )


def measurement_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a measurement: ours, without a turn's token or FLAMECHASE_* files."""
    env = dict(os.environ if base is None else base)
    for key in [k for k in env if k.startswith("FLAMECHASE_") and k != "FLAMECHASE_HOME"]:
        env.pop(key)
    return env
