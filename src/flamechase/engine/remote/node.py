"""A lane's host on a node: its private copy, its turns and its measurements, run there.

The head sends a lane's place once (`materialise`), then one job per turn with the files
the turn reads that only the head has (its inbox, the frozen artifacts the inbox names).
The host rewrites the job's paths to its own root, readies the same jail the head would
have used, runs the turn with the same `run_job` a local turn uses, and answers with the
result, the declared artifacts (checked and hashed as the head's freeze would), the turn's
directory and what the turn changed in the place. Nothing here knows Ray: the Ray actor
is a thin shell around a `LaneHost`, and tests drive a host directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import platform
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import flamechase
from flamechase import jail as jails
from flamechase.agents.backend import Backend
from flamechase.engine.clock import iso
from flamechase.engine.executor import (
    LocalExecutor,
    MeasureJob,
    ShippedFile,
    TurnJob,
    TurnResult,
    measurement_env,
)
from flamechase.engine.remote import gitsync, shipping
from flamechase.engine.remote.paths import PathMap
from flamechase.engine.turns import run_job
from flamechase.errors import FlamechaseError, SandboxUnavailable
from flamechase.flow.commands import ResultModelBroke
from flamechase.procs import TOKEN_VAR, Reaper
from flamechase.store import home
from flamechase.store.blobs import ArtifactRefused, BlobStore

IO_FILE_LIMIT = 16 * 1024 * 1024  # bytes of one turn file brought back (logs are tails)
ARTIFACTS_VAR = "FLAMECHASE_ARTIFACTS"


@dataclasses.dataclass(frozen=True, slots=True)
class TurnOutcome:
    """A remote turn's answer: the result (head paths), what changed in its place, its files."""

    result: TurnResult
    delta: shipping.Delta
    io_files: tuple[ShippedFile, ...]
    node: str
    seconds: float  # spent on the node, from the job's arrival to the answer
    # Lane 1 on a node: the copy after the turn as a commit (`delta` is then empty), and the
    # commit the copy was made before it ("" when it could not be).
    commits: gitsync.Commits | None = None
    synced: str = ""


def node_root(run_id: str, node_id: str, base: Path | None = None) -> Path:
    """Where a run's lanes live on a node: its state home, then the node, then the run (two
    nodes sharing a file system, like the loopback test's, never share a copy)."""
    return (base or home.state_home() / "nodes") / node_id[:12] / run_id


