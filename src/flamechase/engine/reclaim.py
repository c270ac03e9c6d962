"""Disk given back: what of a run's directory can be reclaimed, and reclaiming it safely.

A run keeps copies of the user's tree (lanes 2..N, planning copies, places a flow made,
yardstick copies), per-lane TMPDIRs and homes, and the lane refresh's repository; nothing
removed them. `gc` reclaims them
from runs no engine is running; `runs rm` removes a whole run.

Never losing work: a copy may hold changes no report or artifact recorded. Before a copy
goes, every file that differs from the user's tree (added, changed, or deleted there) and
whose bytes are not already in the run's blob store is kept in `<run>/kept/<place>.tar.gz`
(deleted paths listed in its `.flamechase-deleted` member), and the result says so.

Crash-safe: the archive is written to a temporary name and renamed into place, then the
copy is renamed to `<run>/.reclaiming-*` (one rename: the copy is there or it is not) and
only then removed; a later `gc` finishes any `.reclaiming-*` a SIGKILL left, and drops an
archive a SIGKILL cut short (its copy is still whole: the next keep writes it again). Removal
opens up directories an agent left read-only (workspace/removal), so no copy stays half
removed for every later gc to fail on. `FLAMECHASE_FAULT=gc-keep:N` / `gc-remove:N` (engine
/faults) kill a gc there, for the crash tests. A reclaimed
run gets `<run>/reclaimed.json` (what was kept) and is no longer resumed: `exec` starts a
new run for its task instead of resuming one whose copies are gone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import os
import re
import stat
import time
import uuid
from pathlib import Path
from typing import Any

from flamechase.engine import faults
from flamechase.engine.layout import RECLAIMED
from flamechase.errors import RunNotFound, StoreError
from flamechase.fsutil import atomic_write, fsync_dir
from flamechase.store import ports
from flamechase.store.db import DB_NAME
from flamechase.store.home import locks_dir
from flamechase.store.reader import Reader
from flamechase.workspace.diskuse import disk_use
from flamechase.workspace.locks import owner
from flamechase.workspace.removal import remove_tree

__all__ = [
    "RECLAIMED",
    "Candidate",
    "Reclaimed",
    "live",
    "plan",
    "reclaim",
    "remove_run",
]

KEPT = "kept"
_TRASH = ".reclaiming-"
DELETED_MEMBER = ".flamechase-deleted"


def live(run_dir: Path, run: dict[str, Any]) -> bool:
    """Whether an engine runs `run` now: it holds its source's lock."""
    held = owner(locks_dir(), Path(run["workspace"]))
    return bool(held and held.get("run_id") == run["id"])


@dataclasses.dataclass(frozen=True, slots=True)
class Candidate:
    """What of one run may be reclaimed: its copies (name -> path) and scratch directories."""

    run_id: str
    run_dir: Path
    status: str
    created: str
    source: Path
    copies: dict[str, Path]
    scratch: tuple[Path, ...]
    bytes: int

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.run_id,
            "status": self.status,
            "created": self.created,
            "copies": sorted(self.copies),
            "reclaimable_bytes": self.bytes,
        }


