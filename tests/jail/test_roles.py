"""Every role's jail holds against a hostile process: its grants are writable, nothing else is.

The jails are the ones the engine builds (`engine.confinement`) for the coordinator, lane 1
and lanes 2..N, run directly through `jail.wrap` with real processes, under bubblewrap and
under the Landlock fallback. Bubblewrap refuses content and metadata changes alike and hides
other lanes' places; Landlock refuses content changes only, and its gaps are asserted too so
that the coverage text (`jail.coverage`) stays true.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flamechase.jail import JailSpec, Mode, ready
from tests.jail.attacks import (
    METADATA_OPS,
    Attempt,
    attack,
    dir_attacks,
    escaped,
    file_attacks,
)
from tests.jail.conftest import LANES, MODES, Grounds, lane_jail, lane_place, planning_jail


def _lane(g: Grounds, mode: Mode, lane: str) -> JailSpec:
    place = g.source if lane == "lane-1" else lane_place(g.layout, lane)
    spec = lane_jail(
        mode,
        g.layout,
        lane,
        lanes=LANES,
        place=place,
        turn_dir=g.turn_dir(lane),
        cli="exec",
        role=f"{lane}_actor_a",
        source=g.source,
        state_home=g.state_home,
    )
    ready(spec)
    return spec


def _coordinator(g: Grounds, mode: Mode) -> JailSpec:
    spec = planning_jail(
        mode,
        g.layout,
        1,
        1,
        lanes=LANES,
        cli="exec",
        role="coordinator",
        source=g.source,
        state_home=g.state_home,
    )
    ready(spec)
    return spec


def _own_writes(spec: JailSpec) -> list[Attempt]:
    assert spec.turn_dir is not None
    return [
        ("own:place", "create", str(spec.place), "ok.txt"),
        ("own:turn_dir", "create", str(spec.turn_dir), "report.json"),
        ("own:tmp", "create", str(spec.tmp), "scratch"),
        ("own:chmod", "chmod", str(spec.place / "ok.txt"), ""),
        ("own:mkdir", "mkdir", str(spec.place), ""),
    ]


def _store_attacks(g: Grounds, place: Path) -> list[Attempt]:
    return [
        *file_attacks("run.db", g.db, place),
        *file_attacks("blob", g.blob, place),
        *dir_attacks("run_dir", g.layout.root),
        *dir_attacks("state_home", g.state_home),
        *file_attacks("outside", g.outside / "note.txt", place),
        *dir_attacks("outside_dir", g.outside),
    ]


def _check(mode: Mode, results: dict[str, str], expected_open: set[str]) -> None:
    """Own writes done; every other attempt refused, but for Landlock's metadata gap."""
    for name in [n for n in results if n.startswith("own:")]:
        assert results[name] == "done", (name, results[name])
    leaks = {k: v for k, v in escaped(results).items() if not k.startswith("own:")}
    if mode == "landlock":
        gap = {k for k in leaks if k.rsplit(":", 1)[1] in METADATA_OPS}
        assert gap, "Landlock refused metadata changes: update jail.coverage and the README"
        leaks = {k: v for k, v in leaks.items() if k not in gap}
    assert set(leaks) == expected_open, leaks


@pytest.mark.parametrize("mode", MODES)
def test_lane_two_writes_its_copy_and_nothing_of_the_source_store_or_others(
    grounds: Grounds, mode: Mode
) -> None:
    spec = _lane(grounds, mode, "lane-2")
    attempts = [
        *_own_writes(spec),
        *file_attacks("source", grounds.solver, spec.place),
        *dir_attacks("source_dir", grounds.source),
        *file_attacks("lane3", grounds.secret("lane-3"), spec.place),
        *_store_attacks(grounds, spec.place),
    ]
    _check(mode, attack(spec, attempts), set())
    assert grounds.solver.read_text() == "def solve(): return 42\n"
    assert grounds.secret("lane-3").read_text() == "lane-3 secret\n"
    assert (spec.place / "ok.txt").exists()


@pytest.mark.parametrize("mode", MODES)
def test_lane_one_writes_the_source_and_nothing_of_the_store_or_other_lanes(
    grounds: Grounds, mode: Mode
) -> None:
    spec = _lane(grounds, mode, "lane-1")
    attempts = [
        *_own_writes(spec),
        ("own:source", "write", str(grounds.solver), ""),
        *file_attacks("lane2", grounds.secret("lane-2"), spec.place),
        *_store_attacks(grounds, spec.place),
    ]
    _check(mode, attack(spec, attempts), set())
    assert grounds.solver.read_text().endswith("pwned\n")


@pytest.mark.parametrize("mode", MODES)
def test_the_coordinator_writes_its_planning_copy_and_nothing_of_the_source(
    grounds: Grounds, mode: Mode
) -> None:
    spec = _coordinator(grounds, mode)
    attempts = [
        *_own_writes(spec),
        *file_attacks("source", grounds.solver, spec.place),
        *dir_attacks("source_dir", grounds.source),
        *file_attacks("lane2", grounds.secret("lane-2"), spec.place),
        *_store_attacks(grounds, spec.place),
    ]
    _check(mode, attack(spec, attempts), set())
    assert sorted(p.name for p in grounds.source.iterdir()) == ["bench.py", "pkg", "solver.py"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("role", ["coordinator", "lane-1", "lane-2"])
def test_other_lanes_places_and_tmpdirs_are_hidden_under_bubblewrap_only(
    grounds: Grounds, mode: Mode, role: str
) -> None:
    spec = _coordinator(grounds, mode) if role == "coordinator" else _lane(grounds, mode, role)
    others = [ln for ln in ("lane-2", "lane-3") if ln != role]
    attempts: list[Attempt] = [(f"read:{ln}", "read", str(grounds.secret(ln)), "") for ln in others]
    attempts += [(f"list:{ln}", "read", str(lane_place(grounds.layout, ln)), "") for ln in others]
    attempts += [
        (f"tmp:{ln}", "read", str(grounds.layout.lane_dir(ln) / "tmp"), "") for ln in others
    ]
    attempts += [
        ("read:blob", "read", str(grounds.blob), ""),
        ("read:source", "read", str(grounds.solver), ""),
    ]
    results = attack(spec, attempts)
    assert results["read:blob"] == "done"  # frozen artifacts stay readable to integrate
    assert results["read:source"] == "done"
    hidden = {k: v for k, v in results.items() if k.startswith(("read:lane", "list:", "tmp:"))}
    if mode == "bwrap":
        assert escaped(hidden) == {}, hidden
    else:  # Landlock cannot hide (said in jail.coverage)
        assert set(escaped(hidden)) == set(hidden)
