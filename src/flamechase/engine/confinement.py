"""The jail of each role, from the run's layout: what it writes, what it cannot see.

    role         place (writable)      turn files       hidden
    coordinator  the planning copy     its attempt dir  every lane's private parts
    lane 1       the source            its turn dir     other lanes' private parts, planning
    lanes 2..N   its private copy      its turn dir     other lanes' private parts, planning
    evaluator    the submitting lane's place, as that lane's turns (no turn files, no CLI)

A lane's private parts are its place (private copy), its TMPDIR and its private homes; the
rest of its directory (turn files, published reports' sources, checkpoint) is read-only to
the others, like the run store and the blob store (lanes integrate frozen artifacts from
blobs). Every role also writes its own directory in the run and its CLI's state; the source
is read-only to everyone but lane 1.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from flamechase.agents.registry import state_paths
from flamechase.engine.layout import RunLayout
from flamechase.jail import JailSpec, Mode, needs_home


def lane_jail(mode: Mode, layout: RunLayout, lane: str, *, lanes: Iterable[str],
              place: Path, turn_dir: Path | None, cli: str | None, role: str,
              source: Path, state_home: Path) -> JailSpec:
    """The jail of one of `lane`'s turns (`cli` None: the evaluator, which has no CLI state).

    `place` is the lane's tree: the source for lane 1, its private copy for the others.
    """
    lane_dir = layout.lane_dir(lane)
    state = tuple(state_paths(cli)) if cli else ()
    protected = (state_home,) if place.resolve() == source.resolve() else (source, state_home)
    return JailSpec(
        mode=mode, place=place, tmp=lane_dir / "tmp", turn_dir=turn_dir, grants=(lane_dir,),
        state=state, home=lane_dir / "homes" / role if needs_home(state) else None,
        hidden=(*private_parts(layout, (o for o in lanes if o != lane)),
                layout.root / "planning"),
        protected=protected)


def planning_jail(mode: Mode, layout: RunLayout, n: int, attempt: int, *, lanes: Iterable[str],
                  cli: str, role: str, source: Path, state_home: Path) -> JailSpec:
    """The coordinator's jail: its planning copy, nothing of the lanes, the source read-only."""
    planning = layout.planning_dir(n)
    state = tuple(state_paths(cli))
    return JailSpec(
        mode=mode, place=layout.planning_workspace(n), tmp=planning / "tmp",
        turn_dir=layout.planning_attempt(n, attempt), grants=(planning,), state=state,
        home=planning / "homes" / role if needs_home(state) else None,
        hidden=private_parts(layout, lanes), protected=(source, state_home))


def private_parts(layout: RunLayout, lanes: Iterable[str]) -> tuple[Path, ...]:
    """What of `lanes` no other role may see: their copies, TMPDIRs and private homes."""
    return tuple(p for lane in lanes for p in (
        layout.lane_workspace(lane), layout.lane_dir(lane) / "tmp",
        layout.lane_dir(lane) / "homes"))
