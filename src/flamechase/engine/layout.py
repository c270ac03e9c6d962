"""Where a run keeps its files. Pure path arithmetic: creates nothing."""

from __future__ import annotations

import dataclasses
from pathlib import Path


@dataclasses.dataclass(frozen=True, slots=True)
class RunLayout:
    root: Path

    @property
    def db(self) -> Path:
        return self.root / "run.db"

    @property
    def blobs(self) -> Path:
        return self.root / "blobs"

    @property
    def lanes(self) -> Path:
        return self.root / "lanes"

    def lane_dir(self, lane: str) -> Path:
        return self.lanes / lane

    def lane_workspace(self, lane: str) -> Path:
        """The private copy of a lane that does not work in the source."""
        return self.lane_dir(lane) / "workspace"

    def artifact_root(self, lane: str) -> Path:
        return self.lane_dir(lane) / "artifacts"

    def checkpoint(self, lane: str) -> Path:
        return self.lane_dir(lane) / "checkpoint.json"

    def turn_dir(self, lane: str, number: int, attempt: int) -> Path:
        return self.lane_dir(lane) / "turns" / f"{number:05d}-{attempt}"

    def planning_dir(self, n: int) -> Path:
        return self.root / "planning" / str(n)

    def planning_workspace(self, n: int) -> Path:
        return self.planning_dir(n) / "workspace"

    def planning_attempt(self, n: int, attempt: int) -> Path:
        return self.planning_dir(n) / "attempts" / str(attempt)

    def evaluations(self) -> Path:
        return self.root / "evaluations"