class LaneHost:
    """One lane's host. `tree` (the head's path of the user's tree) makes it the host of
    the lane that works there: its copy is a git work tree kept by `gitsync`."""

    def __init__(
        self,
        run_id: str,
        head_root: str,
        node_id: str,
        base: Path | None = None,
        *,
        tree: str | None = None,
        lane: str = "",
    ) -> None:
        self.node_id = node_id
        self.root = node_root(run_id, node_id, base)
        self.repo: gitsync.NodeRepo | None = None
        also: tuple[tuple[Path, Path], ...] = ()
        if tree is not None:
            trees = self.root.with_name(f"{run_id}.trees")
            self.repo = gitsync.NodeRepo(trees / f"{lane}.git", trees / lane)
            also = ((Path(tree), self.repo.place),)
        self.map = PathMap(Path(head_root), self.root, also)
        self.back = self.map.reverse()
        self.manifests: dict[Path, shipping.Manifest] = {}
        self.cuts: dict[str, asyncio.Event] = {}
        self.cut_early: set[str] = set()
        self.backends: dict[str, Backend] = {}
        self.reaper: Reaper | None = None
        self.probe: jails.Probe | None = None

    def describe(self) -> dict[str, Any]:
        return {
            "node": self.node_id,
            "host": platform.node(),
            "pid": os.getpid(),
            "version": flamechase.__version__,
            "root": str(self.root),
        }

    # ---- the lane's copy ---------------------------------------------------------------------

    def materialise(self, head_place: str, data: bytes) -> dict[str, Any]:
        """The place `head_place` rebuilt here from a packed tree; what it took."""
        t0 = time.monotonic()
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        dest = self.map.path(Path(head_place))
        self.manifests[dest] = shipping.materialise(data, dest)
        return {
            "entries": len(self.manifests[dest]),
            "bytes": len(data),
            "seconds": time.monotonic() - t0,
            "path": str(dest),
        }

    def has_place(self, head_place: str) -> bool:
        return self.map.path(Path(head_place)) in self.manifests

    def materialise_tree(self, sync: gitsync.Sync) -> dict[str, Any]:
        """The copy of the user's tree made here from the head's commit; what it took."""
        t0 = time.monotonic()
        assert self.repo is not None, "not the host of the lane in the user's tree"
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.repo.materialise(sync)
        return {
            "bytes": len(sync.bundle),
            "seconds": time.monotonic() - t0,
            "path": str(self.repo.place),
        }

    # ---- turns -------------------------------------------------------------------------------

    async def run(
        self, job: TurnJob, inputs: Sequence[ShippedFile], sync: gitsync.Sync | None = None
    ) -> TurnOutcome:
        t0 = time.monotonic()
        node_job = self._localise(job)
        place = node_job.request.workspace
        before = self.manifests.get(place)
        refusal = self._refusal(node_job, before, sync)
        if refusal is not None:
            return self._answer(_failed(refusal), shipping.Delta(b"", (), 0), node_job, t0)
        try:
            if sync is not None and self.repo is not None:
                await asyncio.to_thread(self.repo.apply, sync)
            await asyncio.to_thread(self._ready, node_job, inputs)
            backend = self._backend(job.agent)
        except (OSError, ArtifactRefused, FlamechaseError, gitsync.GitSyncError) as exc:
            return self._answer(
                _failed(f"node {self.node_id[:12]} could not ready the turn: {exc}"),
                shipping.Delta(b"", (), 0),
                node_job,
                t0,
            )
        cut = self.cuts.setdefault(job.job_id, asyncio.Event())
        if job.job_id in self.cut_early:  # the cut came while the turn was being readied
            cut.set()
        try:
            result = await run_job(backend, node_job, cut)
        finally:
            self.cuts.pop(job.job_id, None)
        self._sweep_later(node_job, result)
        result = await asyncio.to_thread(self._with_artifacts, node_job, result)
        if self.repo is not None:
            r = node_job.request
            message = f"{r.lane} turn {r.turn} ({r.role}) on node {self.node_id[:12]}"
            try:
                commits = await asyncio.to_thread(self.repo.commit, message)
            except (OSError, gitsync.GitSyncError) as exc:
                result = dataclasses.replace(
                    result,
                    status="failed",
                    artifacts=(),
                    error=f"node {self.node_id[:12]} could not record what the turn changed: {exc}",
                )
                commits = None
            return self._answer(result, shipping.Delta(b"", (), 0), node_job, t0, commits)
        assert before is not None
        delta, self.manifests[place] = await asyncio.to_thread(shipping.diff, place, before)
        return self._answer(result, delta, node_job, t0)

    def _answer(
        self,
        result: TurnResult,
        delta: shipping.Delta,
        node_job: TurnJob,
        t0: float,
        commits: gitsync.Commits | None = None,
    ) -> TurnOutcome:
        io_files, _left = shipping.ship_dir(node_job.request.io_dir, IO_FILE_LIMIT)
        # The node's processes are the node's to sweep; the head's reaper cannot see them.
        result = dataclasses.replace(
            self.back.result(result),
            spawned=(),
            since=0,
            host=f"{platform.node()}, node {self.node_id[:12]}",
        )
        synced = (self.repo.at or "") if self.repo is not None else ""
        return TurnOutcome(
            result=result,
            delta=delta,
            io_files=tuple(io_files),
            node=self.node_id,
            seconds=time.monotonic() - t0,
            commits=commits,
            synced=synced,
        )

    def _localise(self, job: TurnJob) -> TurnJob:
        node_job = self.map.job(job)
        spec = node_job.request.jail
        if spec is not None:
            # This node's state home is as protected here as the head's is there.
            spec = dataclasses.replace(spec, protected=(*spec.protected, home.state_home()))
            node_job = dataclasses.replace(
                node_job, request=dataclasses.replace(node_job.request, jail=spec)
            )
        return node_job

    def _refusal(
        self, job: TurnJob, manifest: shipping.Manifest | None, sync: gitsync.Sync | None
    ) -> str | None:
        if self.repo is not None:
            if sync is None or self.repo.at is None:
                return (
                    f"the copy of the user's tree is not on node {self.node_id[:12]}; "
                    "the executor sends it before the first turn"
                )
        elif manifest is None:
            return (
                f"the lane's copy {job.request.workspace} is not on node "
                f"{self.node_id[:12]}; the executor sends it before the first turn"
            )
        spec = job.request.jail
        if spec is None or not spec.confined:
            return None
        if self.probe is None:
            self.probe = jails.probe()
        try:
            jails.choose(spec.mode, self.probe)
        except SandboxUnavailable as exc:
            return (
                f"node {self.node_id[:12]} ({platform.node()}) cannot run the jail the "
                f"run uses: {exc}"
            )
        return None

    def _ready(self, job: TurnJob, inputs: Sequence[ShippedFile]) -> None:
        """What the turn reads and where it writes, made to exist here."""
        shipping.land(self.root, inputs)
        r = job.request
        dirs = [r.io_dir]
        if job.checkpoint is not None:
            dirs.append(job.checkpoint.parent)
        if ARTIFACTS_VAR in r.env:
            dirs.append(Path(r.env[ARTIFACTS_VAR]))
        if r.jail is not None:
            dirs += [*r.jail.grants, *([r.jail.turn_dir] if r.jail.turn_dir else [])]
        for d in dirs:
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
        if r.jail is not None:
            jails.ready(r.jail)

    def _backend(self, agent: str) -> Backend:
        backend = self.backends.get(agent)
        if backend is None:
            from flamechase.agents.registry import backend_for
            from flamechase.agents.spec import parse_spec

            backend = backend_for(parse_spec(agent))
            backend.check()  # the agent's CLI must be installed on this node too
            self.backends[agent] = backend
        return backend

    def _sweep_later(self, job: TurnJob, result: TurnResult) -> None:
        if self.reaper is None:
            self.reaper = Reaper()
        tokens = [t for _, t in result.spawned]
        if TOKEN_VAR in job.request.env:
            tokens.append(job.request.env[TOKEN_VAR])
        for token in tokens:
            self.reaper.later(token, result.since, job.request.kill_grace)

    def _with_artifacts(self, job: TurnJob, result: TurnResult) -> TurnResult:
        """The declared artifacts, checked and hashed as the head's freeze checks them."""
        root = job.request.env.get(ARTIFACTS_VAR)
        if result.status != "valid" or result.result is None or root is None:
            return result
        store = BlobStore(self.root / "node-blobs")
        try:
            refs = job.result.declared_artifacts(result.result)
            frozen = store.freeze(Path(root), refs)
        except ArtifactRefused as exc:
            return dataclasses.replace(result, status="failed", error=f"invalid deliverable: {exc}")
        except ResultModelBroke as exc:
            return dataclasses.replace(
                result, status="failed", error=str(exc), flow_error=exc.detail
            )
        except ValueError as exc:
            return dataclasses.replace(result, status="failed", error=f"invalid result: {exc}")
        files = [
            ShippedFile(f.path, f.sha256, store.blob_path(f.sha256).read_bytes()) for f in frozen
        ]
        return dataclasses.replace(result, artifacts=tuple(files))

    async def cut(self, job_id: str) -> None:
        event = self.cuts.get(job_id)
        if event is not None:
            event.set()
        else:
            self.cut_early.add(job_id)

    # ---- measurements ------------------------------------------------------------------------

    async def measure(self, job: MeasureJob, extra_env: Mapping[str, str]) -> dict[str, Any]:
        """`job` in this node's copy; its environment this node's, plus what the engine
        added to it (`extra_env`, a TMPDIR...)."""
        node_job = self.map.measure(job, {**measurement_env(), **self.map.env(extra_env)})
        if node_job.jail is not None:
            spec = dataclasses.replace(
                node_job.jail, protected=(*node_job.jail.protected, home.state_home())
            )
            node_job = dataclasses.replace(node_job, jail=spec)
            await asyncio.to_thread(jails.ready, spec)
        return await LocalExecutor().measure(node_job)

    async def close(self) -> None:
        """The lane's session here ends: its turns cut, their processes swept, and the run's
        copies on this node removed (the head's copy is the lane's recorded state; a later
        session sends it again). Other lanes of the run on this node end with it."""
        for event in self.cuts.values():
            event.set()
        if self.reaper is not None:
            with contextlib.suppress(Exception):
                await self.reaper.settle()
        await asyncio.to_thread(self.remove_copies)

    def remove_copies(self) -> None:
        """This run's copies on this node (`nodes/NODE/RUN/` and its trees), and the node's
        directory once no run has one there."""
        for path in (self.root, self.root.with_name(f"{self.root.name}.trees")):
            shutil.rmtree(path, ignore_errors=True)
        with contextlib.suppress(OSError):
            self.root.parent.rmdir()  # only when empty


def _failed(error: str) -> TurnResult:
    now = iso(time.time())
    return TurnResult(status="failed", started=now, ended=now, duration=0.0, error=error)
