"""The jail of each turn and measurement, from the run's layout: what it writes, what it
cannot see.

    a turn of         place (writable)        its own directory         hidden
    a lane            the lane's place        lanes/LANE (turn files,   every other private
                      (source or its copy)    artifacts, checkpoint)    place, other lanes'
                                                                        TMPDIRs and homes
    outside lanes     its place               the place's directory     every lane's private
    (planning)        (e.g. planning/1)       (attempts, tmp)           parts
    a measurement     the measured place, jailed as that lane's turns (no CLI state)

A lane's private parts are its private place, its TMPDIR and its private homes (and no role
sees the copies kept between uses, `pool`); the rest of a
lane's directory (turn files, checkpoint) is read-only to others, like the run store and the
blob store (lanes integrate frozen artifacts from blobs). Every jail writes its CLI's state;
the source is read-only to all but turns whose place it is; the state home is never writable,
nor is flamechase's own installation (its site-packages, a virtual environment it runs from)
where it lies inside a writable place: every runtime program imports from there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from flamechase.agents.registry import state_paths
from flamechase.engine.layout import SOURCE, RunLayout
from flamechase.interpreter import installation
from flamechase.jail import JailSpec, Mode, needs_home
from flamechase.jail.spec import contains


def turn_jail(
    mode: Mode,
    layout: RunLayout,
    *,
    lane: str | None,
    place: str,
    place_path: Path,
    turn_dir: Path | None,
    cli: str | None,
    role: str,
    source: Path,
    state_home: Path,
    lanes: Iterable[str],
    places: Mapping[str, Path],
    reads: Iterable[str] = (),
    ports: tuple[int, int] | None = None,
) -> JailSpec:
    """The jail of one turn (`cli` None: a measurement, which has no CLI state).

    `lanes`: every lane of the run; `places`: every private place made so far, by name;
    `reads`: places the command asked to read, which stay visible (read-only); `ports`: the
    lane's port block, the only TCP ports it may bind (engine/namespace).
    """
    if lane is not None:
        own = layout.lane_dir(lane)
    elif place != SOURCE:
        own = layout.place_dir(place)
    else:
        own = layout.root / "roles" / role
    state = tuple(state_paths(cli)) if cli else ()
    in_source = place == SOURCE
    shown = {place, *reads}
    others = [p for name, p in places.items() if name not in shown]
    # The pool holds copies between uses, with whatever the turns did in them.
    hidden = (*others, *private_parts(layout, (o for o in lanes if o != lane)), layout.pool)
    return JailSpec(
        mode=mode,
        place=place_path,
        tmp=own / "tmp",
        turn_dir=turn_dir,
        grants=(own,),
        state=state,
        home=own / "homes" / role if needs_home(state) else None,
        # Only what exists can be hidden (bubblewrap mounts over it); a place being removed
        # has nothing left to see.
        hidden=tuple(p for p in dict.fromkeys(hidden) if p.exists()),
        protected=(
            *((state_home,) if in_source else (source, state_home)),
            *installation_inside(place_path),
        ),
        ports=ports,
    )


def installation_inside(place: Path) -> tuple[Path, ...]:
    """The directories of flamechase's own installation that lie inside `place`: a virtual
    environment in the user's tree, say. `python -I` still imports from them, so a `.pth` an
    agent wrote there would run in every program the runtime starts on its own behalf."""
    root = place.resolve()
    return tuple(d for d in installation() if contains(root, d))


def private_parts(layout: RunLayout, lanes: Iterable[str]) -> tuple[Path, ...]:
    """What of `lanes`' directories no other role may see: their TMPDIRs and private homes."""
    return tuple(
        p
        for lane in lanes
        for p in (layout.lane_dir(lane) / "tmp", layout.lane_dir(lane) / "homes")
    )