def _inside(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return path.resolve() != root.resolve()


def candidate(run_dir: Path) -> Candidate | None:
    """What `run_dir` holds that gc may reclaim (None: nothing, or it is running)."""
    try:
        with Reader(run_dir / DB_NAME) as r:
            run = r.run()
            places = r.places()
            lanes = r.lanes()
    except StoreError:
        return None
    if live(run_dir, run):
        return None
    source = Path(run["workspace"])
    copies: dict[str, Path] = {}
    for name, p in places.items():
        copies[name] = Path(p["path"])
    for ln in lanes:
        if ln["workspace"] and Path(ln["workspace"]) != source:
            copies.setdefault(f"lanes/{ln['lane']}", Path(ln["workspace"]))
    copies = {
        n: p for n, p in copies.items() if _inside(run_dir, p) and p.is_dir() and not p.is_symlink()
    }
    # The lane refresh's repository holds commits of lane 1's tree and of copies, for a run
    # that goes on: a reclaimed run does not (its copies' own work is kept first).
    scratch = [run_dir / "yardsticks", run_dir / "pool", run_dir / "lanerefresh.git"]
    for top in ("lanes", "roles", "planning"):
        for d in sorted((run_dir / top).glob("*")) if (run_dir / top).is_dir() else []:
            scratch += [d / "tmp", d / "homes"]
    kept = tuple(p for p in scratch if p.is_dir() and not p.is_symlink() and _inside(run_dir, p))
    size = sum(disk_use(p) for p in (*copies.values(), *kept))
    if not copies and not kept:
        return None
    return Candidate(
        run_id=run["id"],
        run_dir=run_dir,
        status=run["status"],
        created=run["created"],
        source=source,
        copies=copies,
        scratch=kept,
        bytes=size,
    )


def _age_ok(c: Candidate, older_than: float | None, now: float) -> bool:
    if older_than is None:
        return True
    try:
        mtime = (c.run_dir / DB_NAME).stat().st_mtime
    except OSError:
        return False
    return now - mtime >= older_than


def plan(
    run_dirs: list[Path], *, older_than: float | None = None, finished: bool = False
) -> list[Candidate]:
    """The runs of `run_dirs` gc would reclaim, oldest first."""
    now = time.time()
    out = []
    for d in run_dirs:
        c = candidate(d)
        if c is None or not _age_ok(c, older_than, now):
            continue
        if finished and c.status != "finished":
            continue
        out.append(c)
    return out


@dataclasses.dataclass(frozen=True, slots=True)
class Reclaimed:
    run_id: str
    freed: int
    kept: dict[str, dict[str, Any]]  # copy name -> {"archive", "files", "deleted"}

    def to_json(self) -> dict[str, Any]:
        return {"id": self.run_id, "freed_bytes": self.freed, "kept": self.kept}


def _blob_has(run_dir: Path, data_sha: str) -> bool:
    return (run_dir / "blobs" / "sha256" / data_sha[:2] / data_sha[2:]).is_file()


def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _rel_files(root: Path) -> dict[str, os.stat_result]:
    out: dict[str, os.stat_result] = {}
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            st = e.stat(follow_symlinks=False)
            rel = os.path.relpath(e.path, root)
            if stat.S_ISDIR(st.st_mode):
                stack.append(Path(e.path))
            elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                out[rel] = st
    return out


def _same(a: Path, sa: os.stat_result, b: Path, sb: os.stat_result) -> bool:
    if stat.S_IFMT(sa.st_mode) != stat.S_IFMT(sb.st_mode):
        return False
    if stat.S_ISLNK(sa.st_mode):
        return os.readlink(a) == os.readlink(b)
    if (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino):
        return True  # a hard link of the source's file
    if sa.st_size != sb.st_size:
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(1 << 20), fb.read(1 << 20)
            if x != y:
                return False
            if not x:
                return True


def unrecorded(copy: Path, source: Path, run_dir: Path) -> tuple[list[str], list[str]]:
    """(files of `copy` that differ from `source` and are in no blob, paths deleted)."""
    mine, theirs = _rel_files(copy), _rel_files(source) if source.is_dir() else {}
    changed = []
    for rel, st in sorted(mine.items()):
        other = theirs.get(rel)
        if other is not None and _same(copy / rel, st, source / rel, other):
            continue
        if stat.S_ISREG(st.st_mode) and _blob_has(run_dir, _sha(copy / rel)):
            continue  # published: its bytes are in the run's artifacts
        changed.append(rel)
    deleted = sorted(set(theirs) - set(mine))
    return changed, deleted


def _archive_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name) + ".tar.gz"


