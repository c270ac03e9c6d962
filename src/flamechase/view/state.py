"""The fold every view is built on: a run's events, in order, give its state at each point.

`RunFold.apply(event)` takes one event row ({seq, at, kind, lane, actor, payload}) and returns
what it changed; `snapshot()` freezes the state for a renderer. Nothing here reads the store
or the clock, so the HTML replay, the live terminal view, `serve` and `trace` agree by
construction, and tests can check a fold against the tables the engine wrote.

Two things are derived rather than read, because no event carries them directly:

- Report sequence numbers. `turn_valid.acknowledged` holds {source lane: seq in the `reports`
  table}. Each valid or failed turn publishes exactly one report in the same transaction as
  its event, and the table's AUTOINCREMENT rolls back with a failed transaction, so the n-th
  report event is report seq n. From that, the reports a lane has not acknowledged yet
  (its pending inbox) are a slice per source lane.
- Spend between budget reports. Turn events carry their cost and output tokens; planning
  sessions carry only their cost. Whenever an event carries the engine's own budget report
  (`budget_spent`, `run_*`), the fold takes those figures as they are.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from flamechase.engine.leaderboard import better, metric_key

__all__ = [
    "BUDGET_KEYS",
    "END_KINDS",
    "Change",
    "Entry",
    "LaneRow",
    "LaneSnap",
    "Report",
    "RunFold",
    "RunSnapshot",
    "parse_at",
]

BUDGET_KEYS = ("duration", "cost", "turns", "output_tokens")
END_KINDS = frozenset({"run_finished", "run_stopped", "run_failed", "run_held"})
TURN_END_KINDS = frozenset({"turn_valid", "turn_failed", "turn_interrupted", "lane_paused"})
# The leaderboard views show this many ranked entries; the rest only count.
TOP_N = 5
# Words of a summary that could be a report id (`lane-3.0002.2075cf`).
_WORD = re.compile(r"[\w.-]+")


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

    def partner(self, actor: str | None) -> str | None:
        """The lane's other actor: who takes the tree after `actor`."""
        if len(self.roles) < 2 or actor is None:
            return None
        return self.roles[1] if actor == self.roles[0] else self.roles[0]


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
class Entry:
    """A ranked (or rankable) submission."""

    report_id: str
    lane: str
    metric: str
    direction: str
    value: float
    claimed: float
    verified: bool
    ranked: bool


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


@dataclasses.dataclass(frozen=True, slots=True)
class RunSnapshot:
    """A run at one point, frozen: what renderers take."""

    run_id: str
    flow: str
    status: str
    at: str | None  # time of the last event folded
    started: str | None
    lanes: tuple[LaneSnap, ...]
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

    def budget_line(self, key: str) -> BudgetLine | None:
        return next((b for b in self.budget if b.key == key), None)


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


# LaneRow.freeze() passes fields by position: both classes list them in this order.
_LANE_FIELDS = tuple(f.name for f in dataclasses.fields(LaneSnap))


