"""The fold every view is built on: a run's events, in order, give its state at each point.

`RunFold.apply(event)` takes one event row ({seq, at, kind, lane, actor, payload}) and returns
what it changed; `snapshot()` freezes the state for a renderer. Nothing here reads the store
or the clock, so the HTML replay, the live terminal view, `serve` and `trace` agree by
construction, and tests can check a fold against the tables the engine wrote.

Reports and inboxes are folded in `inbox.py`, a turn's events in `turns.py`. Spend is derived
rather than read between budget reports: Turn events carry their cost and output tokens.
Whenever an event carries the engine's own budget report (`budget_spent`, `run_*`), the fold
takes those figures as they are.

The engine's own kinds have a handler in the fold's table (`_HANDLERS`); every kind, the
engine's and any flow's, is then asked to show itself (`Event.show`, events/present.py)
against the fold, and what it shows (a mark, panel rows, a score, a phase, an alert) is folded
the same way for every flow. The fold names no flow and no flow's kind.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from flamechase import events as ev
from flamechase.events.present import ReportSeen, Shown
from flamechase.view import turns
from flamechase.view.board import Board, Entry, Panel, Panels
from flamechase.view.inbox import Inboxes
from flamechase.view.rows import (
    SOURCE,
    BudgetLine,
    Change,
    LaneRow,
    LaneSnap,
    Report,
    RunSnapshot,
    parse_at,
)

__all__ = [
    "BUDGET_KEYS",
    "END_KINDS",
    "BudgetLine",
    "Change",
    "Entry",
    "LaneRow",
    "LaneSnap",
    "Panel",
    "Report",
    "RunFold",
    "RunSnapshot",
    "parse_at",
]

BUDGET_KEYS = ("duration", "cost", "turns", "output_tokens")
END_KINDS = frozenset({"run_finished", "run_stopped", "run_failed", "run_held"})
TURN_END_KINDS = frozenset({"turn_valid", "turn_failed", "turn_interrupted", "lane_paused"})


class RunFold:
    """Mutable state folded from events; `snapshot()` freezes it. It is the `Seen` every
    event shows itself against (events/present.py)."""

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
        self.order: list[str] = []  # lanes, then tracks of turns outside lanes
        self.lanes: dict[str, LaneRow] = {}
        self.inbox = Inboxes(shares_reports=shares_reports)
        for name, roles in lanes:
            self.row(name, roles)
        self.limits: dict[str, float | None] = dict.fromkeys(BUDGET_KEYS)
        if budget:
            self._set_limits(budget)
        self.places: dict[str, tuple[str, str]] = {}  # place -> (how, words)
        self.worked: dict[str, str] = {}  # track -> the place its last ended turn worked in
        self.board = Board()
        self.panels = Panels()
        self.alerts: list[str] = []
        self.phase: str | None = None  # a flow's phase (`planning`) while the run is running
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
    def from_run(
        cls,
        run: Mapping[str, Any],
        lanes: Iterable[Mapping[str, Any]],
        *,
        shares_reports: bool = True,
    ) -> RunFold:
        """A fold for a stored run: its run row and `lanes` rows (names and roles)."""
        return cls(
            run_id=str(run.get("id", "")),
            flow=str(run.get("flow", "")),
            lanes=[(str(ln["lane"]), list(ln.get("roles") or ())) for ln in lanes],
            budget=run.get("budget") or {},
            shares_reports=shares_reports,
        )

    def ensure_lane(self, name: str) -> None:
        """A lane an earlier fold of the run named (view/shown)."""
        self.row(name)

    def row(self, name: str, roles: Sequence[str] = (), *, solo: bool = False) -> LaneRow:
        """The row of lane (or track) `name`, made on first sight."""
        snap = self.lanes.get(name)
        if snap is None:
            snap = LaneRow(name=name, roles=tuple(roles), solo=solo)
            self.lanes[name] = snap
            self.order.append(name)
        return snap

    def _set_limits(self, budget: Mapping[str, Any]) -> None:
        for key in BUDGET_KEYS:
            value = budget.get(key)
            self.limits[key] = float(value) if isinstance(value, int | float) else None

    # ---- what events are shown against (events.present.Seen) -------------------------------

    def lane_names(self) -> Sequence[str]:
        return [n for n in self.order if not self.lanes[n].solo]

    def place_words(self, place: str) -> str:
        if place == SOURCE:
            return "your tree"
        known = self.places.get(place)
        return known[1] if known else f"place {place}"

    def lane_place(self, lane: str) -> str:
        row = self.lanes.get(lane)
        return self.place_words(row.place) if row and row.place else f"{lane}'s place"

    def handed(self, place: str) -> str:
        """What a lane's actors hand each other: the tree (the user's), the copy (a private
        snapshot), or the place as the flow named it."""
        if place == SOURCE:
            return "the tree"
        how, words = self.places.get(place, ("", ""))
        return "the copy" if how == "snapshot" else (words or "the place")

    def last_actor(self, lane: str) -> str | None:
        row = self.lanes.get(lane)
        return row.last_actor if row else None

    def last_place(self, lane: str) -> str | None:
        return self.worked.get(lane)

    def report(self, report_id: str) -> ReportSeen | None:
        return self.inbox.report(report_id)

    # What the fold's readers knew before reports had a module of their own.
    @property
    def reports(self) -> list[Report]:
        return self.inbox.reports

    @property
    def by_id(self) -> dict[str, Report]:
        return self.inbox.by_id

    @property
    def cursors(self) -> dict[str, dict[str, int]]:
        return self.inbox.cursors

    @property
    def integrated(self) -> list[tuple[str, str, str | None]]:
        return self.inbox.integrated

    @property
    def shares_reports(self) -> bool:
        return self.inbox.shares_reports

    # ---- folding ---------------------------------------------------------------------------

    def apply(self, event: Mapping[str, Any] | ev.Event) -> Change:
        """Fold one event (a stored row or an `events.Event`); what it changed, with how it
        shows itself."""
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
        ch.track = e.lane or (e.actor if isinstance(e, turns.TURN_KINDS) else None)
        handler = _HANDLERS.get(type(e))
        if handler is not None:
            handler(self, e, ch, before)
        try:
            shown = e.show(self)
        except Exception as exc:  # a flow's own `show` must never break a view
            shown = Shown(f"{e.describe()} (not shown: {type(exc).__name__})")
        self._shown(shown, ch)
        return ch

    def _shown(self, shown: Shown, ch: Change) -> None:
        ch.shown = shown
        for row in shown.rows:
            self.panels.put(row)
        if shown.ranking is not None:
            self.board.declare(shown.ranking)
            ch.board = True
        if shown.score is not None:
            self.board.add(shown.score)
            ch.board = True
        if shown.phase is not None and self.status in ("starting", "resumed", "running"):
            self.phase = shown.phase
            self._status(shown.phase, ch)
        if shown.alert:
            self.alerts.append(shown.alert)

    # ---- a handler per run and lane kind (turns' are in turns.py; the table `_HANDLERS`) ---

    def _opened(self, e: ev.RunCreated | ev.RunResumed, ch: Change, before: str | None) -> None:
        if isinstance(e, ev.RunCreated):
            for name in e.lanes:
                self.row(str(name))
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

    def _running(self, e: ev.RunRunning, ch: Change, before: str | None) -> None:
        self.phase = None
        self._status("running", ch)

    def _held(self, e: ev.LaneHeld, ch: Change, before: str | None) -> None:
        if e.lane:
            self.row(e.lane)
            # The remedy must survive the live view's clip of a long (agent-written) reason.
            reason = e.reason if len(e.reason) <= 160 else e.reason[:159] + "…"
            why = f"{reason}; to release it: {e.remedy}" if e.remedy else e.reason
            self.set_row(e.lane, ch, held=True, held_reason=why)

    def _released(self, e: ev.LaneReleased, ch: Change, before: str | None) -> None:
        if e.lane and e.lane in self.lanes:
            self.set_row(e.lane, ch, held=False, held_reason=None, failures=0)

    def _published(self, e: ev.ReportPublished, ch: Change, before: str | None) -> None:
        if not e.lane:
            return
        self.publish(e.report_id, e.lane, e.actor, e.report_status, ch)
        ch.artifacts = self.inbox.count_artifacts(e.report_id, len(e.artifacts))

    def _place(self, e: ev.PlaceMade, ch: Change, before: str | None) -> None:
        self.places[e.place] = (e.how, e.label or f"{e.how} {e.place}")

    def _stopping(self, e: ev.Stopping, ch: Change, before: str | None) -> None:
        # The header is all the live view shows of it: the way on is said there, as the log says.
        again = not e.cut and e.under_way
        self._status(
            "stopping (Ctrl-C again to cut the turns under way)" if again else "stopping", ch
        )

    def _budget_spent(self, e: ev.BudgetSpent, ch: Change, before: str | None) -> None:
        self._sync_budget(e.budget, e.at, ch)

    def _ended(self, e: ev.RunEnded, ch: Change, before: str | None) -> None:
        self._sync_budget(e.budget, e.at, ch)
        if self._open_at is not None and e.at:
            self._active_closed += (parse_at(e.at) - self._open_at).total_seconds()
            self._open_at = None
        for name, snap in self.lanes.items():
            if snap.actor is not None:
                self.set_row(name, ch, actor=None, turn=None, since=None)
        self.phase = None
        self._status(e.status, ch)

    def _status(self, status: str, ch: Change) -> None:
        if status != self.status:
            self.status = status
            ch.status = True

    def set_row(self, lane: str, ch: Change, **fields: Any) -> None:
        """Set fields of a lane's row and note the lane in what `ch` changed."""
        row = self.lanes[lane]
        for key, value in fields.items():
            setattr(row, key, value)
        if lane not in ch.lanes:
            ch.lanes.append(lane)

    def publish(self, rid: str, lane: str, actor: str | None, status: object, ch: Change) -> None:
        rep = self.inbox.publish(rid, lane, actor, status)
        if rep is not None:
            ch.published = rep

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
        return self.board.best

    @property
    def top(self) -> tuple[Entry, ...]:
        return self.board.top

    @property
    def submissions(self) -> int:
        return self.board.submissions

    @property
    def measured_by(self) -> str | None:
        return self.board.measured_by

    @property
    def primary(self) -> tuple[str, str] | None:
        return self.board.primary

    def active_seconds(self, now: datetime | None = None) -> float:
        """Active run time at `now` (default: the last event's time)."""
        if self._open_at is None:
            return self._active_closed
        if now is None:
            now = parse_at(self.at) if self.at else self._open_at
        return self._active_closed + max(0.0, (now - self._open_at).total_seconds())

    def pending(self, consumer: str) -> list[str]:
        """Reports of the lanes `consumer` reads that it has not acknowledged, oldest first."""
        return self.inbox.pending(consumer, self.lane_names())

    def acknowledged(self) -> int:
        return self.inbox.acknowledged()

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
            reports=len(self.inbox.reports),
            acknowledged=self.acknowledged(),
            events=self.events,
            panels=self.panels.freeze(),
            alerts=tuple(self.alerts),
        )


_Handler = Any  # taking (the fold, event, change, time of the previous event)
_HANDLERS: dict[type[ev.Event], _Handler] = {
    ev.RunCreated: RunFold._opened,
    ev.RunResumed: RunFold._opened,
    ev.RunRunning: RunFold._running,
    ev.TurnStarted: turns.started,
    ev.TurnValid: turns.valid,
    ev.TurnFailed: turns.failed,
    ev.TurnInterrupted: turns.cut,
    ev.LanePaused: turns.cut,
    ev.AgentSwitched: turns.switched,
    ev.LaneHeld: RunFold._held,
    ev.LaneReleased: RunFold._released,
    ev.ReportPublished: RunFold._published,
    ev.PlaceMade: RunFold._place,
    ev.BudgetSpent: RunFold._budget_spent,
    ev.Stopping: RunFold._stopping,
    ev.RunFinished: RunFold._ended,
    ev.RunStopped: RunFold._ended,
    ev.RunFailed: RunFold._ended,
    ev.RunHeld: RunFold._ended,
}
