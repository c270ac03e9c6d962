"""Lanes on a Ray cluster: one long-lived actor per lane, on whatever node can hold it.

The control loop stays here and stays the only writer. A turn of a lane that works in a
private place under the run directory goes to that lane's actor (a `LaneHost` on a node,
asking for `lane_resources`); so does a turn of lane 1 in the user's tree when `tree` is set
(`ray.lane_1=node`: its copy and its turns travel as commits, see `gitsync`); everything else
(roles outside lanes, lane 1 by default) runs here, on the `LocalExecutor`. What travels
for lanes in private places (see `shipping`):

    head -> node   the place, packed, once per actor (through Ray's object store); per turn
                   the job (paths rewritten there), the turn's inbox and the frozen
                   artifacts it names (each hash checked on landing)
    node -> head   the result, the declared artifacts (hashed there, checked here, then
                   frozen by the loop as any turn's), the turn's directory (report, usage,
                   transcript) and what the turn changed in the place

The head lands each delta in its own copy of the place before the turn is recorded, so the
head's copy is always the lane's last recorded state. A node lost mid-turn (or a host that
stops answering past every timeout the turn has) makes that turn failed, with the reason,
marked `host_lost` (never held against the lane); the lane's actor is dropped, and its next
turn starts a new actor from the head's copy on another node: none goes to a node a host was
lost on for AVOID_SECONDS, since Ray keeps placing actors on a dead node until it declares it
dead (some 15 s); a lane only such a node can take waits the avoidance out, then goes there.
A lane no node can take within `placement_timeout` fails its turn the same way: the run never
waits on a dead or missing node.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import RayError, RayTaskError

import flamechase
from flamechase.engine.clock import iso
from flamechase.engine.executor import (
    Executor,
    LocalExecutor,
    MeasureJob,
    ShippedFile,
    TurnJob,
    TurnResult,
)
from flamechase.engine.remote import gitsync, head, joining, shipping
from flamechase.engine.remote.node import LaneHost, TurnOutcome
from flamechase.engine.remote.options import DEFAULT_WAIT, LaneResources

AVOID_SECONDS = 120.0  # how long no new host goes to a node a host was lost on
NODE_LABEL = "ray.io/node-id"  # the label Ray gives every node: its id


@ray.remote(max_restarts=0, max_task_retries=0)
class LaneActor:
    """A `LaneHost` on the node Ray placed it on. Async: a cut or a measurement is served
    while a turn runs."""

    def __init__(
        self, run_id: str, head_root: str, tree: str | None = None, lane: str = ""
    ) -> None:
        self.host = LaneHost(
            run_id, head_root, ray.get_runtime_context().get_node_id(), tree=tree, lane=lane
        )

    async def describe(self) -> dict[str, Any]:
        return self.host.describe()

    async def materialise(self, head_place: str, data: bytes) -> dict[str, Any]:
        return await asyncio.to_thread(self.host.materialise, head_place, data)

    async def materialise_tree(self, sync: gitsync.Sync) -> dict[str, Any]:
        return await asyncio.to_thread(self.host.materialise_tree, sync)

    async def run(
        self, job: TurnJob, inputs: tuple[ShippedFile, ...], sync: gitsync.Sync | None = None
    ) -> TurnOutcome:
        return await self.host.run(job, inputs, sync)

    async def cut(self, job_id: str) -> None:
        await self.host.cut(job_id)

    async def measure(self, job: MeasureJob, extra_env: Mapping[str, str]) -> dict[str, Any]:
        return await self.host.measure(job, extra_env)

    async def close(self) -> None:
        await self.host.close()


def connect(address: str | None) -> str:
    """Join the cluster (`address`, else RAY_ADDRESS, else the one `ray start` runs on this
    machine); its address. ExecutorUnavailable (exit 2, nothing written) when it cannot be
    joined, within seconds (see `joining`)."""
    return joining.join(address)


@dataclasses.dataclass(slots=True)
class _Lane:
    handle: Any
    info: dict[str, Any]
    places: set[str] = dataclasses.field(default_factory=set)
    blobs: set[str] = dataclasses.field(default_factory=set)  # sha256 already sent
    lock: asyncio.Lock = dataclasses.field(default_factory=asyncio.Lock)
    tree: head.TreeLane | None = None  # the lane in the user's tree


class _Lost(Exception):
    """The lane's host is gone or never came: the turn fails with this reason."""


