"""A redirected lane 2..N starts its next mission on lane 1's tree as it is now, not on the
copy parallel_flame_chase made at plan time: the decision that redirects it drops the lane's
private copy (its stray edits with it), and parallel_flame_chase remakes a missing lane copy
as a fresh snapshot of your tree before any lane turn starts.

Crash-safe by construction: the drop is owed in the state folded from the decision (the
engine records `PlaceDropped` before it removes the files), so a resume asks for the drop
again or, once it is recorded, for the new copy; the lane's turn waits for `PlaceMade`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from flamechase.flow import Command, Emit
from flamechase.flows.parallel_flame_chase_mission import events as mev
from flamechase.flows.parallel_flame_chase_mission import protect as pr

if TYPE_CHECKING:
    from flamechase.flows.parallel_flame_chase_mission.flow import MissionState

__all__ = ["refresh"]

LANE1 = "lane-1"


def refresh(state: MissionState, decision: Mapping[str, Any]) -> tuple[MissionState, list[Command]]:
    """Drop the private copy of every lane 2..N the decision redirected (remade afterwards)."""
    pfc, protect = state.pfc, state.protect
    owed: list[Command] = []
    for v in decision.get("lanes", ()):
        lane = str(v.get("lane"))
        if v.get("verdict") != "redirect" or lane == LANE1 or lane not in pfc.book.lanes:
            continue
        place = pfc.book.get(lane).place
        if place in pfc.dropping:
            continue
        pfc = pfc.replace(dropping=(*pfc.dropping, place))
        # The new copy gets a new baseline of its protected files: lane 1 may have changed
        # them (that is not this lane's write).
        m = state.missions.of(lane)
        fresh = f"{pr.KEY}{lane}:0:{m.id if m else len(pfc.dropping)}"  # a key not used before
        protect = protect.replace(
            seen={k: s for k, s in protect.seen.items() if k != lane},
            owed={**protect.owed, lane: fresh},
        )
        said = mev.LaneRefreshed(
            lane=lane,
            place=place,
            audit_id=str(decision.get("audit_id", "")),
            mission_id=m.id if m else "",
        )
        owed.append(Emit(said))
    return state.replace(pfc=pfc, protect=protect), owed
