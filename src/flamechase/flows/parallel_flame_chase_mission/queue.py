"""Lane 1's integration queue: accepted lane 2..N deliverables, each with its frozen artifact
package, integrated one at a time (lowest priority number first, then oldest). An item's
package is re-hashed before lane 1 is given it; one that no longer verifies is rejected."""

from __future__ import annotations

import json
from typing import Any, Literal

from flamechase.flow import Command, Emit, FlowState, Run, runtime_module
from flamechase.flows.parallel_flame_chase_mission import events as mev

__all__ = ["Item", "Queue"]


ItemStatus = Literal["queued", "active", "accepted", "rejected"]


class Item(FlowState):
    id: str
    source_lane: str
    source_mission_id: str
    priority: int = 50
    directive: dict[str, Any] = {}
    deliverable: dict[str, Any] = {}
    artifacts: tuple[dict[str, Any], ...] = ()
    status: ItemStatus = "queued"
    seq: int = 0
    reason: str = ""
    mission_id: str | None = None  # lane 1's integration mission

    def verify(self) -> Run:
        """Re-hash the package's frozen blobs (`Ran(key)`: ok, or the changed paths)."""
        package = [{k: a.get(k) for k in ("path", "sha256", "blob")} for a in self.artifacts]
        return Run(
            key=f"verify:{self.id}",
            place="source",
            argv=runtime_module("flamechase.tools.blobcheck", json.dumps(package)),
            jailed=False,
            lane="lane-1",
            label=f"re-hash integration {self.id}'s package",
        )


class Queue(FlowState):
    seq: int = 0
    items: dict[str, Item] = {}

    def add(
        self, lane: str, mission_id: str, directive: dict[str, Any], outcome: dict[str, Any]
    ) -> tuple[Queue, list[Command]]:
        item = Item(
            id=f"I{self.seq + 1:06d}",
            source_lane=lane,
            source_mission_id=mission_id,
            priority=int(directive.get("priority", 50)),
            directive=directive,
            deliverable=dict(outcome.get("deliverable") or {}),
            artifacts=tuple(outcome.get("artifacts") or ()),
            seq=self.seq + 1,
        )
        q = self.replace(seq=self.seq + 1, items={**self.items, item.id: item})
        return q, [_moved(item, "accepted by an audit; waiting for lane 1")]

    def move(
        self, iid: str, status: ItemStatus, why: str, **changes: Any
    ) -> tuple[Queue, list[Command]]:
        item = self.items[iid].replace(status=status, reason=why[:2000], **changes)
        return self.replace(items={**self.items, iid: item}), [_moved(item, why)]

    def next(self) -> Item | None:
        queued = [i for i in self.items.values() if i.status == "queued"]
        return min(queued, key=lambda i: (i.priority, i.seq)) if queued else None

    def busy(self) -> Item | None:
        """The item being integrated, if any (one at a time)."""
        return next((i for i in self.items.values() if i.status == "active"), None)

    def pending(self) -> bool:
        return any(i.status in ("queued", "active") for i in self.items.values())


def _moved(item: Item, why: str) -> Command:
    return Emit(
        mev.IntegrationMoved(
            lane="lane-1",
            item_id=item.id,
            source_lane=item.source_lane,
            source_mission_id=item.source_mission_id,
            priority=item.priority,
            status=item.status,
            artifacts=len(item.artifacts),
            why=why[:2000],
        )
    )
