"""The head's side of a remote turn, without Ray: which turns leave, what goes with them,
how what comes back lands, and how a lost turn reads.

Any remote executor composes these (the Ray one does; tests drive a `LaneHost` in-process
with them), so what travels and how it is checked is the same whatever carries it.
"""

from __future__ import annotations

import dataclasses
import json
import tarfile
import time
from collections.abc import MutableSet
from pathlib import Path
from typing import Any

from flamechase.engine.clock import iso
from flamechase.engine.executor import ShippedFile, TurnJob, TurnResult
from flamechase.engine.remote import gitsync, shipping
from flamechase.engine.remote.node import IO_FILE_LIMIT, TurnOutcome
from flamechase.jail.spec import contains
from flamechase.store.blobs import ARTIFACT_FILE_LIMIT

GUARD_SLACK = 300.0  # beyond a turn's own timeouts, before its host is given up on
# What can go wrong landing a delta: the head's copy then no longer follows the node's.
LANDING_ERRORS = (OSError, ValueError, EOFError, tarfile.TarError)  # GitSyncError is one


def is_remote(job: TurnJob) -> bool:
    """A lane turn in a private place of the run: the turns that leave this machine. Lane 1
    (the user's tree) and turns outside lanes stay."""
    r = job.request
    return bool(r.lane) and r.workspace != r.run_dir and contains(r.run_dir, r.workspace)


def in_tree(job: TurnJob, tree: Path | None) -> bool:
    """A lane turn in the user's tree, when that lane runs on a node (`ray.lane_1=node`)."""
    r = job.request
    return tree is not None and bool(r.lane) and r.workspace == tree


@dataclasses.dataclass(slots=True)
class TreeLane:
    """The head's side of the lane in the user's tree on a node: its link to the tree, and
    the commit its node's copy holds (None: no copy there yet, or it is to be made anew)."""

    link: gitsync.TreeLink
    synced: str | None = None

    def sync(self, job: TurnJob) -> gitsync.Sync:
        """The user's tree as the node needs it before the turn (the whole history when the
        copy is to be made; then a commit, or nothing)."""
        r = job.request
        return self.link.sync(self.synced, f"your tree as {r.lane}'s turn {r.turn} began")

    def land(self, job: TurnJob, outcome: TurnOutcome, sync: gitsync.Sync) -> TurnResult:
        """The turn's files here and its commit into the user's tree; the result to record
        (failed when the user changed what the turn changed). Raises one of LANDING_ERRORS."""
        self.synced = outcome.synced or None
        shipping.land(job.request.io_dir, outcome.io_files)
        if outcome.commits is None:  # the turn failed before or while recording it
            return outcome.result
        r = job.request
        landing = self.link.land(sync, outcome.commits, f"turn-{r.turn}-{r.attempt}")
        return held(outcome, r.lane, landing, sync) if landing.held else outcome.result


def held(
    outcome: TurnOutcome, lane: str, landing: gitsync.Landing, sync: gitsync.Sync
) -> TurnResult:
    """A turn of the lane in the user's tree that changed paths the user changed meanwhile."""
    paths = ", ".join(landing.clashes[:5]) + (
        f" and {len(landing.clashes) - 5} more" if len(landing.clashes) > 5 else ""
    )
    return dataclasses.replace(
        outcome.result,
        status="failed",
        artifacts=(),
        error=(
            f"nothing of {lane}'s turn was brought into your tree: you changed {paths} "
            f"while it ran, and so did the turn. Its changes are kept as commit "
            f"{landing.commit[:12]} ({landing.held_ref}; `git diff {sync.commit[:12]} "
            f"{landing.commit[:12]}` shows them); the lane's next turn starts from your "
            "tree as it is then"
        ),
    )


def turn_inputs(job: TurnJob, sent: MutableSet[str]) -> tuple[ShippedFile, ...]:
    """The turn's directory as the head wrote it (its inbox), and the frozen artifacts the
    inbox names that the host has not had yet (`sent`: their hashes, updated); paths
    relative to the run directory."""
    r = job.request
    rel = r.io_dir.relative_to(r.run_dir).as_posix()
    files, _ = shipping.ship_dir(r.io_dir, IO_FILE_LIMIT)
    out = [dataclasses.replace(f, path=f"{rel}/{f.path}") for f in files]
    wanted: list[str] = []
    for sha, blob in named_blobs(r.io_dir / "inbox.json"):
        path = Path(blob)
        if sha not in sent and contains(r.run_dir, path):
            wanted.append(path.relative_to(r.run_dir).as_posix())
            sent.add(sha)
    blobs, _ = shipping.ship(r.run_dir, wanted, ARTIFACT_FILE_LIMIT)
    return (*out, *blobs)


def named_blobs(inbox: Path) -> list[tuple[str, str]]:
    """(sha256, blob path) of every frozen artifact an inbox file names."""
    try:
        data = json.loads(inbox.read_text("utf-8"))
    except (OSError, ValueError):
        return []
    found: list[tuple[str, str]] = []
    stack: list[Any] = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            sha, blob = item.get("sha256"), item.get("blob")
            if isinstance(sha, str) and isinstance(blob, str):
                found.append((sha, blob))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def land(job: TurnJob, outcome: TurnOutcome) -> None:
    """What the turn changed, into the head's copy of its place; its files, into its turn
    directory here. Raises one of LANDING_ERRORS when the copy cannot follow."""
    shipping.apply(outcome.delta, job.request.workspace)
    shipping.land(job.request.io_dir, outcome.io_files)


def unlanded(outcome: TurnOutcome, lane: str, exc: BaseException) -> TurnResult:
    return dataclasses.replace(
        outcome.result,
        status="failed",
        artifacts=(),
        error=f"what {lane}'s turn changed could not be brought back from its node: {exc}",
    )


def guard(job: TurnJob) -> float:
    """Seconds past every timeout the turn itself has (each repair is another ask)."""
    r = job.request
    return (job.max_repairs + 1) * (r.turn_timeout + r.kill_grace) + GUARD_SLACK


def lost(lane: str, why: str, started: str, duration: float) -> TurnResult:
    """The failed turn of a lane whose host was lost or never came."""
    return TurnResult(
        status="failed",
        started=started,
        ended=iso(time.time()),
        duration=duration,
        error=f"{lane}'s node {why}",
    )


def cut_before_start(started: str, duration: float) -> TurnResult:
    """A stop that came before the turn reached its node: taken again, as any cut turn."""
    return TurnResult(
        status="interrupted",
        started=started,
        ended=iso(time.time()),
        duration=duration,
        error="turn cut by a stop before it started",
    )


NEXT_TURN = (
    "its next turn starts on another node from its last recorded state (a lost node is not "
    "held against the lane)"
)


def lost_mid_turn(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    return f"was lost mid-turn ({type(exc).__name__}: {first}); {NEXT_TURN}"


def stats(
    job: TurnJob, outcome: TurnOutcome, inputs: tuple[ShippedFile, ...], seconds: float
) -> dict[str, Any]:
    """What one remote turn cost, for bench/ray_lanes.py."""
    return {
        "kind": "turn",
        "lane": job.request.lane,
        "job": job.job_id,
        "node": outcome.node,
        "seconds": seconds,
        "node_seconds": outcome.seconds,
        "agent_seconds": outcome.result.duration,
        "delta_bytes": len(outcome.delta.data)
        + (len(outcome.commits.bundle) if outcome.commits else 0),
        "delta_entries": outcome.delta.entries,
        "io_bytes": sum(len(f.data) for f in outcome.io_files),
        "inputs_bytes": sum(len(f.data) for f in inputs),
    }
