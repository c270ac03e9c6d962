"""Where a run keeps its files. Pure path arithmetic: creates nothing."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

SOURCE = "source"  # the place that is the user's tree
# In a run directory gc reclaimed (engine/reclaim): a later start makes a new run, not a resume.
RECLAIMED = "reclaimed.json"
# A run directory's flow and workspace, beside its database: a start looking for a run to
# resume reads this small file rather than open every run's database (engine/prepare).
RUN_KEY = "run-key.json"


@dataclasses.dataclass(frozen=True, slots=True)
class RunLayout:
    root: Path

    @property
    def db(self) -> Path:
        return self.root / "run.db"

    @property
    def key(self) -> Path:
        return self.root / RUN_KEY

    @property
    def flow_traceback(self) -> Path:
        """The traceback of the flow's code when it broke the run (FlowCodeError)."""
        return self.root / "flow-traceback.txt"

    @property
    def blobs(self) -> Path:
        return self.root / "blobs"

    @property
    def lanes(self) -> Path:
        return self.root / "lanes"

    def lane_dir(self, lane: str) -> Path:
        return self.lanes / lane

    def place_dir(self, name: str) -> Path:
        """The directory of a private place (`lanes/lane-2`, `planning/1`): it holds the
        copy itself (`workspace/`) beside whatever the engine keeps of it."""
        return self.root / name

    def place(self, name: str) -> Path:
        return self.place_dir(name) / "workspace"

    @property
    def pool(self) -> Path:
        """Overlay places' copies kept between uses (workspace/reuse), this engine's only."""
        return self.root / "pool"

    @property
    def yardsticks(self) -> Path:
        return self.root / "yardsticks"

    def yardstick(self, key: str) -> Path:
        """The copy a yardstick `Run` (`Run.frozen`) runs in, by its key."""
        name = hashlib.sha256(key.encode()).hexdigest()[:24]
        return self.yardsticks / name / "workspace"

    def artifact_root(self, lane: str) -> Path:
        return self.lane_dir(lane) / "artifacts"

    def checkpoint(self, lane: str) -> Path:
        return self.lane_dir(lane) / "checkpoint.json"

    def lane_tmp(self, lane: str) -> Path:
        return self.lane_dir(lane) / "tmp"

    def turn_dir(self, lane: str, number: int, attempt: int) -> Path:
        return self.lane_dir(lane) / "turns" / f"{number:05d}-{attempt}"

    def solo_turn_dir(self, place: str, role: str, number: int, attempt: int) -> Path:
        """A turn outside lanes keeps its files beside its place (`planning/1/attempts/1-2`),
        or, in the source, under `roles/ROLE/`."""
        if place == SOURCE:
            return self.root / "roles" / role / f"{number:05d}-{attempt}"
        return self.place_dir(place) / "attempts" / f"{number}-{attempt}"
