"""What is under way beside the loop: turn jobs, measurements, places being made.

Each runs as an asyncio task that ends in a value (`TurnDone`, `MeasureDone`, `PlaceDone`)
and wakes the loop; the loop takes finished values in start order and records them. A turn's
result is finalized here, on the loop's side of the executor: the artifacts its result
declares are frozen into the blob store (a refused package makes the turn failed).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flamechase import events as ev
from flamechase.engine.executor import Executor, MeasureJob, TurnResult
from flamechase.engine.flowcode import FlowCode
from flamechase.engine.measurelock import MeasurementLock
from flamechase.engine.scheduling import Planned
from flamechase.flow import commands as cm
from flamechase.store import handover
from flamechase.store.blobs import ArtifactRefused

if TYPE_CHECKING:
    from flamechase.engine.ledger import Ledger
    from flamechase.engine.setup import RunDirs


@dataclasses.dataclass(frozen=True, slots=True)
class TurnDone:
    planned: Planned
    command: cm.StartTurn
    result: TurnResult
    artifacts: tuple[dict[str, Any], ...] = ()
    refusal: str | None = None  # the deliverable could not be frozen

    @property
    def status(self) -> str:
        return "failed" if self.refusal else self.result.status

    @property
    def error(self) -> str | None:
        return self.refusal or self.result.error

    def event(self) -> ev.TurnEnded:
        r, c, p = self.result, self.command, self.planned
        u = r.usage
        common: dict[str, Any] = dict(
            lane=c.lane,
            actor=c.role,
            turn=c.number,
            attempt=p.started.attempt,
            duration=round(r.duration, 3),
            cost_usd=round(u.cost_usd, 6),
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            cache_read_tokens=u.cache_read_tokens,
            cache_write_tokens=u.cache_write_tokens,
            transcript=r.transcript,
            repairs=r.repairs,
            exit_code=r.exit_code,
            requests=list(r.requests),
            requests_refused=list(r.requests_refused),
            host=r.host,
            usage_shares=dict(u.shares),
            usage_source=u.shares_from if u.shares else "",
        )
        status = self.status
        if status == "valid":
            result = r.result or {}
            report_status = result.get("status")
            return ev.TurnValid(
                **common,
                counted=c.counted,
                result=result,
                report_status=report_status if isinstance(report_status, str) else None,
                summary=str(result.get("summary", ""))[:500],
                artifacts=list(self.artifacts),
                acknowledged=dict(p.acks),
                recovered_from_checkpoint=r.recovered_from_checkpoint,
            )
        if status == "failed":
            return ev.TurnFailed(
                **common,
                counted=c.counted,
                error=(self.error or "turn failed")[:2000],
                node_lost=r.host_lost and not self.refusal,
            )
        if status == "limited":
            return ev.LanePaused(
                **common, until=r.resets_at, reason=r.error or "usage limit reached"
            )
        return ev.TurnInterrupted(**common, reason=r.error or "turn cut by a stop")


@dataclasses.dataclass(frozen=True, slots=True)
class MeasureDone:
    command: cm.Measure
    receipt: dict[str, Any]

    def record(self, ledger: Ledger) -> None:
        with ledger.tx():
            c = self.command
            ledger.measured(
                c.key,
                c.lane,
                c.place,
                self.receipt,
                label=c.label,
                metric=c.metric,
                direction=c.direction,
            )


@dataclasses.dataclass(frozen=True, slots=True)
class RanDone:
    command: cm.Run
    receipt: dict[str, Any]

    def record(self, ledger: Ledger) -> None:
        with ledger.tx():
            c = self.command
            ledger.ran(c.key, c.lane, c.place, self.receipt, label=c.label)


@dataclasses.dataclass(frozen=True, slots=True)
class PlaceDone:
    command: cm.MakePlace
    path: str
    dirs: RunDirs
    changed: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    package: dict[str, Any] | None = None  # an overlay's frozen files (store.handover)

    def record(self, ledger: Ledger) -> None:
        self.dirs.place_recorded(self.command.name)
        with ledger.tx():
            if self.package is not None:
                ledger.writer.set_meta(handover.meta_key(self.command.name), self.package)
            ledger.place_made(
                self.command.name,
                self.path,
                self.command.how,
                self.dirs.lane_of_place(self.command.name),
                changed=list(self.changed),
                deleted=list(self.deleted),
                label=self.command.label or _place_words(self.command),
            )


def _place_words(c: cm.MakePlace) -> str:
    """What the engine knows a place to be, when its flow did not say."""
    if c.how == "snapshot":
        return f"a private copy of your tree ({c.name})"
    if c.how == "overlay":
        return f"a copy of {c.base} with {c.over}'s changes laid over ({c.name})"
    return f"an empty place ({c.name})"


@dataclasses.dataclass(frozen=True, slots=True)
class RemovedDone:
    """A dropped place's files are gone (it was recorded dropped before they went)."""

    path: str

    def record(self, ledger: Ledger) -> None:
        return None


