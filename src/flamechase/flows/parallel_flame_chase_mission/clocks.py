"""The clock's audit triggers: a mission past its deadline, the periodic global review.

A flow reads no clock: `decide` is given the time, and when a trigger is due it asks the
engine to journal an `AuditTriggered`, which `evolve` folds like any other trigger (once:
its id names the mission's dispatch, or the review's due time); until then it asks to be
woken at the next one.
"""

from __future__ import annotations

from flamechase.flow import Command, Emit, WaitUntil
from flamechase.flows.parallel_flame_chase_mission import events as mev
from flamechase.flows.parallel_flame_chase_mission.audits import Audits
from flamechase.flows.parallel_flame_chase_mission.missions import Missions

__all__ = ["due"]


def due(missions: Missions, audits: Audits, now: float) -> list[Command]:
    """Deadlines and the periodic global review: a trigger when due, else a wake-up."""
    out: list[Command] = []
    due: list[float] = []
    for lane in missions.current:
        m = missions.of(lane)
        if m is None or m.status != "active" or m.deadline_fired:
            continue
        if now >= m.deadline_at:
            out.append(
                Emit(
                    mev.AuditTriggered(
                        lane=lane,
                        trigger_id=f"deadline:{m.id}:{m.dispatched_at}",
                        trigger_kind="mission_deadline",
                        mission_id=m.id,
                        why=f"mission {m.id} passed its deadline",
                    )
                )
            )
        else:
            due.append(m.deadline_at)
    nxt = audits.next_global_at
    if nxt and now >= nxt:
        out.append(
            Emit(
                mev.AuditTriggered(
                    trigger_id=f"periodic:{nxt}",
                    trigger_kind="periodic_global_review",
                    scope="global",
                    why="the periodic global review is due",
                )
            )
        )
    elif nxt:
        due.append(nxt)
    if not out and due:
        out.append(WaitUntil(min(due)))
    return out
