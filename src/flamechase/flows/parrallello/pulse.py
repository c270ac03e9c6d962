"""parrallello's 30-minute pulse: the seed's "30-min pulse … act only on an anomaly".

Every 30 minutes of a block that is running, `decide` owes one `Pulse` per front: its block
and round, how long the block has run, what it has spent, the share of the week used when a
probe or a CLI has read it (the seed's "front/round, % of the week and anomaly"), and "no
anomaly" or the last anomaly
the runtime noticed in that front since the previous pulse. The pulse only reports: acting on
an anomaly is what the rest of the decider already does (a refused round, a relaunch...).
Timed by `decide`'s `now` (the engine's clock, so a fake clock in tests), woken by
`WaitUntil`; a pulse journaled is folded into `PState.pulses`, so none is said twice.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any, ClassVar

from flamechase.events import FlowEvent, register
from flamechase.events.present import Seen, Shown
from flamechase.flow import Command, Emit, WaitUntil
from flamechase.flows.parrallello.state import PState

__all__ = ["PULSE", "Pulse", "commands", "epoch", "slot"]

PULSE = 1800.0  # seconds between pulses of a running block


def epoch(at: str) -> float | None:
    try:
        return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def slot(front: str, block: int) -> str:
    """The key of a front's block in `PState.pulses`."""
    return f"{front}:{block}"


def commands(state: PState, now: float) -> list[Command]:
    """The pulses due at `now`, or a wake-up at the next one."""
    out: list[Command] = []
    for f in state.fronts.values():
        rs, start = f.current, epoch(f.block_started)
        if f.status != "building" or rs is None or start is None:
            continue
        said = state.pulses.get(slot(f.id, rs.block), 0)
        due = start + PULSE * (said + 1)
        if now < due:
            out.append(WaitUntil(due))
            continue
        # One pulse at a time: a wake-up late by more than a pulse says the latest, once.
        number = max(said + 1, int((now - start) // PULSE))
        since = start + PULSE * said
        seen = [
            a
            for a in state.anomalies
            if a.get("front") == f.id and (epoch(str(a.get("at", ""))) or 0.0) >= since
        ]
        anomaly = f"{seen[-1]['what']}: {seen[-1]['detail']}"[:200] if seen else None
        spend = f.block_spend
        out.append(
            Emit(
                Pulse(
                    lane=f.lane,
                    front=f.id,
                    block=rs.block,
                    round=rs.number,
                    minutes=int((now - start) // 60),
                    number=number,
                    spend={"cost": spend.cost, "turns": spend.turns},
                    week=state.usage.shares.get("weekly"),
                    anomaly=anomaly,
                )
            )
        )
    return out


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Pulse(FlowEvent):
    kind: ClassVar[str] = "pulse"
    front: str = ""
    block: int = 0
    round: int = 0
    minutes: int = 0
    number: int = 0  # the block's n-th pulse
    spend: dict[str, Any] = dataclasses.field(default_factory=dict)
    week: float | None = None  # the account's weekly share last read (the seed's "% of the week")
    anomaly: str | None = None

    def describe(self) -> str:
        cost, turns = self.spend.get("cost", 0.0), self.spend.get("turns", 0)
        week = f", {self.week:.0%} of the week" if self.week is not None else ""
        return (
            f"pulse: front {self.front}, block {self.block} round {self.round}, "
            f"{self.minutes} min in, ${float(cost):.2f} over {turns} turn(s){week} · "
            + (f"anomaly {self.anomaly}" if self.anomaly else "no anomaly")
        )

    def show(self, seen: Seen) -> Shown:
        text = self.describe()
        return Shown(text[0].upper() + text[1:] + ".", "warn" if self.anomaly else "info")
