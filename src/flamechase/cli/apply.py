"""`flamechase artifacts apply [RUN] ID`: a verified candidate laid over the run's tree.

What is written is what the runtime froze when it built the candidate's measurement copy
(`store.handover`), each blob hashed again on the way out; never the lane's tree, which its
agents could change after they were measured. Refused in one line while a run holds the tree
(its lane 1 writes there) and when the tree no longer holds, at a path the candidate touches,
what the run left there: the user's own edits are never overwritten unless `--force` says
so, and then they are set aside in the run's directory first, and the one line says where.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from flamechase.text import echo, echo_json

_SHOWN = 4


def _paths(paths: list[str]) -> str:
    more = f" and {len(paths) - _SHOWN} more" if len(paths) > _SHOWN else ""
    return ", ".join(paths[:_SHOWN]) + more


def apply_candidate(run_dir: Path, rid: str, as_json: bool, *, force: bool = False) -> int:
    from flamechase.errors import ArtifactError
    from flamechase.store import handover
    from flamechase.store.blobs import BlobStore
    from flamechase.store.db import DB_NAME
    from flamechase.store.home import locks_dir
    from flamechase.store.reader import Reader
    from flamechase.view.summary import fold_run
    from flamechase.workspace.locks import owner

    with Reader(run_dir / DB_NAME) as r:
        run = r.run()
        packages = r.metas(handover.PREFIX)
        at_end = r.meta(handover.TREE_AT_END) or {}
    run_id = run["id"]
    entry = fold_run(run_dir).board.verified.get(rid)
    if entry is None:
        raise ArtifactError(
            f"run {run_id} has no verified candidate {rid!r}; "
            f"`flamechase status {run_id}` lists its leaderboard"
        )
    place = next((p for p in packages if p.rsplit("/", 1)[-1] == rid), None)
    if place is None:
        raise ArtifactError(
            f"candidate {rid} was verified but not kept to apply (it changes a link or a "
            f"file too big to freeze, or the run predates `apply`); its reports' files: "
            f"flamechase artifacts {run_id} {rid} --extract DIR"
        )
    package = packages[place]
    tree = Path(run["workspace"])
    held = owner(locks_dir(), tree)
    if held:
        raise ArtifactError(
            f"run {held.get('run_id', '?')} holds {tree} and its lane 1 writes there; "
            "apply once it has ended (Ctrl-C it, or wait)"
        )
    if not tree.is_dir():
        raise ArtifactError(f"the run's tree {tree} is gone; nothing to apply the candidate to")
    paths = handover.touched(package)
    expected = {p: at_end.get(p, package["base"].get(p)) for p in paths}
    drift = handover.drifted(package, expected, handover.tree_state(tree, paths))
    if drift and not force:
        raise ArtifactError(
            f"{tree} has changed at {_paths(drift)} since run {run_id} left it; {rid} was not "
            "applied: undo those changes (or move them away), then apply again, or add --force "
            "to lay it over them (what is there now is set aside in the run's directory first)"
        )
    aside = _set_aside(tree, drift, run_dir) if drift else None
    done = handover.apply(BlobStore(run_dir / "blobs"), tree, package)
    if as_json:
        kept = {"set_aside": str(aside)} if aside else {}
        echo_json(json.dumps({"report_id": rid, "tree": str(tree), **done, **kept}, indent=1))
        return 0
    echo(_applied(f"{rid} ({entry.metric} = {entry.value:g}, verified) to {tree}", done))
    if aside:
        echo(f"your changes at {_paths(drift)} were set aside in {aside}")
    return 0


def _applied(what: str, done: dict[str, list[str]]) -> str:
    said = [f"{k} {_paths(done[k])}" for k in ("changed", "added", "deleted") if done[k]]
    return f"applied {what}: " + ("; ".join(said) if said else "already there, nothing changed")


def _set_aside(tree: Path, paths: list[str], run_dir: Path) -> Path:
    """Copy what the user has at `paths` (a link as a link) under the run's directory, before
    `--force` lays a candidate over it: a forced apply loses nothing."""
    dest = run_dir / "set-aside" / time.strftime("%Y%m%dT%H%M%S")
    for path in paths:
        src, to = tree / path, dest / path
        if not src.is_symlink() and not src.is_file():
            continue  # absent (the user deleted it) or a directory (apply refuses to touch it)
        to.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, to, follow_symlinks=False)
    return dest