@dataclasses.dataclass(frozen=True, slots=True)
class FrozenDone:
    command: cm.Freeze
    files: dict[str, str]
    error: str | None = None

    def record(self, ledger: Ledger) -> None:
        with ledger.tx():
            ledger.frozen(self.command.key, self.command.place, self.files, self.error)


Done = TurnDone | MeasureDone | RanDone | PlaceDone | RemovedDone | FrozenDone
Offload = Callable[..., Awaitable[Any]]


async def inline(fn: Callable[..., Any], *args: Any) -> Any:
    """Run blocking work in the loop's thread (for tests that must not race a fake clock)."""
    return fn(*args)


class Jobs:
    def __init__(
        self,
        executor: Executor,
        wake: asyncio.Event,
        code: FlowCode,
        offload: Offload = asyncio.to_thread,
    ) -> None:
        self.executor = executor
        self.wake = wake
        self.code = code
        # Jobs started and taken so far: whether a round of the loop saw anything happen.
        self.started = 0
        self.taken = 0
        # Where blocking file work runs (copies, freezing): a worker thread, or inline for
        # deterministic tests.
        self.offload = offload
        # Insertion order is start order: finished work is recorded in that order.
        self._turns: dict[str, tuple[asyncio.Task[TurnDone], Planned, cm.StartTurn]] = {}
        self._other: dict[str, asyncio.Task[Any]] = {}
        # The runtime's exclusive programs: one at a time, on the lock ahead of agents.
        self.locks = MeasurementLock()

    def _watch(self, task: asyncio.Task[Any]) -> None:
        self.started += 1
        task.add_done_callback(lambda _t: self.wake.set())

    # ---- starting ----------------------------------------------------------------------------

    def start_turn(self, planned: Planned, command: cm.StartTurn, dirs: RunDirs) -> None:
        task = asyncio.ensure_future(self._turn(planned, command, dirs))
        self._turns[planned.slot] = (task, planned, command)
        self._watch(task)

    async def _turn(self, planned: Planned, command: cm.StartTurn, dirs: RunDirs) -> TurnDone:
        result = await self.executor.run(planned.job)
        if result.status != "valid" or planned.artifact_root is None or result.result is None:
            return TurnDone(planned, command, result)
        try:
            if result.artifacts:  # the turn ran elsewhere: its files land first, hash-checked
                # Imported here: only turns run on another node need it (tarfile and all), and
                # every `exec` would otherwise pay for it before its first agent.
                from flamechase.engine.remote import shipping

                await self.offload(shipping.land, planned.artifact_root, result.artifacts)
            refs = self.code.declared_artifacts(command.result, result.result)
            frozen = await self.offload(dirs.blobs.freeze, planned.artifact_root, refs)
            if result.artifacts:
                from flamechase.engine.remote import shipping

                shipping.check_frozen(frozen, result.artifacts)
        except ArtifactRefused as exc:
            return TurnDone(planned, command, result, refusal=f"invalid deliverable: {exc}")
        except ValueError as exc:  # the result no longer validates: a flow/model bug
            return TurnDone(planned, command, result, refusal=f"invalid result: {exc}")
        return TurnDone(
            planned,
            command,
            result,
            artifacts=tuple(
                {
                    "path": f.path,
                    "description": f.description,
                    "size": f.size,
                    "sha256": f.sha256,
                    "blob": str(dirs.blobs.blob_path(f.sha256)),
                }
                for f in frozen
            ),
        )

    def make_place(self, command: cm.MakePlace, dirs: RunDirs) -> None:
        key = command.key
        if key in self._other or dirs.has_place(command.name):
            return

        async def make() -> PlaceDone:
            restore = dirs.frozen(command.restore)
            path, changed, deleted = await self.offload(
                dirs.make_place, command.name, command.how, command.base, command.over, restore
            )
            package = None
            if command.how == "overlay":
                package = await self.offload(dirs.candidate, command.base, path, changed, deleted)
            return PlaceDone(command, str(path), dirs, tuple(changed), tuple(deleted), package)

        self._other[key] = asyncio.ensure_future(make())
        self._watch(self._other[key])

    def remove(self, path: Path, dirs: RunDirs) -> None:
        """Remove a dropped place's files beside the loop."""
        key = f"remove:{path}"
        if key in self._other:
            return

        async def remove() -> RemovedDone:
            await self.offload(dirs.remove, path)
            return RemovedDone(str(path))

        self._other[key] = asyncio.ensure_future(remove())
        self._watch(self._other[key])

    def freeze(self, command: cm.Freeze, dirs: RunDirs) -> None:
        key = f"freeze:{command.key}"
        if key in self._other:
            return

        async def freeze() -> FrozenDone:
            try:
                return FrozenDone(command, await self.offload(dirs.freeze, command))
            except ArtifactRefused as exc:
                return FrozenDone(command, {}, error=str(exc))

        self._other[key] = asyncio.ensure_future(freeze())
        self._watch(self._other[key])

    def measure(self, command: cm.Measure | cm.Run, job: MeasureJob, dirs: RunDirs) -> None:
        key = f"measure:{command.key}"
        if key in self._other:
            return

        async def run() -> MeasureDone | RanDone:
            if isinstance(command, cm.Run) and command.frozen is not None:
                receipt = await self._yardstick(command, job, dirs)
            else:
                receipt = await self._measured(command, job)
            if isinstance(command, cm.Run):
                return RanDone(command, receipt)
            return MeasureDone(command, receipt)

        self._other[key] = asyncio.ensure_future(run())
        self._watch(self._other[key])

    async def _measured(self, command: cm.Measure | cm.Run, job: MeasureJob) -> dict[str, Any]:
        """The program run, under the run's measurement lock when it is exclusive."""
        if job.lock is None:
            return await self.executor.measure(job)
        async with self.locks.hold(job.lock, f"runtime:{command.key}") as note:
            receipt = await self.executor.measure(job)
        return {**receipt, "lock": note}

    async def _yardstick(self, command: cm.Run, job: MeasureJob, dirs: RunDirs) -> dict[str, Any]:
        """A yardstick in its own copy of the place, made and checked first (before it waits
        for the lock), removed after."""
        try:
            problem = await self.offload(dirs.yardstick, command)
            if problem is None:
                receipt = await self._measured(command, job)
            else:
                receipt = {
                    "argv": list(job.argv),
                    "cwd": str(job.cwd),
                    "exit_code": None,
                    "duration": 0.0,
                    "output_sha256": None,
                    "output": "",
                    "error": problem,
                }
        finally:
            await self.offload(dirs.yardstick_done, command)
        return {**receipt, "frozen": dict(command.frozen or {})}

    # ---- looking ----------------------------------------------------------------------------

    def busy(self) -> bool:
        return bool(self._turns or self._other)

    def turns(self) -> list[Planned]:
        return [p for _, p, _ in self._turns.values()]

    def has_turn(self, slot: str) -> bool:
        return slot in self._turns

    def making(self, place: str) -> bool:
        """Whether place `place` is being made (its `MakePlace` under way)."""
        return f"place:{place}" in self._other

    def copying(self) -> bool:
        """Whether a place is being made or removed (the run's size is about to change)."""
        return any(k.startswith(("place:", "remove:")) for k in self._other)

    def counted_turns(self) -> int:
        return sum(1 for _, _, c in self._turns.values() if c.counted)

    def any_done(self) -> bool:
        return any(t.done() for t, _, _ in self._turns.values()) or any(
            t.done() for t in self._other.values()
        )

    def take_done(self) -> list[Done]:
        """Finished work, in start order; a task that raised re-raises here."""
        out: list[Done] = []
        for slot, (task, _, _) in list(self._turns.items()):
            if task.done():
                del self._turns[slot]
                self.taken += 1
                out.append(task.result())
        for key, other in list(self._other.items()):
            if other.done():
                del self._other[key]
                self.taken += 1
                out.append(other.result())
        return out

    # ---- stopping ----------------------------------------------------------------------------

    async def cut_all(self) -> None:
        for _, planned, _ in list(self._turns.values()):
            with contextlib.suppress(Exception):
                await self.executor.cut(planned.job.job_id)

    async def drain(self, timeout: float) -> list[Done]:
        """Wait (up to `timeout`) for what is under way; what finished."""
        tasks = [t for t, _, _ in self._turns.values()] + list(self._other.values())
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
        out: list[Done] = []
        with contextlib.suppress(Exception):
            out = self.take_done()
        return out
