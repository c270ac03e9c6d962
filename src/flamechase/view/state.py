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

# long file: the fold and the frozen snapshot it produces share their field lists (LaneRow/LaneSnap)
# by position.

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from flamechase import events as ev
from flamechase.flow.leaderboard import better, metric_key
from flamechase.flows.git_pr import events as gev
from flamechase.flows.parallel_flame_chase import events as pev
from flamechase.flows.parrallello import events as fev

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
    # A mark on the event's lane in the timeline: (label, kind: pr | merge | reject).
    mark: tuple[str, str] | None = None


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
        # Mirrors `flow.leaderboard.board`: a declared metric when the run measures (the flow
        # says so with `leaderboard_declared`), else the first ranked submission fixes it.
        self.evaluator = False
        self.measured_by: str | None = None  # the command the runtime measures with
        self.primary: tuple[str, str] | None = None
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
        self._solo_turns = 0  # turns outside lanes (planning) seen

    # ---- construction ----------------------------------------------------------------------

    @classmethod
    def from_run(
        cls,
        run: Mapping[str, Any],
        lanes: Iterable[Mapping[str, Any]],
        *,
        shares_reports: bool = True,
    ) -> RunFold:
        """A fold for a stored run: its run row and `lanes` rows (names and roles).

        A stored run does not say whether its flow passes reports between lanes; every
        built-in flow with more than one lane does, and importing a user's flow file to draw
        a picture of a finished run would run its code, so the default is that it does.
        """
        return cls(
            run_id=str(run.get("id", "")),
            flow=str(run.get("flow", "")),
            lanes=[(str(ln["lane"]), list(ln.get("roles") or ())) for ln in lanes],
            budget=run.get("budget") or {},
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

    def apply(self, event: Mapping[str, Any] | ev.Event) -> Change:
        """Fold one event (a stored row or an `events.Event`); what it changed."""
        e = event if isinstance(event, ev.Event) else ev.parse(event)
        ch = Change()
        self.events += 1
        before = self._alive_at
        at = e.at
        # A resumed engine first records the turns the dead one left cut: those say nothing
        # about when the old session was alive (flamechase 0.1 wrote them without a duration).
        recovered = isinstance(e, ev.TurnInterrupted) and (
            e.recovered
            or (not isinstance(event, ev.Event) and "duration" not in (event.get("payload") or {}))
        )
        if at and not recovered:
            self._alive_at = at
        if at:
            self.at = at
            if self.started is None:
                self.started = at
        handler = _HANDLERS.get(type(e))
        if handler is not None:
            handler(self, e, ch, before)
        return ch

    # ---- one handler per kind (the table `_HANDLERS` below maps kinds to them) -------------

    def _opened(self, e: ev.RunCreated | ev.RunResumed, ch: Change, before: str | None) -> None:
        if isinstance(e, ev.RunCreated):
            for name in e.lanes:
                self._lane(str(name))
        if isinstance(e.budget, Mapping) and e.budget:
            self._set_limits(e.budget)
            ch.budget = True
        if self._open_at is not None and before:
            # The previous session ended without an end event (a crash or a kill): it was
            # active until its last event, not through the time the run was down.
            self._active_closed += (parse_at(before) - self._open_at).total_seconds()
            self._open_at = None
        if e.at:
            self._open_at = parse_at(e.at)
        self._status("starting" if isinstance(e, ev.RunCreated) else "resumed", ch)

    def _planning(self, e: pev.PlanningStarted, ch: Change, before: str | None) -> None:
        self._status("planning", ch)

    def _plan_attempt(self, e: pev.PlanAttempt, ch: Change, before: str | None) -> None:
        # flamechase 0.1 journaled planning sessions only as plan_attempt; later journals
        # count their spend from the session's own turn event.
        if not self._solo_turns:
            self.cost += e.cost_usd
            ch.spend = True

    def _planned(self, e: pev.Planned, ch: Change, before: str | None) -> None:
        for name in e.released:
            if name in self.lanes:
                self._set(str(name), ch, held=False, held_reason=None, failures=0)

    def _running(self, e: ev.RunRunning, ch: Change, before: str | None) -> None:
        self._status("running", ch)

    def _turn_started(self, e: ev.TurnStarted, ch: Change, before: str | None) -> None:
        if not e.lane:
            return
        self._lane(e.lane)
        self._set(
            e.lane,
            ch,
            actor=e.actor,
            turn=e.turn,
            attempt=e.attempt or 1,
            since=e.at or None,
            backend=e.backend,
            paused_until=None,
        )
        self.delivered += len(e.delivered)
        box = self.received.setdefault(e.lane, {})
        for rid in e.delivered:
            rep = self.by_id.get(rid)
            if rep is not None and rep.artifacts:
                box[rid] = None

    def _turn_valid(self, e: ev.TurnValid, ch: Change, before: str | None) -> None:
        if not e.lane:
            self._solo_turns += 1
            self._count_spend(e, ch, counted=False)
            return
        snap = self._lane(e.lane)
        self._count_spend(e, ch, counted=e.counted)
        self._set(
            e.lane,
            ch,
            actor=None,
            turn=None,
            since=None,
            turns=snap.turns + 1,
            valid=snap.valid + 1,
            failures=0,
            last_status=e.report_status,
            last_actor=e.actor,
            last_error=None,
        )
        if e.report_id:  # journals of flamechase 0.1 published the report with the turn
            self._publish(e.report_id, e.lane, e.actor, e.report_status, ch)
        for source, seq in e.acknowledged.items():
            self._ack(e.lane, str(source), _int(seq), ch)
        self._note_integration(e.lane, e.actor, e.summary)

    def _turn_failed(self, e: ev.TurnFailed, ch: Change, before: str | None) -> None:
        if not e.lane:
            self._solo_turns += 1
            self._count_spend(e, ch, counted=False)
            return
        snap = self._lane(e.lane)
        self._count_spend(e, ch, counted=e.counted)
        self._set(
            e.lane,
            ch,
            actor=None,
            turn=None,
            since=None,
            turns=snap.turns + 1,
            failed=snap.failed + 1,
            failures=snap.failures + 1,
            last_status="turn_failed",
            last_actor=e.actor,
            last_error=e.error or "no reason recorded",
        )
        if e.report_id:
            self._publish(e.report_id, e.lane, e.actor, "turn_failed", ch)

    def _turn_cut(
        self, e: ev.TurnInterrupted | ev.LanePaused, ch: Change, before: str | None
    ) -> None:
        self.cost += e.cost_usd
        self.output_tokens += e.output_tokens
        ch.spend = True
        if not e.lane:
            return
        self._lane(e.lane)
        extra: dict[str, Any] = {}
        if isinstance(e, ev.LanePaused):
            extra["paused_until"] = e.until
        self._set(e.lane, ch, actor=None, turn=None, since=None, **extra)

    def _held(self, e: ev.LaneHeld, ch: Change, before: str | None) -> None:
        if e.lane:
            self._lane(e.lane)
            self._set(e.lane, ch, held=True, held_reason=e.reason)

    def _released(self, e: ev.LaneReleased, ch: Change, before: str | None) -> None:
        if e.lane and e.lane in self.lanes:
            self._set(e.lane, ch, held=False, held_reason=None, failures=0)

    def _published(self, e: ev.ReportPublished, ch: Change, before: str | None) -> None:
        if not e.lane:
            return
        self._publish(e.report_id, e.lane, e.actor, e.report_status, ch)
        rep = self.by_id.get(e.report_id)
        n = len(e.artifacts)
        if rep is not None and n != rep.artifacts:
            rep = dataclasses.replace(rep, artifacts=n)
            self.by_id[e.report_id] = rep
            self.reports[rep.seq - 1] = rep
            ch.artifacts = rep

    def _declared(self, e: pev.LeaderboardDeclared, ch: Change, before: str | None) -> None:
        self.evaluator = e.measured_by_runtime
        self.measured_by = e.command
        if e.metric and e.direction:
            self.primary = (metric_key(e.metric), e.direction)
        ch.board = True

    def _submitted(self, e: pev.CandidateSubmitted, ch: Change, before: str | None) -> None:
        self._submit(e, ch)

    def _stopping(self, e: ev.Stopping, ch: Change, before: str | None) -> None:
        self._status("stopping", ch)

    def _budget_spent(self, e: ev.BudgetSpent, ch: Change, before: str | None) -> None:
        self._sync_budget(e.budget, e.at, ch)

    def _ended(self, e: ev.RunEnded, ch: Change, before: str | None) -> None:
        self._sync_budget(e.budget, e.at, ch)
        if self._open_at is not None and e.at:
            self._active_closed += (parse_at(e.at) - self._open_at).total_seconds()
            self._open_at = None
        for name, snap in self.lanes.items():
            if snap.actor is not None:
                self._set(name, ch, actor=None, turn=None, since=None)
        self._status(e.status, ch)

    def _marked(self, e: ev.Event, ch: Change, before: str | None) -> None:
        """A pull request or a push: a mark on its lane's track, and nothing else."""
        if not e.lane:
            return
        self._lane(e.lane)
        pr = str(getattr(e, "pr", "") or "")
        label, kind = _MARKS[type(e)]
        ch.mark = (f"{pr} {label}".strip(), kind)

    def _place(self, e: ev.PlaceMade, ch: Change, before: str | None) -> None:
        if e.lane:
            self.copies.add(e.lane)

    def _nothing(self, e: ev.Event, ch: Change, before: str | None) -> None:
        """Kinds that change nothing a view draws (they are narrated, not folded)."""

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

    def _count_spend(self, e: ev.TurnEnded, ch: Change, *, counted: bool) -> None:
        if counted:
            self.turns += 1
        self.cost += e.cost_usd
        self.output_tokens += e.output_tokens
        ch.spend = True

    def _publish(self, rid: str, lane: str, actor: str | None, status: Any, ch: Change) -> None:
        if not rid or rid in self.by_id:
            return
        source = self.by_source.setdefault(lane, [])
        rep = Report(
            report_id=rid,
            lane=lane,
            actor=actor,
            status=None if status is None else str(status),
            seq=len(self.reports) + 1,
            index=len(source),
        )
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

    def _submit(self, e: pev.CandidateSubmitted, ch: Change) -> None:
        self.submissions += 1
        ch.board = True
        value = e.measured if e.measured is not None else e.claimed
        # `ranked` says whether this run ranks the entry (measured by the runtime, or claims
        # when it has no evaluator); journals of flamechase 0.1 did not say: a verified entry
        # ranks, and so does any entry of a run that declared no measurement.
        ranked = e.ranked and (e.verified or not self.evaluator)
        entry = Entry(
            report_id=e.report_id,
            lane=e.lane or "",
            metric=e.metric,
            direction=e.direction,
            value=float(value),
            claimed=float(e.claimed),
            verified=e.verified,
            ranked=ranked,
        )
        if not ranked:
            return
        ident = (metric_key(entry.metric), entry.direction)
        if self.primary is None:
            self.primary = ident
        cur = self.leaders.get(ident)
        if cur is None or better(entry.value, cur.value, entry.direction):
            self.leaders[ident] = entry
        if ident == self.primary:
            key = entry.value if entry.direction == "minimize" else -entry.value
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
                out.extend(self.by_source.get(source, [])[have.get(source, 0) :])
        return out

    def acknowledged(self) -> int:
        return sum(sum(c.values()) for c in self.cursors.values())

    def snapshot(self, now: datetime | None = None) -> RunSnapshot:
        active = self.active_seconds(now)
        used = {
            "duration": active,
            "cost": self.cost,
            "turns": float(self.turns),
            "output_tokens": float(self.output_tokens),
        }
        return RunSnapshot(
            run_id=self.run_id,
            flow=self.flow,
            status=self.status,
            at=self.at,
            started=self.started,
            lanes=tuple(self.lanes[n].freeze() for n in self.order),
            budget=tuple(BudgetLine(k, self.limits[k], used[k]) for k in BUDGET_KEYS),
            cost=self.cost,
            turns=self.turns,
            output_tokens=self.output_tokens,
            active_seconds=active,
            best=self.best,
            top=self.top,
            submissions=self.submissions,
            pending={n: tuple(self.pending(n)) for n in self.order},
            reports=len(self.reports),
            acknowledged=self.acknowledged(),
            events=self.events,
        )


_Handler = Any  # RunFold method taking (event, change, time of the previous event)
_HANDLERS: dict[type[ev.Event], _Handler] = {
    ev.RunCreated: RunFold._opened,
    ev.RunResumed: RunFold._opened,
    pev.PlanningStarted: RunFold._planning,
    pev.PlanAttempt: RunFold._plan_attempt,
    pev.Planned: RunFold._planned,
    ev.RunRunning: RunFold._running,
    ev.TurnStarted: RunFold._turn_started,
    ev.TurnValid: RunFold._turn_valid,
    ev.TurnFailed: RunFold._turn_failed,
    ev.TurnInterrupted: RunFold._turn_cut,
    ev.LanePaused: RunFold._turn_cut,
    ev.LaneHeld: RunFold._held,
    ev.LaneReleased: RunFold._released,
    ev.ReportPublished: RunFold._published,
    pev.LeaderboardDeclared: RunFold._declared,
    pev.CandidateSubmitted: RunFold._submitted,
    ev.BudgetSpent: RunFold._budget_spent,
    ev.Stopping: RunFold._stopping,
    ev.RunFinished: RunFold._ended,
    ev.RunStopped: RunFold._ended,
    ev.RunFailed: RunFold._ended,
    ev.RunHeld: RunFold._ended,
    # Narrated, not folded:
    ev.Notice: RunFold._nothing,
    ev.ObjectiveRevised: RunFold._nothing,
    pev.ObjectiveReplanned: RunFold._nothing,
    ev.PlaceMade: RunFold._place,
    ev.Measured: RunFold._nothing,
    ev.Ran: RunFold._nothing,
    ev.Frozen: RunFold._nothing,
    ev.PlaceDropped: RunFold._nothing,
    pev.CandidateBestUpdated: RunFold._nothing,
    gev.CentralReady: RunFold._nothing,
    gev.MainMeasured: RunFold._nothing,
    gev.PrReviewing: RunFold._nothing,
    gev.MainPublished: RunFold._nothing,
    gev.PublicationHeld: RunFold._nothing,
    # Marks on a lane's track:
    gev.PrOpened: RunFold._marked,
    gev.PrReady: RunFold._marked,
    gev.PrMerged: RunFold._marked,
    gev.PrRejected: RunFold._marked,
    gev.PushRefused: RunFold._marked,
    gev.PrRequestRefused: RunFold._marked,
    # parrallello's decisions: narrated (with their progress figures), not folded.
    fev.FrontsPlanned: RunFold._nothing,
    fev.CheckpointMade: RunFold._nothing,
    fev.FrontPrepped: RunFold._nothing,
    fev.FrontStarted: RunFold._nothing,
    fev.RoundStarted: RunFold._nothing,
    fev.BuilderChecked: RunFold._nothing,
    fev.GateRan: RunFold._nothing,
    fev.GateRefrozen: RunFold._nothing,
    fev.VerdictRecorded: RunFold._nothing,
    fev.BlockEnded: RunFold._nothing,
    fev.FrontEnded: RunFold._nothing,
    fev.FrontIntegrated: RunFold._nothing,
    fev.Anomaly: RunFold._nothing,
}
_MARKS: dict[type[ev.Event], tuple[str, str]] = {
    gev.PrOpened: ("opened", "pr"),
    gev.PrReady: ("ready", "pr"),
    gev.PrMerged: ("merged", "merge"),
    gev.PrRejected: ("rejected", "reject"),
    gev.PushRefused: ("push refused", "reject"),
    gev.PrRequestRefused: ("PR request refused", "reject"),
}


def handles(kind: type[ev.Event]) -> bool:
    """Whether the fold knows `kind` (every built-in kind must be known)."""
    return kind in _HANDLERS


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
