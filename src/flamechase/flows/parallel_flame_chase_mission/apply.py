"""Applying a validated decision: what each verdict does to the lane's missions and to lane
1's integration queue. Only ever called with a decision `decisions.Decision` accepted for
the open audit's exact revision; the runtime never writes a decision of its own."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from flamechase.flow import Command
from flamechase.flows.parallel_flame_chase_mission.missions import Mission, Missions
from flamechase.flows.parallel_flame_chase_mission.queue import Queue

__all__ = ["Applied", "apply"]

LANE1 = "lane-1"


@dataclasses.dataclass(frozen=True, slots=True)
class Applied:
    missions: Missions
    queue: Queue
    owed: tuple[Command, ...]


def apply(ms: Missions, q: Queue, decision: Mapping[str, Any], at: str) -> Applied:
    owed: list[Command] = []
    for v in decision.get("lanes", ()):
        m = ms.of(v["lane"])
        if m is None:
            continue
        why = f"audit {decision['audit_id']}: {v['verdict']}: {v['reason']}"
        if v["verdict"] == "continue":
            ms, more = ms.move(m.id, "active", at=at, why=why, dispatch=True)
        elif v["verdict"] == "redirect":
            ms, q, more = _redirect(ms, q, m, v, at, why)
        else:
            ms, q, more = _accept(ms, q, m, v, at, why)
        owed += more
    return Applied(ms, q, tuple(owed))


def _redirect(
    ms: Missions, q: Queue, m: Mission, v: Mapping[str, Any], at: str, why: str
) -> tuple[Missions, Queue, list[Command]]:
    ms, owed = ms.move(m.id, "rejected", at=at, why=why)
    if m.queue_item:  # a failed integration: its package and the paused mission go too
        q, more = q.move(m.queue_item, "rejected", why)
        owed += more
        if m.resume_mission_id:
            ms, more = ms.move(m.resume_mission_id, "rejected", at=at, why="integration redirected")
            owed += more
    ms, more = ms.create(
        m.lane, v["next_mission"], at=at, why=why, origin="redirect", parents=(m.id,)
    )
    return ms, q, owed + more


def _accept(
    ms: Missions, q: Queue, m: Mission, v: Mapping[str, Any], at: str, why: str
) -> tuple[Missions, Queue, list[Command]]:
    ms, owed = ms.move(m.id, "accepted", at=at, why=why)
    if m.lane != LANE1:
        q, more = q.add(m.lane, m.id, dict(v["integration"]), dict(m.outcome or {}))
        owed += more
    elif m.queue_item:
        q, more = q.move(m.queue_item, "accepted", why)
        owed += more
    if v.get("next_mission"):
        ms, more = ms.create(
            m.lane, v["next_mission"], at=at, why=why, origin="successor", parents=(m.id,)
        )
        return ms, q, owed + more
    if m.resume_mission_id and ms.items[m.resume_mission_id].status == "paused":
        ms = ms.replace(current={**ms.current, m.lane: m.resume_mission_id})
        ms, more = ms.move(
            m.resume_mission_id,
            "active",
            at=at,
            why=f"integration {m.id} accepted; resumed",
            dispatch=True,
        )
        owed += more
    return ms, q, owed