class RunFold:
    """Mutable state folded from events; `snapshot()` freezes it."""

    def __init__(
        self,
        *,
        run_id: str = "",
        flow: str = "",
        lanes: Sequence[tuple[str, Sequence[str]]] = (),
        budget: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        shares_reports: bool = True,
        status: str = "starting",
    ) -> None:
        self.run_id = run_id
        self.flow = flow
        self.status = status
        self.order: list[str] = []
        self.lanes: dict[str, LaneRow] = {}
        self.by_source: dict[str, list[str]] = {}  # source lane -> its report ids, in order
        self.copies: set[str] = set()  # lanes working on a private copy, not the source tree
        for name, roles in lanes:
            self._lane(name, roles)
        self.limits: dict[str, float | None] = dict.fromkeys(BUDGET_KEYS)
        if budget:
            self._set_limits(budget)
        self.shares_reports = shares_reports
        p = dict(params or {})
        self.evaluator = bool(p.get("evaluator"))
        # Mirrors `leaderboard.board`: a declared metric when the run measures, else the first
        # ranked submission fixes the primary metric.
        self.primary: tuple[str, str] | None = None
        if self.evaluator and p.get("direction"):
            self.primary = (metric_key(str(p.get("metric") or "score")), str(p["direction"]))
        self.leaders: dict[tuple[str, str], Entry] = {}
        self._top: list[tuple[float, int, Entry]] = []
        self.submissions = 0
        self.reports: list[Report] = []  # by seq - 1
        self.by_id: dict[str, Report] = {}
        self.cursors: dict[str, dict[str, int]] = {}  # consumer -> source -> reports acked
        self.received: dict[str, dict[str, None]] = {}  # lane -> delivered ids with artifacts
        self.integrated: list[tuple[str, str, str | None]] = []  # (lane, report id, actor)
        self.delivered = 0
        self.cost = 0.0
        self.turns = 0
        self.output_tokens = 0
        self._active_closed = 0.0
        self._open_at: datetime | None = None
        self.started: str | None = None
        self.at: str | None = None
        self._alive_at: str | None = None  # the last event a running session recorded
        self.events = 0

    # ---- construction ----------------------------------------------------------------------

    @classmethod
    def from_run(cls, run: Mapping[str, Any], lanes: Iterable[Mapping[str, Any]],
                 *, shares_reports: bool = True) -> RunFold:
        """A fold for a stored run: its run row and `lanes` rows (names and roles).

        A stored run does not say whether its flow passes reports between lanes; every
        built-in flow with more than one lane does, and importing a user's flow file to draw
        a picture of a finished run would run its code, so the default is that it does.
        """
        return cls(
            run_id=str(run.get("id", "")), flow=str(run.get("flow", "")),
            lanes=[(str(ln["lane"]), list(ln.get("roles") or ())) for ln in lanes],
            budget=run.get("budget") or {}, params=run.get("params") or {},
            shares_reports=shares_reports,
        )

    def _lane(self, name: str, roles: Sequence[str] = ()) -> LaneRow:
        snap = self.lanes.get(name)
        if snap is None:
            snap = LaneRow(name=name, roles=tuple(roles))
            self.lanes[name] = snap
            self.order.append(name)
            self.by_source.setdefault(name, [])
        return snap

    def _set_limits(self, budget: Mapping[str, Any]) -> None:
        for key in BUDGET_KEYS:
            value = budget.get(key)
            self.limits[key] = float(value) if isinstance(value, int | float) else None

    # ---- folding ---------------------------------------------------------------------------

    def apply(self, ev: Mapping[str, Any]) -> Change:
        kind = str(ev.get("kind", ""))
        lane = ev.get("lane") or None
        actor = ev.get("actor") or None
        p: Mapping[str, Any] = ev.get("payload") or {}
        at = str(ev.get("at") or "")
        ch = Change()
        self.events += 1
        before = self._alive_at
        # A resumed engine first records the turns the dead one left cut (turn_interrupted
        # without a duration): those say nothing about when the old session was alive.
        if at and not (kind == "turn_interrupted" and "duration" not in p):
            self._alive_at = at
        if at:
            self.at = at
            if self.started is None:
                self.started = at
        if kind in ("run_created", "run_resumed"):
            if kind == "run_created":
                for name in p.get("lanes") or ():
                    self._lane(str(name))
            if isinstance(p.get("budget"), Mapping):
                self._set_limits(p["budget"])
                ch.budget = True
            if self._open_at is not None and before:
                # The previous session ended without an end event (a crash or a kill): it
                # was active until its last event, not through the time the run was down.
                self._active_closed += (parse_at(before) - self._open_at).total_seconds()
                self._open_at = None
            if at:
                self._open_at = parse_at(at)
            self._status("starting" if kind == "run_created" else "resumed", ch)
        elif kind == "snapshot_made" and lane:
            self.copies.add(str(lane))
        elif kind == "planning_started":
            self._status("planning", ch)
        elif kind == "plan_attempt":
            self.cost += float(p.get("cost_usd") or 0.0)
            ch.spend = True
        elif kind == "planned":
            for name in p.get("released") or ():
                if name in self.lanes:
                    self._set(str(name), ch, held=False, held_reason=None, failures=0)
        elif kind == "run_running":
            self._status("running", ch)
        elif kind == "turn_started" and lane:
            self._lane(lane)
            self._set(lane, ch, actor=actor, turn=_int(p.get("turn")),
                      attempt=_int(p.get("attempt")) or 1, since=at or None,
                      backend=p.get("backend"), paused_until=None)
            delivered = [str(r) for r in p.get("delivered") or ()]
            self.delivered += len(delivered)
            box = self.received.setdefault(lane, {})
            for rid in delivered:
                rep = self.by_id.get(rid)
                if rep is not None and rep.artifacts:
                    box[rid] = None
        elif kind == "turn_valid" and lane:
            snap = self._lane(lane)
            self._count_turn(p, ch)
            self._set(lane, ch, actor=None, turn=None, since=None, turns=snap.turns + 1,
                      valid=snap.valid + 1, failures=0, last_status=p.get("report_status"),
                      last_actor=actor, last_error=None)
            self._publish(str(p.get("report_id") or ""), lane, actor, p.get("report_status"),
                          ch)
            for source, seq in (p.get("acknowledged") or {}).items():
                self._ack(lane, str(source), _int(seq), ch)
            self._note_integration(lane, actor, str(p.get("summary") or ""))
        elif kind == "turn_failed" and lane:
            snap = self._lane(lane)
            self._count_turn(p, ch)
            self._set(lane, ch, actor=None, turn=None, since=None, turns=snap.turns + 1,
                      failed=snap.failed + 1, failures=snap.failures + 1,
                      last_status="turn_failed", last_actor=actor,
                      last_error=str(p.get("error") or "no reason recorded"))
            self._publish(str(p.get("report_id") or ""), lane, actor, "turn_failed", ch)
        elif kind in ("turn_interrupted", "lane_paused") and lane:
            self._lane(lane)
            self.cost += float(p.get("cost_usd") or 0.0)
            self.output_tokens += _int(p.get("output_tokens"))
            ch.spend = True
            extra: dict[str, Any] = {}
            if kind == "lane_paused":
                extra["paused_until"] = p.get("until")
            self._set(lane, ch, actor=None, turn=None, since=None, **extra)
        elif kind == "lane_held" and lane:
            self._lane(lane)
            self._set(lane, ch, held=True, held_reason=p.get("reason"))
        elif kind == "report_published" and lane:
            rid = str(p.get("report_id") or "")
            self._publish(rid, lane, actor, p.get("report_status"), ch)
            rep = self.by_id.get(rid)
            n = len(p.get("artifacts") or ())
            if rep is not None and n != rep.artifacts:
                rep = dataclasses.replace(rep, artifacts=n)
                self.by_id[rid] = rep
                self.reports[rep.seq - 1] = rep
                ch.artifacts = rep
        elif kind == "candidate_submitted":
            self._submit(p, lane or "", ch)
        elif kind == "budget_spent":
            self._sync_budget(p.get("budget"), at, ch)
        elif kind in END_KINDS:
            self._sync_budget(p.get("budget"), at, ch)
            if self._open_at is not None and at:
                self._active_closed += (parse_at(at) - self._open_at).total_seconds()
                self._open_at = None
            for name, snap in self.lanes.items():
                if snap.actor is not None:
                    self._set(name, ch, actor=None, turn=None, since=None)
            self._status(kind[4:], ch)
        return ch

    def _status(self, status: str, ch: Change) -> None:
        if status != self.status:
            self.status = status
            ch.status = True

    def _set(self, lane: str, ch: Change, **fields: Any) -> None:
        row = self.lanes[lane]
        for key, value in fields.items():
            setattr(row, key, value)
        if lane not in ch.lanes:
            ch.lanes.append(lane)

    def _count_turn(self, p: Mapping[str, Any], ch: Change) -> None:
        self.turns += 1
        self.cost += float(p.get("cost_usd") or 0.0)
        self.output_tokens += _int(p.get("output_tokens"))
        ch.spend = True

    def _publish(self, rid: str, lane: str, actor: str | None, status: Any,
                 ch: Change) -> None:
        if not rid or rid in self.by_id:
            return
        source = self.by_source.setdefault(lane, [])
        rep = Report(report_id=rid, lane=lane, actor=actor,
                     status=None if status is None else str(status),
                     seq=len(self.reports) + 1, index=len(source))
        self.reports.append(rep)
        self.by_id[rid] = rep
        source.append(rid)
        ch.published = rep

    def _ack(self, consumer: str, source: str, seq: int, ch: Change) -> None:
        if not 1 <= seq <= len(self.reports):
            return
        rep = self.reports[seq - 1]
        if rep.lane != source:
            return
        have = self.cursors.setdefault(consumer, {})
        count = rep.index + 1
        if count > have.get(source, 0):
            have[source] = count
            ch.acks.append((consumer, source, count))

    def _note_integration(self, lane: str, actor: str | None, summary: str) -> None:
        """A valid turn whose summary names a package it was delivered integrated it."""
        box = self.received.get(lane)
        if not box:
            return
        # Look the summary's words up in the box, not the box's ids in the summary: the box
        # keeps every package never integrated, so it grows with the run.
        for word in _WORD.findall(summary):
            if word in box:
                del box[word]
                self.integrated.append((lane, word, actor))

    def _submit(self, p: Mapping[str, Any], lane: str, ch: Change) -> None:
        self.submissions += 1
        ch.board = True
        claimed = _float(p.get("claimed"))
        measured = p.get("measured")
        value = _float(measured) if measured is not None else claimed
        verified = bool(p.get("verified"))
        ranked = verified if self.evaluator else True
        entry = Entry(report_id=str(p.get("report_id") or ""), lane=lane,
                      metric=str(p.get("metric") or ""), direction=str(p.get("direction") or ""),
                      value=value, claimed=claimed, verified=verified, ranked=ranked)
        if not ranked:
            return
        ident = (metric_key(entry.metric), entry.direction)
        if self.primary is None:
            self.primary = ident
        cur = self.leaders.get(ident)
        if cur is None or better(value, cur.value, entry.direction):
            self.leaders[ident] = entry
        if ident == self.primary:
            key = value if entry.direction == "minimize" else -value
            # Ties keep the earlier entry first, as the leaderboard keeps the incumbent.
            bisect.insort(self._top, (key, self.submissions, entry), key=lambda t: t[:2])
            del self._top[TOP_N:]

    def _sync_budget(self, report: Any, at: str, ch: Change) -> None:
        if not isinstance(report, Mapping):
            return
        used: dict[str, float] = {}
        for key, line in report.items():
            value = line.get("used") if isinstance(line, Mapping) else None
            if isinstance(value, int | float):
                used[str(key)] = float(value)
        if "cost" in used:
            self.cost = used["cost"]
        if "turns" in used:
            self.turns = int(used["turns"])
        if "output_tokens" in used:
            self.output_tokens = int(used["output_tokens"])
        duration = used.get("duration")
        if duration is not None:
            # The engine's active time is the truth; keep the open session's clock in step.
            open_part = 0.0
            if self._open_at is not None and at:
                open_part = (parse_at(at) - self._open_at).total_seconds()
            self._active_closed = float(duration) - open_part
        ch.spend = True

    # ---- reading ---------------------------------------------------------------------------

    @property
    def best(self) -> Entry | None:
        return self.leaders.get(self.primary) if self.primary else None

    @property
    def top(self) -> tuple[Entry, ...]:
        return tuple(e for _, _, e in self._top)

    def active_seconds(self, now: datetime | None = None) -> float:
        """Active run time at `now` (default: the last event's time)."""
        if self._open_at is None:
            return self._active_closed
        if now is None:
            now = parse_at(self.at) if self.at else self._open_at
        return self._active_closed + max(0.0, (now - self._open_at).total_seconds())

    def pending(self, consumer: str) -> list[str]:
        """Reports from other lanes that `consumer` has not acknowledged, oldest first."""
        if not self.shares_reports:
            return []
        have = self.cursors.get(consumer, {})
        out: list[str] = []
        for source in self.order:
            if source != consumer:
                out.extend(self.by_source.get(source, [])[have.get(source, 0):])
        return out

    def acknowledged(self) -> int:
        return sum(sum(c.values()) for c in self.cursors.values())

    def snapshot(self, now: datetime | None = None) -> RunSnapshot:
        active = self.active_seconds(now)
        used = {"duration": active, "cost": self.cost, "turns": float(self.turns),
                "output_tokens": float(self.output_tokens)}
        return RunSnapshot(
            run_id=self.run_id, flow=self.flow, status=self.status, at=self.at,
            started=self.started, lanes=tuple(self.lanes[n].freeze() for n in self.order),
            budget=tuple(BudgetLine(k, self.limits[k], used[k]) for k in BUDGET_KEYS),
            cost=self.cost, turns=self.turns, output_tokens=self.output_tokens,
            active_seconds=active, best=self.best, top=self.top,
            submissions=self.submissions,
            pending={n: tuple(self.pending(n)) for n in self.order},
            reports=len(self.reports), acknowledged=self.acknowledged(), events=self.events,
        )


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _float(value: Any) -> float:
    try:
        return float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0