class RayExecutor(Executor):
    def __init__(
        self,
        resources: LaneResources,
        local: LocalExecutor,
        *,
        placement_timeout: float = DEFAULT_WAIT,
        tree: Path | None = None,
    ) -> None:
        self.resources = resources
        self.local = local
        self.placement_timeout = placement_timeout
        self.tree = tree  # the user's tree, when the lane that works there runs on a node
        self._lanes: dict[str, _Lane] = {}
        self._running: dict[str, _Lane] = {}
        self._starting: set[str] = set()  # remote jobs whose host is being readied
        self._cut: set[str] = set()  # ... and were cut meanwhile
        # Nodes a lane's host was lost on, and when: no new host goes there for
        # AVOID_SECONDS. Ray declares a node dead only some 15 s after it went, and until then
        # places actors there (which die at once, costing the lane a second turn).
        self._lost_nodes: dict[str, float] = {}
        # What each remote turn and each copy cost (bench/ray_lanes.py reads it).
        self.stats: list[dict[str, Any]] = []

    # ---- turns -----------------------------------------------------------------------------

    async def run(self, job: TurnJob) -> TurnResult:
        in_tree = head.in_tree(job, self.tree)
        if not (in_tree or head.is_remote(job)):
            return await self.local.run(job)
        lane, t0, started = job.request.lane, time.monotonic(), iso(time.time())
        self._starting.add(job.job_id)
        sync: gitsync.Sync | None = None
        try:
            host = await self._host(lane, job, in_tree)
            if in_tree:
                sync = await self._sync(host, job)
            inputs = await asyncio.to_thread(head.turn_inputs, job, host.blobs)
            if job.job_id in self._cut:  # cut while its host was being readied
                return head.cut_before_start(started, time.monotonic() - t0)
            self._running[job.job_id] = host
            outcome: TurnOutcome = await asyncio.wait_for(
                host.handle.run.remote(job, inputs, sync), head.guard(job)
            )
        except (RayError, TimeoutError, _Lost, gitsync.GitSyncError) as exc:
            node = self._drop(lane)
            lost = head.lost(lane, _why(exc, job), started, time.monotonic() - t0)
            if not _host_lost(exc):
                return lost
            if node:
                self._lost_nodes[node] = time.monotonic()
            return dataclasses.replace(lost, host_lost=True)
        finally:
            self._running.pop(job.job_id, None)
            self._starting.discard(job.job_id)
            self._cut.discard(job.job_id)
        return await self._land(job, host, outcome, inputs, sync, t0)

    async def _land(
        self,
        job: TurnJob,
        host: _Lane,
        outcome: TurnOutcome,
        inputs: tuple[ShippedFile, ...],
        sync: gitsync.Sync | None,
        t0: float,
    ) -> TurnResult:
        lane = job.request.lane
        try:
            if sync is None:
                await asyncio.to_thread(head.land, job, outcome)
                result = outcome.result
            else:
                assert host.tree is not None
                result = await asyncio.to_thread(host.tree.land, job, outcome, sync)
        except head.LANDING_ERRORS as exc:
            self._drop(lane)  # its next turn starts afresh from the head's copy
            return head.unlanded(outcome, lane, exc)
        self.stats.append(head.stats(job, outcome, inputs, time.monotonic() - t0))
        return result

    async def _sync(self, host: _Lane, job: TurnJob) -> gitsync.Sync:
        """What the lane's node is told before the turn; the copy is made there first when
        it has none."""
        assert self.tree is not None
        if host.tree is None:
            r = job.request
            host.tree = head.TreeLane(gitsync.TreeLink(self.tree, r.run_id, r.lane))
        t0 = time.monotonic()
        sync = await asyncio.to_thread(host.tree.sync, job)
        if host.tree.synced is None:
            done = await host.handle.materialise_tree.remote(sync)
            host.tree.synced = sync.commit
            self.stats.append(
                {
                    "kind": "tree",
                    "lane": job.request.lane,
                    "node": host.info.get("node"),
                    "bytes": len(sync.bundle),
                    "unpack_seconds": done["seconds"],
                    "seconds": time.monotonic() - t0,
                }
            )
            return gitsync.Sync(sync.commit)
        return sync

    async def _host(self, lane: str, job: TurnJob, in_tree: bool = False) -> _Lane:
        """The lane's actor, placed and holding the job's place (sent if it is not there;
        the user's tree is sent by `_sync`)."""
        host = self._lanes.get(lane)
        if host is None:
            host = await self._place(lane, job, in_tree)
            self._lanes[lane] = host
        if in_tree:
            return host
        async with host.lock:
            place = str(job.request.workspace)
            if place not in host.places:
                t0 = time.monotonic()
                data, entries = await asyncio.to_thread(shipping.pack_tree, job.request.workspace)
                packed = time.monotonic() - t0
                ref = await asyncio.to_thread(ray.put, data)
                done = await host.handle.materialise.remote(place, ref)
                host.places.add(place)
                self.stats.append(
                    {
                        "kind": "copy",
                        "lane": lane,
                        "node": host.info.get("node"),
                        "bytes": len(data),
                        "entries": entries,
                        "pack_seconds": packed,
                        "unpack_seconds": done["seconds"],
                        "seconds": time.monotonic() - t0,
                    }
                )
        return host

    async def _place(self, lane: str, job: TurnJob, in_tree: bool) -> _Lane:
        r = job.request
        actor: Any = LaneActor  # what @ray.remote made of the class (typed or not)
        deadline = time.monotonic() + self.placement_timeout
        while True:
            # Avoiding lost nodes never costs more than the avoidance: past it, a lane no
            # other node could take is placed anywhere, for the rest of its wait.
            avoided = self._avoided_until()
            handle = self._options(actor).remote(
                r.run_id, str(r.run_dir), str(r.workspace) if in_tree else None, lane
            )
            until = deadline if avoided is None else min(deadline, avoided)
            try:
                info: dict[str, Any] = await asyncio.wait_for(
                    handle.describe.remote(), max(until - time.monotonic(), 0.0)
                )
                break
            except TimeoutError:
                _kill(handle)
                if avoided is not None and time.monotonic() < deadline:
                    continue
                raise _Lost(
                    f"could not be placed: no node of the cluster could take {lane} "
                    f"within {self.placement_timeout:g} s (it asks for "
                    f"{self.resources.describe()})"
                ) from None
        if info.get("version") != flamechase.__version__:
            _kill(handle)
            raise _Lost(
                f"{str(info.get('node'))[:12]} ({info.get('host')}) runs "
                f"flamechase {info.get('version')}, this machine "
                f"{flamechase.__version__}; install the same version on every node"
            )
        return _Lane(handle=handle, info=info)

    def _avoided_until(self) -> float | None:
        """When the last node avoided stops being avoided (None: none is now)."""
        now = time.monotonic()
        self._lost_nodes = {n: t for n, t in self._lost_nodes.items() if now - t < AVOID_SECONDS}
        return max(self._lost_nodes.values()) + AVOID_SECONDS if self._lost_nodes else None

    def _options(self, actor: Any) -> Any:
        """The lane actor asking for the lane's resources, on none of the nodes a host was
        lost on lately (Ray's node-id label; a Ray without label selectors places it
        anywhere)."""
        self._avoided_until()
        options = self.resources.ray_options()
        if self._lost_nodes:
            avoid = f"!in({','.join(sorted(self._lost_nodes))})"
            with contextlib.suppress(TypeError, ValueError):
                return actor.options(**options, label_selector={NODE_LABEL: avoid})
        return actor.options(**options)

    def _drop(self, lane: str) -> str | None:
        """The lane's host ended and forgotten; the node it was on, if known."""
        host = self._lanes.pop(lane, None)
        if host is None:
            return None
        with contextlib.suppress(Exception):
            ray.kill(host.handle)
        node = host.info.get("node")
        return node if isinstance(node, str) else None

    async def cut(self, job_id: str) -> None:
        host = self._running.get(job_id)
        if host is None:
            if job_id in self._starting:
                self._cut.add(job_id)
            await self.local.cut(job_id)
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(host.handle.cut.remote(job_id), 30)

    # ---- measurements ----------------------------------------------------------------------

    async def measure(self, job: MeasureJob) -> dict[str, Any]:
        """In the node's copy when a live host holds the measured place, else here (the
        head's copy is the lane's last recorded state). One of the runtime's own programs
        (unjailed: it keeps stores on this machine, such as a lane refresh's repository)
        always runs here, on the head's copy; a host holding that copy is sent it again
        before the lane's next turn, since the program may have rewritten it."""
        if job.jail is None and job.pattern is None:
            ours = await self.local.measure(job)
            for host in self._lanes.values():
                host.places.discard(str(job.cwd))
            return ours
        found = next(
            ((lane, h) for lane, h in self._lanes.items() if str(job.cwd) in h.places), None
        )
        if found is not None:
            lane, host = found
            # The engine's own additions to the measurement's environment, not this
            # machine's PATH or HOME: the node has its own.
            extra = {k: v for k, v in job.env.items() if os.environ.get(k) != v}
            try:
                receipt: dict[str, Any] = await host.handle.measure.remote(job, extra)
                return receipt
            except RayError:
                self._drop(lane)
        return await self.local.measure(job)

    async def close(self) -> None:
        for lane, host in list(self._lanes.items()):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(host.handle.close.remote(), 10)
            self._drop(lane)
        await self.local.close()
        with contextlib.suppress(Exception):
            ray.shutdown()


def _kill(handle: Any) -> None:
    with contextlib.suppress(Exception):
        ray.kill(handle)


def _host_lost(exc: BaseException) -> bool:
    """The turn failed because its host went (its node, its process, its answers), not
    through the turn, the lane's placement or the user's tree."""
    if isinstance(exc, TimeoutError):
        return True
    return isinstance(exc, RayError) and not isinstance(exc, RayTaskError)


def _why(exc: BaseException, job: TurnJob) -> str:
    # What happened, and what comes next only when it is sure: a failure that counts may
    # hold the lane (its reason then quotes this), a lost node never does.
    if isinstance(exc, _Lost):
        return str(exc)
    if isinstance(exc, gitsync.GitSyncError):
        return f"could not be given your tree ({exc})"
    if isinstance(exc, TimeoutError):
        return (
            f"gave no answer {head.guard(job):g} s into the turn, past every timeout the "
            f"turn has; {head.NEXT_TURN}"
        )
    return head.lost_mid_turn(exc)


__all__ = ["LaneActor", "RayExecutor", "connect"]
