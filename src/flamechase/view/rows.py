"""What a run's fold keeps and hands out: a lane (or a track of turns outside lanes), a budget
line, a published report, a frozen snapshot of the run (`RunSnapshot`, what renderers take) and
what one event changed (`Change`, what the replay turns into deltas). `LaneRow` is the fold's
mutable copy of a lane, `LaneSnap` the frozen one; both list their fields in the same order
(`LaneRow.freeze`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime

from flamechase.events.present import Shown
from flamechase.view.board import Entry, Panel

__all__ = [
    "SOURCE",
    "BudgetLine",
    "Change",
    "LaneRow",
    "LaneSnap",
    "Report",
    "RunSnapshot",
    "parse_at",
]

SOURCE = "source"  # the place that is the user's tree (engine/layout.py)


def parse_at(text: str) -> datetime:
    """An event's `at` (ISO 8601, UTC, `Z` suffix) as an aware datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class _LaneLogic:
    """What a lane's fields mean; shared by the fold's mutable row and the frozen snapshot."""

    __slots__ = ()
    name: str
    roles: tuple[str, ...]
    actor: str | None
    held: bool
    paused_until: str | None

    @property
    def state(self) -> str:
        if self.actor is not None:
            return "turn"
        if self.held:
            return "held"
        if self.paused_until is not None:
            return "paused"
        return "idle"


@dataclasses.dataclass(frozen=True, slots=True)
class LaneSnap(_LaneLogic):
    """One lane at one point."""

    name: str
    roles: tuple[str, ...]
    actor: str | None = None  # the actor on turn now, if a turn is under way
    turn: int | None = None
    attempt: int = 0
    since: str | None = None  # when the turn under way started
    backend: str | None = None
    turns: int = 0  # counted turns: valid + failed
    valid: int = 0
    failed: int = 0
    failures: int = 0  # consecutive failed turns
    last_status: str | None = None  # report status of the last counted turn, or turn_failed
    last_actor: str | None = None
    held: bool = False
    held_reason: str | None = None
    paused_until: str | None = None
    last_error: str | None = None  # why the last counted turn failed, if it did
    solo: bool = False  # a role's turns outside lanes (planning, judging), not a lane
    place: str | None = None  # the place its last turn worked in
    # The alternative its role moved to (engine/failover), while not on its first agent.
    moved_to: str | None = None


@dataclasses.dataclass(slots=True)
class LaneRow(_LaneLogic):
    """The fold's own, mutable copy of a lane (a `dataclasses.replace` per event is slow)."""

    name: str
    roles: tuple[str, ...]
    actor: str | None = None
    turn: int | None = None
    attempt: int = 0
    since: str | None = None
    backend: str | None = None
    turns: int = 0
    valid: int = 0
    failed: int = 0
    failures: int = 0
    last_status: str | None = None
    last_actor: str | None = None
    held: bool = False
    held_reason: str | None = None
    paused_until: str | None = None
    last_error: str | None = None  # why the last counted turn failed, if it did
    solo: bool = False
    place: str | None = None
    moved_to: str | None = None

    def freeze(self) -> LaneSnap:
        return LaneSnap(*(getattr(self, f) for f in _LANE_FIELDS))


@dataclasses.dataclass(frozen=True, slots=True)
class BudgetLine:
    key: str
    limit: float | None
    used: float

    @property
    def left(self) -> float | None:
        return None if self.limit is None else max(0.0, self.limit - self.used)


@dataclasses.dataclass(frozen=True, slots=True)
class Report:
    """A published report: `seq` in the `reports` table, `index` within its source lane."""

    report_id: str
    lane: str
    actor: str | None
    status: str | None
    seq: int
    index: int
    artifacts: int = 0


# LaneRow.freeze() passes fields by position: both classes list them in this order.
_LANE_FIELDS = tuple(f.name for f in dataclasses.fields(LaneSnap))


@dataclasses.dataclass(frozen=True, slots=True)
class RunSnapshot:
    """A run at one point, frozen: what renderers take."""

    run_id: str
    flow: str
    status: str
    at: str | None  # time of the last event folded
    started: str | None
    lanes: tuple[LaneSnap, ...]  # lanes, then tracks of turns outside lanes (`solo`)
    budget: tuple[BudgetLine, ...]
    cost: float
    turns: int
    output_tokens: int
    active_seconds: float
    best: Entry | None
    top: tuple[Entry, ...]
    submissions: int
    pending: Mapping[str, tuple[str, ...]]  # consumer lane -> report ids not yet acknowledged
    reports: int
    acknowledged: int  # reports received and acknowledged by a valid turn, over all lanes
    events: int
    panels: tuple[Panel, ...] = ()
    alerts: tuple[str, ...] = ()


@dataclasses.dataclass(slots=True)
class Change:
    """What one event changed; the replay turns it into a point's deltas."""

    lanes: list[str] = dataclasses.field(default_factory=list)
    spend: bool = False
    budget: bool = False
    board: bool = False
    published: Report | None = None
    artifacts: Report | None = None  # a published report whose artifact count became known
    acks: list[tuple[str, str, int]] = dataclasses.field(default_factory=list)
    status: bool = False
    # How the event shows itself (its sentence, mark, rows...), asked after it was folded.
    shown: Shown = dataclasses.field(default_factory=lambda: Shown(""))
    # The track the event belongs to: its lane, or the role of a turn outside lanes.
    track: str | None = None
    reads: tuple[str, ...] | None = None  # the lanes the track reads, when that changed

    @property
    def mark(self) -> tuple[str, str] | None:
        m = self.shown.mark
        return None if m is None else (m.label, m.tone)