def _keep(
    run_dir: Path, name: str, copy: Path, source: Path, fault: faults.Hook | None = None
) -> dict[str, Any] | None:
    changed, deleted = unrecorded(copy, source, run_dir)
    if not changed and not deleted:
        return None
    kept_dir = run_dir / KEPT
    kept_dir.mkdir(mode=0o700, exist_ok=True)
    final = kept_dir / _archive_name(name)
    temp = kept_dir / f".{final.name}.{uuid.uuid4().hex}"
    import tarfile  # only when work is kept

    with tarfile.open(temp, "w:gz") as tar:
        for rel in changed:
            tar.add(copy / rel, arcname=rel, recursive=False)
            if fault is not None:
                fault("gc-keep")
        listing = ("\n".join(deleted) + "\n").encode() if deleted else b""
        info = tarfile.TarInfo(DELETED_MEMBER)
        info.size = len(listing)
        tar.addfile(info, io.BytesIO(listing))
    with open(temp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(temp, final)
    fsync_dir(kept_dir)
    return {"archive": str(final), "files": len(changed), "deleted": len(deleted)}


def _gone(path: Path, fault: faults.Hook | None = None) -> None:
    """Remove what is already out of every list (a `.reclaiming-*`); what cannot be removed
    stays for the next gc, which tries again."""
    each = (lambda: fault("gc-remove")) if fault is not None else None
    with contextlib.suppress(OSError):
        remove_tree(path, each)


def _drop(run_dir: Path, path: Path, fault: faults.Hook | None = None) -> int:
    """Move `path` out of the way in one rename, then remove it; bytes freed."""
    size = disk_use(path)
    trash = run_dir / f"{_TRASH}{uuid.uuid4().hex}"
    os.rename(path, trash)
    fsync_dir(run_dir)
    _gone(trash, fault)
    return size


def finish_interrupted(run_dir: Path) -> int:
    """Remove what a gc killed half-way left: its `.reclaiming-*` (already out of the run's
    lists) and any archive it had not finished writing (the copy it was keeping is still
    whole, so the next keep writes it again); bytes freed."""
    freed = 0
    for d in run_dir.glob(f"{_TRASH}*"):
        if d.is_dir() and not d.is_symlink():
            freed += disk_use(d)
            _gone(d)
    kept = run_dir / KEPT
    for temp in kept.glob(".*.tar.gz.*") if kept.is_dir() else []:
        if temp.is_file() and not temp.is_symlink():
            freed += disk_use(temp)
            temp.unlink()
    return freed


def reclaim(c: Candidate) -> Reclaimed:
    """Keep `c`'s unrecorded work, then remove its copies and scratch directories."""
    run_dir = c.run_dir
    with Reader(run_dir / DB_NAME) as r:
        if live(run_dir, r.run()):  # started again since the plan was made
            raise RunNotFound(f"run {c.run_id} is running now; stop it before reclaiming it")
    fault = faults.env_hook()
    freed = finish_interrupted(run_dir)
    kept: dict[str, dict[str, Any]] = {}
    for name, copy in sorted(c.copies.items()):
        if not copy.is_dir():
            continue
        got = _keep(run_dir, name, copy, c.source, fault)
        if got is not None:
            kept[name] = got
        _mark(run_dir, kept)  # before the copy goes: the run is no longer resumed
        freed += _drop(run_dir, copy, fault)
    for d in c.scratch:
        if d.is_dir():
            freed += _drop(run_dir, d, fault)
    _mark(run_dir, kept)
    ports.release_run(c.run_id)  # it is not resumed: its lanes' port blocks are free
    return Reclaimed(c.run_id, freed, kept)


def _mark(run_dir: Path, kept: dict[str, dict[str, Any]]) -> None:
    before: dict[str, Any] = {}
    path = run_dir / RECLAIMED
    if path.is_file():
        try:
            before = json.loads(path.read_text())
        except ValueError:
            before = {}
    merged = {**before.get("kept", {}), **kept}
    atomic_write(path, json.dumps({"kept": merged}, indent=1).encode())


def _trash_dir(run_dir: Path) -> Path:
    """Where whole runs go on their way out: beside `runs/` (a run moved inside it would
    still be listed), on the same file system (one rename)."""
    trash = run_dir.parent.parent / "trash"
    trash.mkdir(mode=0o700, exist_ok=True)
    return trash


def finish_removals(runs_root: Path) -> None:
    """Finish removing runs a SIGKILL left in the trash."""
    trash = runs_root.parent / "trash"
    for d in trash.glob(f"{_TRASH}*") if trash.is_dir() else []:
        _gone(d)


def remove_run(run_dir: Path) -> Reclaimed:
    """Remove a whole run that is not running: its unrecorded work is kept first, beside the
    runs, in `<state home>/kept/<run id>/`, and the run's port blocks are given back."""
    with Reader(run_dir / DB_NAME) as r:
        run = r.run()
    if live(run_dir, run):
        raise RunNotFound(f"run {run['id']} is running now; stop it before removing it")
    c = candidate(run_dir)
    if c is not None:
        for name, copy in sorted(c.copies.items()):
            _keep(run_dir, name, copy, c.source)
    kept: dict[str, dict[str, Any]] = {}
    archives = sorted((run_dir / KEPT).glob("*.tar.gz")) if (run_dir / KEPT).is_dir() else []
    if archives:
        outside = run_dir.parent.parent / KEPT / run["id"]
        outside.mkdir(parents=True, mode=0o700, exist_ok=True)
        for a in archives:
            os.replace(a, outside / a.name)
            kept[a.name.removesuffix(".tar.gz")] = {"archive": str(outside / a.name)}
        fsync_dir(outside)
    size = disk_use(run_dir)
    trash = _trash_dir(run_dir) / f"{_TRASH}{uuid.uuid4().hex}"
    os.rename(run_dir, trash)  # the run is gone from every list in one step
    fsync_dir(run_dir.parent)
    _gone(trash, faults.env_hook())
    ports.release_run(run["id"])
    return Reclaimed(run["id"], size, kept)
