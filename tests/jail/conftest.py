"""The file system of a run as jail tests need it, and the jails that can run here."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pytest

from flamechase.engine.confinement import turn_jail
from flamechase.engine.layout import RunLayout
from flamechase.jail import JailSpec, Mode, probe

PROBE = probe()
needs_bwrap = pytest.mark.skipif(not PROBE.bwrap_ok, reason=str(PROBE.bwrap_reason))
needs_landlock = pytest.mark.skipif(not PROBE.landlock_ok, reason=str(PROBE.landlock_reason))
needs_scoping = pytest.mark.skipif(
    not PROBE.landlock_scopes, reason="Landlock ABI below 6: no signal scoping on this kernel"
)
MODES = [pytest.param("bwrap", marks=needs_bwrap), pytest.param("landlock", marks=needs_landlock)]
LANES = ("lane-1", "lane-2", "lane-3")


@dataclasses.dataclass(frozen=True)
class Grounds:
    """A source tree, a state home with one run in it, and a place outside both."""

    source: Path
    state_home: Path
    layout: RunLayout
    outside: Path

    @property
    def solver(self) -> Path:
        return self.source / "solver.py"

    @property
    def db(self) -> Path:
        return self.layout.db

    @property
    def blob(self) -> Path:
        return self.layout.blobs / "sha256" / "ab" / "abcd"

    def secret(self, lane: str) -> Path:
        """A file in `lane`'s place that other lanes must not read."""
        if lane == "lane-1":
            return self.source / "solver.py"
        return lane_place(self.layout, lane) / "secret.txt"

    def turn_dir(self, lane: str) -> Path:
        return self.layout.turn_dir(lane, 1, 1)


@pytest.fixture
def grounds(tmp_path: Path, state_home: Path) -> Grounds:
    return make_grounds(tmp_path, state_home)


def make_grounds(root: Path, state_home: Path) -> Grounds:
    """A source tree, a state home holding run r-1 (lanes 1..3, planning, blobs, a WAL
    database) and a directory outside both, under `root`."""
    source = root / "src"
    (source / "pkg").mkdir(parents=True)
    (source / "solver.py").write_text("def solve(): return 42\n")
    (source / "bench.py").write_text("print('STEPS: 40')\n")
    layout = RunLayout(state_home / "runs" / "r-1")
    for lane in LANES:
        layout.turn_dir(lane, 1, 1).mkdir(parents=True)
        layout.artifact_root(lane).mkdir()
        (layout.lane_dir(lane) / "tmp").mkdir()
        (layout.lane_dir(lane) / "tmp" / "scratch").write_text(f"{lane} scratch\n")
        if lane != "lane-1":
            (lane_place(layout, lane) / "pkg").mkdir(parents=True)
            (lane_place(layout, lane) / "secret.txt").write_text(f"{lane} secret\n")
    planning_place(layout, 1).mkdir(parents=True)
    planning_attempt(layout, 1, 1, "coordinator").mkdir(parents=True)
    db = sqlite3.connect(layout.db)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    blob = layout.blobs / "sha256" / "ab" / "abcd"
    blob.parent.mkdir(parents=True)
    blob.write_text("frozen\n")
    outside = root / "elsewhere"
    outside.mkdir()
    (outside / "note.txt").write_text("not yours\n")
    return Grounds(source=source, state_home=state_home, layout=layout, outside=outside)


# Where parallel_flame_chase keeps its places: lanes 2..N in `lanes/LANE`, its plans in
# `planning/N` (the engine derives paths from place names; these are the flow's names).
def lane_place(layout: RunLayout, lane: str) -> Path:
    return layout.place(f"lanes/{lane}")


def planning_place(layout: RunLayout, n: int) -> Path:
    return layout.place(f"planning/{n}")


def planning_attempt(layout: RunLayout, n: int, attempt: int, role: str) -> Path:
    return layout.solo_turn_dir(f"planning/{n}", role, n, attempt)


def _places(layout: RunLayout, lanes: tuple[str, ...]) -> dict[str, Path]:
    return {
        **{f"lanes/{ln}": lane_place(layout, ln) for ln in lanes if ln != "lane-1"},
        "planning/1": planning_place(layout, 1),
    }


def lane_jail(
    mode: Mode,
    layout: RunLayout,
    lane: str,
    *,
    lanes: tuple[str, ...],
    place: Path,
    turn_dir: Path | None,
    cli: str | None,
    role: str,
    source: Path,
    state_home: Path,
) -> JailSpec:
    """The jail the engine builds for a turn of `lane` of parallel_flame_chase."""
    name = "source" if place == source else f"lanes/{lane}"
    return turn_jail(
        mode,
        layout,
        lane=lane,
        place=name,
        place_path=place,
        turn_dir=turn_dir,
        cli=cli,
        role=role,
        source=source,
        state_home=state_home,
        lanes=lanes,
        places=_places(layout, lanes),
    )


def planning_jail(
    mode: Mode,
    layout: RunLayout,
    n: int,
    attempt: int,
    *,
    lanes: tuple[str, ...],
    cli: str,
    role: str,
    source: Path,
    state_home: Path,
) -> JailSpec:
    """The jail the engine builds for the coordinator's planning session."""
    return turn_jail(
        mode,
        layout,
        lane=None,
        place=f"planning/{n}",
        place_path=planning_place(layout, n),
        turn_dir=planning_attempt(layout, n, attempt, role),
        cli=cli,
        role=role,
        source=source,
        state_home=state_home,
        lanes=lanes,
        places=_places(layout, lanes),
    )
