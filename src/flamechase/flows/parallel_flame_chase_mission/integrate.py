"""Lane 1's integration of a queued package, once the runtime re-hashed it: a package that
no longer verifies is rejected (and audited: the trigger returned); otherwise lane 1's current
mission pauses and an integration mission with the package takes its place."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flamechase import events as ev
from flamechase.flow import Command
from flamechase.flows.parallel_flame_chase_mission import audits as au
from flamechase.flows.parallel_flame_chase_mission import packet as pk
from flamechase.flows.parallel_flame_chase_mission.specs import MissionSpec

if TYPE_CHECKING:
    from flamechase.flows.parallel_flame_chase_mission.flow import MissionState

__all__ = ["verified"]

LANE1 = "lane-1"


def verified(
    state: MissionState, e: ev.Ran
) -> tuple[MissionState, list[Command], au.Trigger | None]:
    """The state after the re-hash `e` of a queued item, the commands owed, the audit due."""
    iid = e.key.removeprefix("verify:")
    item = state.queue.items.get(iid)
    if item is None or item.status != "queued":
        return state, [], None
    if not e.ok:
        why = "its frozen package no longer verifies: " + str(e.receipt.get("error"))
        q, owed = state.queue.move(iid, "rejected", why)
        t = au.Trigger(
            id=f"invalid:{iid}",
            kind="invalid_deliverable",
            lane=item.source_lane,
            why=f"integration {iid}: {why}",
            at=e.at,
        )
        return state.replace(queue=q), owed, t
    ms, owed = state.missions, []
    current = ms.of(LANE1)
    resume = None
    if current is not None and current.status == "active":
        ms, owed = ms.move(current.id, "paused", at=e.at, why=f"integrating {iid}")
        resume = current.id
    spec = MissionSpec.model_validate(pk.integration_spec(item)).model_dump(mode="json")
    ms, more = ms.create(
        LANE1,
        spec,
        at=e.at,
        why=f"integrate {iid} from {item.source_lane}",
        origin="integration",
        resume=resume,
        item=iid,
    )
    q, qowed = state.queue.move(
        iid, "active", "verified; lane 1 integrates it", mission_id=ms.current[LANE1]
    )
    return state.replace(missions=ms, queue=q), [*owed, *more, *qowed], None
