"""The missions of a run: one current mission per lane, and every transition it went through.

Pure bookkeeping, as the flow that keeps it: each function returns the missions after the
change and the `Emit`s that record it (a `MissionMoved` per transition, when, from, to, why),
for the flow's outbox. A mission's clock (its deadline) is read from the events that moved
it, never from a wall clock.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Literal

from flamechase.flow import Command, Emit, FlowState
from flamechase.flows.parallel_flame_chase_mission import events as mev

__all__ = ["Mission", "Missions", "Status", "Transition", "epoch"]

Status = Literal["planned", "active", "paused", "completed", "blocked", "accepted", "rejected"]
# A lane with a current mission in one of these has nothing left to do on it.
FINAL: tuple[str, ...] = ("accepted", "rejected")


def epoch(at: str) -> float:
    """An event's ISO time in seconds since the epoch (0 for an event not journaled yet)."""
    if not at:
        return 0.0
    return datetime.datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()


class Transition(FlowState):
    at: str
    from_status: str | None
    to_status: str
    why: str


class Mission(FlowState):
    id: str
    lane: str
    spec: dict[str, Any]
    status: Status = "planned"
    origin: str = "plan"  # plan, redirect, successor, integration
    turns_since_dispatch: int = 0
    dispatched_at: float = 0.0
    deadline_at: float = 0.0
    deadline_fired: bool = False
    outcome: dict[str, Any] | None = None  # the report that ended it (or the latest progress)
    parents: tuple[str, ...] = ()
    resume_mission_id: str | None = None  # an integration mission's paused mission
    queue_item: str | None = None  # an integration mission's queue item
    transitions: tuple[Transition, ...] = ()

    @property
    def title(self) -> str:
        return str(self.spec.get("title") or self.id)

    @property
    def limit(self) -> int:
        return int(self.spec.get("max_turns_without_outcome") or 6)

    def deadline_after(self, when: float) -> float:
        return when + float(self.spec.get("deadline_hours") or 6.0) * 3600.0


class Missions(FlowState):
    seq: int = 0
    items: dict[str, Mission] = {}
    current: dict[str, str] = {}  # lane -> its current mission's id

    def of(self, lane: str) -> Mission | None:
        mid = self.current.get(lane)
        return self.items.get(mid) if mid else None

    def active(self, lane: str) -> bool:
        m = self.of(lane)
        return m is not None and m.status == "active"

    def final(self, lane: str) -> bool:
        m = self.of(lane)
        return m is not None and m.status in FINAL

    def idle(self) -> bool:
        """No lane has work: every current mission is final (or no lane has one)."""
        return all(m.status in FINAL for m in map(self.of, self.current) if m is not None)

    def _put(self, m: Mission) -> Missions:
        return self.replace(items={**self.items, m.id: m})

    def create(
        self,
        lane: str,
        spec: Mapping[str, Any],
        *,
        at: str,
        why: str,
        origin: str = "plan",
        parents: tuple[str, ...] = (),
        resume: str | None = None,
        item: str | None = None,
    ) -> tuple[Missions, list[Command]]:
        """A new mission, planned and at once dispatched: the lane's current one."""
        mid = f"M{self.seq + 1:06d}"
        m = Mission(
            id=mid,
            lane=lane,
            spec=dict(spec),
            origin=origin,
            parents=parents,
            resume_mission_id=resume,
            queue_item=item,
        )
        ms = self.replace(seq=self.seq + 1, current={**self.current, lane: mid})._put(m)
        ms, owed = ms.move(mid, "planned", at=at, why=why)
        ms, more = ms.move(mid, "active", at=at, why="dispatched to " + lane, dispatch=True)
        return ms, owed + more

    def move(
        self,
        mid: str,
        to: Status,
        *,
        at: str,
        why: str,
        dispatch: bool = False,
        **changes: Any,
    ) -> tuple[Missions, list[Command]]:
        """Mission `mid` to `to`; `dispatch`: its counters and deadline start again."""
        m = self.items[mid]
        was = None if not m.transitions else m.status
        step = Transition(at=at, from_status=was, to_status=to, why=why[:2000])
        if dispatch:
            when = epoch(at)
            changes.update(
                turns_since_dispatch=0,
                dispatched_at=when,
                deadline_at=m.deadline_after(when),
                deadline_fired=False,
                outcome=None,
            )
        m = m.replace(status=to, transitions=(*m.transitions, step), **changes)
        event = mev.MissionMoved(
            lane=m.lane,
            mission_id=mid,
            title=m.title,
            from_status=was,
            to_status=to,
            why=step.why,
            origin=m.origin,
            deadline_at=m.deadline_at if to == "active" else None,
        )
        return self._put(m), [Emit(event)]

    def update(self, mid: str, **changes: Any) -> Missions:
        return self._put(self.items[mid].replace(**changes))
