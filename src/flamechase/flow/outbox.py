"""An outbox: the instant commands a flow owes, kept in its state until their events arrive.

`evolve` reacts to an event by adding commands (`outbox.add(...)`); `decide` returns
`outbox.pending()`; the event each command causes settles it (`outbox.settle(event)`, called
first thing in `evolve`). So a command is asked for once and survives a crash in between: the
outbox is part of the flow state, which is stored with every transaction.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from flamechase import events as ev
from flamechase.flow.commands import (
    Command,
    Emit,
    HoldLane,
    PublishReport,
    ReleaseLane,
    settles,
)

__all__ = ["Outbox"]


def _encode(cmd: Command) -> dict[str, Any]:
    if isinstance(cmd, PublishReport):
        return {
            "do": "publish",
            "lane": cmd.lane,
            "report_id": cmd.report_id,
            "record": dict(cmd.record),
            "kind": cmd.kind,
            "artifacts": [dict(a) for a in cmd.artifacts],
        }
    if isinstance(cmd, HoldLane):
        return {"do": "hold", "lane": cmd.lane, "reason": cmd.reason, "remedy": cmd.remedy}
    if isinstance(cmd, ReleaseLane):
        return {"do": "release", "lane": cmd.lane, "reason": cmd.reason}
    if isinstance(cmd, Emit):
        return {"do": "emit", "event": cmd.event.row()}
    raise TypeError(f"an outbox holds instant commands, not {type(cmd).__name__}")


def _decode(data: dict[str, Any]) -> Command:
    do = data["do"]
    if do == "publish":
        return PublishReport(
            lane=data["lane"],
            report_id=data["report_id"],
            record=data["record"],
            kind=data["kind"],
            artifacts=tuple(data["artifacts"]),
        )
    if do == "hold":
        return HoldLane(lane=data["lane"], reason=data["reason"], remedy=data.get("remedy", ""))
    if do == "release":
        return ReleaseLane(lane=data["lane"], reason=data["reason"])
    event = ev.parse(data["event"])
    if not isinstance(event, ev.FlowEvent):
        raise ValueError(f"outbox holds an event of unknown kind {data['event'].get('kind')!r}")
    return Emit(event)


class Outbox(BaseModel):
    """Immutable: `add` and `settle` return a new outbox."""

    model_config = ConfigDict(frozen=True)

    items: tuple[dict[str, Any], ...] = ()

    def add(self, *commands: Command) -> Outbox:
        if not commands:
            return self
        return Outbox(items=(*self.items, *(_encode(c) for c in commands)))

    def pending(self) -> list[Command]:
        return [_decode(i) for i in self.items]

    def settle(self, event: ev.Event) -> Outbox:
        """Without the first command `event` settles (the same outbox if none)."""
        if not self.items or isinstance(event, ev.TurnEnded | ev.TurnStarted):
            return self
        for n, item in enumerate(self.items):
            if settles(_decode(item), event):
                return Outbox(items=self.items[:n] + self.items[n + 1 :])
        return self

    def __len__(self) -> int:
        return len(self.items)
