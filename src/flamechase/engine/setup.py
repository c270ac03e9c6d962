"""The run's directories and places: made, guarded, and checked again on every resume.

Owns the control-path guard (the identities of the run directory, the database, the blob
store, lane directories and places: a swapped path stops the run rather than being written
through), the blob store, private places (snapshots of the source), the rest between a
lane's turns and usage pauses, and what a measurement needs to run confined.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shlex
import shutil
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from flamechase import interpreter
from flamechase.engine import namespace, yardstick
from flamechase.engine.executor import MeasureJob, measurement_env
from flamechase.engine.layout import SOURCE, RunLayout
from flamechase.engine.ledger import LaneRow, Ledger
from flamechase.engine.prepare import Prepared
from flamechase.engine.scheduling import TurnBuilder
from flamechase.errors import FlowError, SnapshotFailed
from flamechase.flow import commands as cm
from flamechase.fsutil import atomic_write, private_dirs
from flamechase.procs import Reaper
from flamechase.store import handover
from flamechase.store.blobs import BlobStore
from flamechase.store.reader import Reader
from flamechase.tools import locks
from flamechase.workspace import overlay
from flamechase.workspace.guard import ControlPaths
from flamechase.workspace.reuse import CopyPool
from flamechase.workspace.snapshots import clean_partials


class RunDirs:
    def __init__(self, prep: Prepared, layout: RunLayout, reader: Reader, ledger: Ledger) -> None:
        self.prep = prep
        self.layout = layout
        self.reader = reader
        self.ledger = ledger
        self.guard = ControlPaths()
        self.blobs = BlobStore(layout.blobs)
        self._lanes: list[dict[str, Any]] = []
        self._places: dict[str, dict[str, Any]] = {}
        self._rest_until: dict[str, float] = {}
        self._tokens: list[str] = []
        # Copies (snapshots and overlays) are kept when dropped and brought back to their base
        # in O(changed) for the next one, instead of a whole copy each (workspace/reuse): a
        # dropped snapshot becomes the next snapshot, a measurement's the next measurement's.
        self.pool = CopyPool(layout.pool)

    # ---- making ------------------------------------------------------------------------------

    def make(self) -> None:
        """Create (idempotently) the run's directories, check what must still exist, guard."""
        lay, guard = self.layout, self.guard
        for d in (lay.root, lay.lanes, lay.blobs):
            d.mkdir(mode=0o700, exist_ok=True)
            guard.record(d, "dir")
        guard.record(lay.db, "file")
        # A claim on the measurement lock left by an engine that died: no gate runs now.
        locks.unclaim(lay.root)
        clean_partials(lay.lanes)
        yardstick.remove(lay.yardsticks)  # copies a crash left behind
        CopyPool.remove(self.pool.root)  # kept copies whose manifests went with the engine
        # There before any jail is set up, so every jail hides it (confinement).
        self.pool.root.mkdir(mode=0o700, exist_ok=True)
        self._lanes = self.reader.lanes()
        for row in self._lanes:
            name = row["lane"]
            for d in (lay.lane_dir(name), lay.artifact_root(name), lay.lane_dir(name) / "turns"):
                d.mkdir(mode=0o700, exist_ok=True)
                guard.record(d, "dir")
        self._places = self.reader.places()
        for name, place in self._places.items():
            path = Path(place["path"])
            if not path.is_dir():
                raise SnapshotFailed(
                    f"the private copy {name} ({path}) is gone; its work is lost, so the run "
                    "will not recreate it; start fresh with -p resume_mode=fresh"
                )
            guard.record(path, "dir")
        stored = self.reader.meta("control_paths")
        if stored is not None:
            # Identities recorded before must still hold after a resume.
            ControlPaths.from_json(stored).verify()
        with self.ledger.tx():
            self.ledger.writer.set_meta("control_paths", guard.to_json())

    def has_place(self, name: str) -> bool:
        return name == SOURCE or name in self._places

    def ready(self, c: cm.Command) -> bool:
        """Whether every place `c` works in or reads exists (a command whose place is still
        being made waits for it: the flow asks again once `PlaceMade` arrives)."""
        if isinstance(c, cm.StartTurn | cm.Measure | cm.Run):
            used = (c.place, *c.reads)
        elif isinstance(c, cm.Freeze):
            used = (c.place,)
        elif isinstance(c, cm.MakePlace):
            used = tuple(p for p in (c.base, c.over) if p is not None)
        else:
            return True
        return all(self.has_place(p) for p in used)

    def make_place(
        self,
        name: str,
        how: str = "snapshot",
        base: str | None = None,
        over: str | None = None,
        restore: Mapping[str, Any] | None = None,
    ) -> tuple[Path, list[str], list[str]]:
        """A snapshot of the source (or of place `base`), an empty directory, or an overlay
        (see `MakePlace`), at the place's path; (path, changed, deleted). Runs in a worker
        thread."""
        parts = name.split("/")
        if name == SOURCE or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise SnapshotFailed(
                f"{name!r} is not a place a flow may make: use a relative name like lanes/lane-2"
            )
        parent = self.layout.place_dir(name)
        private_dirs(parent, self.layout.root)
        dest = self.layout.place(name)
        clean_partials(parent)
        changed: list[str] = []
        deleted: list[str] = []
        source = self.place_path(base or SOURCE)
        if how == "empty":
            dest.mkdir(mode=0o700, exist_ok=True)
        elif how == "overlay":
            if dest.exists():  # a crash half-way: start over, the base is still there
                self.remove(dest)
            changed, deleted = overlay.place(
                self.pool, source, self.place_path(over or SOURCE), dest
            )
            for rel, sha in (restore or {}).items():
                self._restore(dest, rel, sha)
        elif not dest.exists():  # (there: made before a crash, and kept as it is)
            self.pool.take(source, dest, brief=True)
        return dest, changed, deleted

    def candidate(
        self, base: str | None, dest: Path, changed: list[str], deleted: list[str]
    ) -> dict[str, Any] | None:
        """An overlay's changed files frozen from the runtime's copy, for `artifacts apply`."""
        base_dir = self.place_path(base or SOURCE)
        return handover.freeze_candidate(self.blobs, base_dir, dest, changed, deleted)

    def place_path(self, name: str) -> Path:
        return self.prep.workspace if name == SOURCE else self.layout.place(name)

    def _restore(self, dest: Path, rel: str, sha: str) -> None:
        """Put a frozen file back as it was frozen (checked against its hash)."""
        data = self.blobs.blob_path(sha).read_bytes()
        if hashlib.sha256(data).hexdigest() != sha:
            raise SnapshotFailed(
                f"the frozen copy of {rel} no longer matches its hash {sha}; "
                "the run's blob store was changed"
            )
        target = dest / rel
        overlay.clear(target, dest)  # whatever the candidate put there goes
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, data, mode=0o644)

    def freeze(self, c: cm.Freeze) -> dict[str, str]:
        """Hash and store the files `c` names in its place: path -> SHA-256."""
        root = self.place_path(c.place)
        wanted: list[str] = []
        for pattern in c.paths:
            wanted += [
                str(p.relative_to(root))
                for p in sorted(root.glob(pattern))
                if p.is_file() and not p.is_symlink()
            ]
        if c.command:
            wanted += named_files(c.command, root)
        refs = [(rel, "frozen") for rel in dict.fromkeys(wanted)]
        return {f.path: f.sha256 for f in self.blobs.freeze(root, refs)}

    def forget_place(self, name: str) -> Path:
        """Stop listing and guarding a place about to be removed; its path."""
        path = self.layout.place(name)
        self._places.pop(name, None)
        self.guard.forget(path)
        return path

    def reserve(self, c: cm.MakePlace) -> bool:
        """Set a kept copy aside for place `c`, made next (True: it grows nothing)."""
        if c.how == "empty" or self.has_place(c.name):
            return False
        return self.pool.reserve(self.place_path(c.base or SOURCE), self.layout.place(c.name))

    def keep(self, path: Path) -> bool:
        """Take a dropped place's copy back into the pool if it came from there (a rename,
        done at once so that a copy asked for in the same round finds it); False: remove it."""
        if not self.pool.lent(path):
            return False
        self.pool.give(path)
        return True

    def remove(self, path: Path) -> None:
        """Remove a private place's copy, or keep it for reuse (runs in a worker thread)."""
        if self.pool.lent(path):
            self.pool.give(path)
        elif path.exists():
            shutil.rmtree(path)

    def frozen(self, key: str | None) -> dict[str, str]:
        """The files a `Freeze` kept (path -> SHA-256), by its key."""
        if key is None:
            return {}
        receipt = self.reader.measurement(key)
        if receipt is None or not isinstance(receipt.get("files"), dict):
            raise SnapshotFailed(
                f"nothing was frozen under {key!r}; a flow must freeze "
                "files before a place restores them"
            )
        return dict(receipt["files"])

    def place_recorded(self, name: str) -> None:
        path = self.layout.place(name)
        self._places[name] = {"name": name, "path": str(path)}
        self.guard.record(path, "dir")
        with self.ledger.tx():
            self.ledger.writer.set_meta("control_paths", self.guard.to_json())

    def lane_of_place(self, name: str) -> str | None:
        path = str(self.layout.place(name))
        return next((ln["lane"] for ln in self._lanes if ln["workspace"] == path), None)

    def lane_rows(self) -> list[dict[str, Any]]:
        return self._lanes

    # ---- when a slot may take its next turn --------------------------------------------------

    def rested(self, slot: str, now: float, lane: bool) -> None:
        if lane:
            self._rest_until[slot] = now + self.prep.params.rest_seconds

    def not_before(self, slot: str, row: LaneRow | None, now: float) -> float:
        """The earliest wall time the slot may start a turn (its rest, its usage pause)."""
        at = self._rest_until.get(slot, 0.0)
        if row is not None and row.paused_until:
            try:
                paused = datetime.fromisoformat(row.paused_until.replace("Z", "+00:00"))
            except ValueError:
                paused = None
            if paused is not None:
                at = max(at, paused.timestamp())
        return at

    # ---- measurements -------------------------------------------------------------------------

    def places(self) -> dict[str, Path]:
        """Every private place made so far, by name."""
        return {name: Path(p["path"]) for name, p in self._places.items()}

    def lane_names(self, lane: str | None, place: str, run_id: str) -> dict[str, str]:
        """A lane's program binds the lane's ports, as its turns do (engine/namespace)."""
        if lane is None:
            return {}
        ns = namespace.namespace_of(self.layout, run_id, lane=lane, place=place, role="evaluator")
        return {k: v for k, v in ns.env().items() if k != "TMPDIR"}

    def measure_job(self, c: cm.Measure | cm.Run, builder: TurnBuilder) -> MeasureJob:
        """It runs the place's code: jailed like that place's turns. A yardstick (`Run.frozen`)
        runs in its own copy of the place, its frozen files read-only (see `yardstick`)."""
        run = c if isinstance(c, cm.Run) else None
        unjailed = run is not None and not run.jailed
        if run is not None and unjailed and interpreter.unisolated(run.argv):
            raise FlowError(
                f"flow {self.prep.flow.name} runs Python unjailed without isolation "
                f"({shlex.join(run.argv[:4])} ...): a file in the place could shadow the "
                "program; build its argv with flamechase.flow.runtime_module (python -I -m ...)"
            )
        copy = self.layout.yardstick(c.key) if run is not None and run.frozen is not None else None
        cwd = copy or builder.place_path(c.place)
        env = {**measurement_env(), **self.lane_names(c.lane, c.place, builder.run_id)}
        jail = (
            None
            if unjailed
            else builder.jail(
                lane=c.lane,
                place=c.place,
                at=copy,
                turn_dir=None,
                cli=None,
                role="evaluator",
                lanes=[ln["lane"] for ln in self._lanes],
                places=self.places(),
                reads=c.reads,
            )
        )
        if jail is not None and copy is not None and run is not None and run.frozen:
            frozen = tuple(copy / rel for rel in run.frozen)
            jail = dataclasses.replace(jail, protected=(*jail.protected, *frozen))
        if jail is not None:
            env["TMPDIR"] = str(jail.tmp)
        if isinstance(c, cm.Run):
            env.update(FLAMECHASE_RUN_DIR=str(self.layout.root), FLAMECHASE_LANE=c.lane or "")
            lock = self.layout.root if c.exclusive else None
            if lock is not None:  # the runtime holds it for the program: its own calls pass
                env[locks.HELD_VAR] = str(lock.resolve())
            env = {**env, **c.env}
            return MeasureJob(
                key=c.key,
                argv=c.argv,
                cwd=cwd,
                timeout=c.timeout,
                # Unjailed, nothing may add to its import path (nor to a Python it starts).
                env=interpreter.scrubbed(env) if unjailed else env,
                jail=jail,
                lock=lock,
            )
        return MeasureJob(
            key=c.key,
            argv=("/bin/sh", "-c", c.command),
            cwd=cwd,
            timeout=c.timeout,
            env=env,
            jail=jail,
            pattern=c.pattern,
            command=c.command,
        )

    def yardstick(self, c: cm.Run) -> str | None:
        """Make the copy yardstick `c` runs in (in a worker thread); why it must not run, or
        None."""
        copy = self.layout.yardstick(c.key)
        return yardstick.make(self.place_path(c.place), copy, c.frozen or {}, self.layout.root)

    def yardstick_done(self, c: cm.Run) -> None:
        yardstick.remove(self.layout.yardstick(c.key).parent)

    # ---- processes -----------------------------------------------------------------------------

    def swept(self, token: str | None, reaper: Reaper) -> list[str]:
        """Note a finished turn's token; the tokens whose sweep is over, to forget: the
        `procs` table stays as small as the turns under way (a resume sweeps what it lists)."""
        if token is not None:
            self._tokens.append(token)
        pending = reaper.pending()
        done = [t for t in self._tokens if t not in pending]
        self._tokens = [t for t in self._tokens if t in pending]
        return done


def named_files(command: str, root: Path) -> list[str]:
    """The regular files under `root` that `command`'s words name (`python3 bench.py` names
    bench.py): what a measurement runs besides the interpreter."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    out = []
    for word in words:
        rel = word.removeprefix("./")
        if not rel or rel.startswith(("/", "-")) or ".." in rel.split("/"):
            continue
        path = root / rel
        if path.is_file() and not path.is_symlink():
            out.append(rel)
    return out
