"""Every kind of event a run journals: one frozen class per kind, with a version.

The control loop journals events in the same transaction as the state they change; flows fold
them into their state (`Flow.evolve`); views fold them into pictures (`view.state.RunFold`).
All three use these classes, so a kind cannot mean one thing to the engine and another to a
view. A stored event is a row `{seq, at, kind, v, lane, actor, payload}`; `parse` turns a row
back into its class, ignoring payload keys it does not know (newer writers) and filling the
ones it lacks with defaults (older writers). A kind nobody registered comes back as `Unknown`.

Flows outside flamechase register their own kinds with `register` (a subclass of
`FlowEvent`); views show those with `Event.describe()`.
"""

# long file: every event kind lives in this one module on purpose (issue 9): a kind the views do not
# know cannot hide in another file.

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

__all__ = [
    "REGISTRY",
    "Anomaly",
    "BlockEnded",
    "BudgetSpent",
    "BuilderChecked",
    "CandidateBestUpdated",
    "CandidateSubmitted",
    "CentralReady",
    "CheckpointMade",
    "Event",
    "FlowEvent",
    "FrontEnded",
    "FrontIntegrated",
    "FrontPrepped",
    "FrontStarted",
    "FrontsPlanned",
    "GateRan",
    "GateRefrozen",
    "LaneHeld",
    "LanePaused",
    "LaneReleased",
    "MainMeasured",
    "MainPublished",
    "Measured",
    "Notice",
    "ObjectiveReplanned",
    "ObjectiveRevised",
    "PlaceMade",
    "PlanAttempt",
    "Planned",
    "PlanningStarted",
    "PrMerged",
    "PrOpened",
    "PrReady",
    "PrRejected",
    "PrRequestRefused",
    "PrReviewing",
    "PublicationHeld",
    "PushRefused",
    "ReportPublished",
    "RoundStarted",
    "RunCreated",
    "RunEnded",
    "RunFailed",
    "RunFinished",
    "RunHeld",
    "RunResumed",
    "RunRunning",
    "RunStopped",
    "Stopping",
    "TurnEnded",
    "TurnFailed",
    "TurnInterrupted",
    "TurnStarted",
    "TurnValid",
    "Unknown",
    "VerdictRecorded",
    "parse",
    "register",
]

REGISTRY: dict[str, type[Event]] = {}
_BASE_FIELDS = frozenset({"lane", "actor", "seq", "at"})

EventT = TypeVar("EventT", bound="Event")


def register(cls: type[EventT]) -> type[EventT]:
    """Make `cls` (an Event subclass with a unique `kind`) parseable from stored rows."""
    kind = cls.kind
    if not kind:
        raise ValueError(f"{cls.__qualname__} has no kind")
    have = REGISTRY.get(kind)
    if have is not None and have is not cls:
        raise ValueError(f"event kind {kind!r} is registered twice ({have.__qualname__}, "
                         f"{cls.__qualname__})")
    REGISTRY[kind] = cls
    return cls


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """What happened, when (`at`, ISO 8601 UTC), where (`lane`) and who did it (`actor`).

    `seq` and `at` are given by the journal when the event is written; an event built by the
    engine or a flow before that has seq 0.
    """

    kind: ClassVar[str] = ""
    version: ClassVar[int] = 1
    lane: str | None = None
    actor: str | None = None
    seq: int = 0
    at: str = ""

    def payload(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name not in _BASE_FIELDS}

    def row(self) -> dict[str, Any]:
        """The event as stored and as views and `--json` show it."""
        return {"seq": self.seq, "at": self.at, "kind": self.kind, "v": self.version,
                "lane": self.lane, "actor": self.actor, "payload": self.payload()}

    def describe(self) -> str:
        """One human line (without time or lane); kinds with more to say override it."""
        return self.kind.replace("_", " ")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FlowEvent(Event):
    """Base of the events a flow asks the engine to journal (`Emit`)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Unknown(Event):
    """A stored kind this version does not know; kept so that folds can count it."""

    unknown_kind: str = ""
    data: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def row(self) -> dict[str, Any]:
        return {"seq": self.seq, "at": self.at, "kind": self.unknown_kind, "v": 0,
                "lane": self.lane, "actor": self.actor, "payload": dict(self.data)}

    def describe(self) -> str:
        return self.unknown_kind.replace("_", " ")


def parse(row: Mapping[str, Any]) -> Event:
    """The event a stored row holds (see the module docstring for what is tolerated)."""
    kind = str(row.get("kind") or "")
    payload = row.get("payload") or {}
    base: dict[str, Any] = {
        "lane": row.get("lane") or None,
        "actor": row.get("actor") or None,
        "seq": int(row.get("seq") or 0),
        "at": str(row.get("at") or ""),
    }
    cls = REGISTRY.get(kind)
    if cls is None:
        return Unknown(unknown_kind=kind, data=dict(payload), **base)
    names = _field_names(cls)
    try:
        return cls(**base, **{k: v for k, v in payload.items() if k in names})
    except TypeError:  # a payload written by hand or by a broken writer
        return Unknown(unknown_kind=kind, data=dict(payload), **base)


_NAMES: dict[type[Event], frozenset[str]] = {}


def _field_names(cls: type[Event]) -> frozenset[str]:
    names = _NAMES.get(cls)
    if names is None:
        names = frozenset(f.name for f in dataclasses.fields(cls)) - _BASE_FIELDS
        _NAMES[cls] = names
    return names


# ---- the run -----------------------------------------------------------------------------------


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunCreated(Event):
    kind: ClassVar[str] = "run_created"
    flow: str = ""
    flow_source: str = ""
    flow_hash: str = ""
    workspace: str = ""
    objective: str = ""
    lanes: list[str] = dataclasses.field(default_factory=list)
    agents: dict[str, str] = dataclasses.field(default_factory=dict)
    budget: dict[str, Any] = dataclasses.field(default_factory=dict)
    budget_from: dict[str, str] = dataclasses.field(default_factory=dict)

    def describe(self) -> str:
        return f"run of {self.flow} created on {self.workspace}; {budget_words(self.budget)}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunResumed(Event):
    kind: ClassVar[str] = "run_resumed"
    session: int = 0
    agents: dict[str, str] = dataclasses.field(default_factory=dict)
    changed_agents: dict[str, list[str | None]] = dataclasses.field(default_factory=dict)
    budget: dict[str, Any] = dataclasses.field(default_factory=dict)
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    revised: bool = False
    budget_from: dict[str, str] = dataclasses.field(default_factory=dict)
    spent: dict[str, Any] = dataclasses.field(default_factory=dict)  # budget report at resume

    def describe(self) -> str:
        return (f"run resumed (session {self.session}); "
                f"{budget_words(self.budget, self.budget_from, self.spent)}")


def budget_words(budget: Mapping[str, Any], origin: Mapping[str, str] | None = None,
                 spent: Mapping[str, Any] | None = None) -> str:
    """Every bound in force, where it came from and what is spent of it, in one line."""
    parts = []
    for key in ("duration", "cost", "turns", "output_tokens"):
        limit = budget.get(key)
        if limit is None:
            continue
        used = (spent or {}).get(key, {}).get("used") if spent else None
        text = f"{key} {_amount(key, limit)}"
        if origin and key in origin:
            text += f" ({origin[key]}"
            text += f", {_amount(key, used)} spent)" if used is not None else ")"
        parts.append(text)
    if not parts:
        return "no budget: runs until stopped"
    return "budget " + ", ".join(parts)


def _amount(key: str, value: Any) -> str:
    if not isinstance(value, int | float):
        return str(value)
    if key == "duration":
        return human_seconds(float(value))
    if key == "cost":
        return f"${value:.2f}"
    return f"{int(value):,}"


def human_seconds(seconds: float) -> str:
    """A duration as people write it: 45s, 3m05s, 1h02m, 2d03h."""
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{(s // 60) % 60:02d}m"
    return f"{s // 86400}d{(s // 3600) % 24:02d}h"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Notice(Event):
    kind: ClassVar[str] = "notice"
    message: str = ""

    def describe(self) -> str:
        return self.message


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ObjectiveRevised(Event):
    """TASK.md changed between sessions; the run goes on toward the new text."""

    kind: ClassVar[str] = "objective_revised"
    task_fingerprint: str = ""
    objective: str = ""

    def describe(self) -> str:
        return "the objective was revised (TASK.md changed)"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PlaceMade(Event):
    """A place to work in exists: a private snapshot, a planning copy, a clone."""

    kind: ClassVar[str] = "place_made"
    place: str = ""
    path: str = ""
    how: str = "snapshot"
    # An overlay's differences from its base (paths relative to the place).
    changed: list[str] = dataclasses.field(default_factory=list)
    deleted: list[str] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        text = f"{self.how} {self.place} made at {self.path}"
        if self.how == "overlay":
            text += f" ({len(self.changed)} changed, {len(self.deleted)} deleted)"
        return text


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PlaceDropped(Event):
    kind: ClassVar[str] = "place_dropped"
    place: str = ""

    def describe(self) -> str:
        return f"{self.place} removed"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Frozen(Event):
    """Files of a place hashed and copied into the blob store (`Freeze`)."""

    kind: ClassVar[str] = "frozen"
    key: str = ""
    place: str = ""
    files: dict[str, str] = dataclasses.field(default_factory=dict)  # path -> sha256
    error: str | None = None

    def describe(self) -> str:
        if self.error:
            return f"freezing {self.key} failed: {self.error}"
        return f"froze {self.key}: {', '.join(sorted(self.files)) or 'no files'}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunRunning(Event):
    kind: ClassVar[str] = "run_running"
    lanes: list[str] = dataclasses.field(default_factory=list)


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Stopping(Event):
    """The user asked the run to stop: turns under way finish (or, `cut`, are cut now)."""

    kind: ClassVar[str] = "stopping"
    cut: bool = False
    under_way: int = 0

    def describe(self) -> str:
        n = self.under_way
        turns = f"{n} turn{'s' if n != 1 else ''} under way"
        if self.cut:
            return f"stopping now: cutting {turns}"
        if not n:
            return "stopping: nothing is under way"
        return f"stopping: {turns} will finish and be recorded; Ctrl-C again to cut them"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BudgetSpent(Event):
    kind: ClassVar[str] = "budget_spent"
    key: str = ""
    budget: dict[str, Any] = dataclasses.field(default_factory=dict)

    def describe(self) -> str:
        return f"budget {self.key} spent; no new turns"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunEnded(Event):
    """The last event of an engine session (each kind names how it ended)."""

    message: str = ""
    budget: dict[str, Any] = dataclasses.field(default_factory=dict)
    valid_turns: int | None = None

    @property
    def status(self) -> str:
        return self.kind.removeprefix("run_")

    def describe(self) -> str:
        return f"run {self.status}: {self.message}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunFinished(RunEnded):
    kind: ClassVar[str] = "run_finished"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunStopped(RunEnded):
    kind: ClassVar[str] = "run_stopped"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunFailed(RunEnded):
    kind: ClassVar[str] = "run_failed"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunHeld(RunEnded):
    kind: ClassVar[str] = "run_held"


END_KINDS: frozenset[str] = frozenset(
    c.kind for c in (RunFinished, RunStopped, RunFailed, RunHeld))

# ---- turns -------------------------------------------------------------------------------------


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TurnStarted(Event):
    """A turn of `actor` (its role) in `lane` (None: a turn outside lanes, e.g. planning)."""

    kind: ClassVar[str] = "turn_started"
    turn: int = 0
    attempt: int = 1
    backend: str = ""
    place: str = ""
    delivered: list[str] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        text = f"turn {self.turn} starts ({self.backend})"
        if self.delivered:
            text += f" · with {len(self.delivered)} report(s) in its inbox"
        return text


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TurnEnded(Event):
    """How a turn ended; each subclass is one outcome. Spend is per turn, never a total."""

    turn: int = 0
    attempt: int = 1
    duration: float = 0.0
    cost_usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    transcript: str | None = None
    repairs: int = 0
    exit_code: int | None = None
    counted: bool = True  # counts toward budget.turns (planning sessions do not)
    # What the agent asked the runtime for ($FLAMECHASE_REQUESTS), and lines refused.
    requests: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    requests_refused: list[str] = dataclasses.field(default_factory=list)

    @property
    def status(self) -> str:
        return {"lane_paused": "limited"}.get(self.kind, self.kind.removeprefix("turn_"))

    def payload(self) -> dict[str, Any]:
        # The outcome in one word as well as in the kind (readers of the JSON lines use it).
        return {**Event.payload(self), "status": self.status}


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TurnValid(TurnEnded):
    """The turn's result validated. `result` is the validated JSON object."""

    kind: ClassVar[str] = "turn_valid"
    result: dict[str, Any] = dataclasses.field(default_factory=dict)
    report_status: str | None = None
    summary: str = ""
    artifacts: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    acknowledged: dict[str, int] = dataclasses.field(default_factory=dict)
    recovered_from_checkpoint: bool = False
    report_id: str | None = None  # set by flamechase 0.1, which published with the turn

    def describe(self) -> str:
        text = f"turn {self.turn} {self.report_status or 'valid'}"
        if self.summary:
            text += f": {self.summary[:120]}"
        if self.cost_usd:
            text += f" · ${self.cost_usd:.4f}"
        return text + f" · {self.duration:.1f}s"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TurnFailed(TurnEnded):
    kind: ClassVar[str] = "turn_failed"
    error: str = ""
    report_id: str | None = None  # set by flamechase 0.1, which published with the turn

    def describe(self) -> str:
        return f"turn {self.turn} FAILED: {self.error[:160]}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TurnInterrupted(TurnEnded):
    """Cut by a stop or a crash: the same role takes the same turn again."""

    kind: ClassVar[str] = "turn_interrupted"
    reason: str = ""
    counted: bool = False
    # Recorded by a resumed engine for a turn a dead one left under way.
    recovered: bool = False

    def describe(self) -> str:
        return f"turn {self.turn} cut: {self.reason}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LanePaused(TurnEnded):
    """A usage window closed: the lane waits until `until`, then retakes the turn."""

    kind: ClassVar[str] = "lane_paused"
    until: str | None = None
    reason: str = ""
    counted: bool = False

    def describe(self) -> str:
        return f"paused until {self.until}: {self.reason}"


# ---- lanes, reports, measurements ---------------------------------------------------------------


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LaneHeld(Event):
    kind: ClassVar[str] = "lane_held"
    reason: str = ""

    def describe(self) -> str:
        return f"HELD: {self.reason[:160]}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LaneReleased(Event):
    kind: ClassVar[str] = "lane_released"
    reason: str = ""

    def describe(self) -> str:
        return f"released: {self.reason[:160]}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ReportPublished(Event):
    """A report entered the run's report log (seq = its position), with frozen artifacts."""

    kind: ClassVar[str] = "report_published"
    report_id: str = ""
    report_seq: int = 0
    report_status: str | None = None
    report_kind: str = "report"
    artifacts: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        n = len(self.artifacts)
        return (f"report {self.report_id} published"
                + (f" with {n} frozen artifact(s)" if n else ""))


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Measured(Event):
    """The runtime ran a measurement (an evaluator, a gate) and kept its receipt."""

    kind: ClassVar[str] = "measured"
    key: str = ""
    receipt: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def value(self) -> float | None:
        v = self.receipt.get("value")
        return float(v) if isinstance(v, int | float) else None

    @property
    def error(self) -> str | None:
        e = self.receipt.get("error")
        return str(e) if e else None

    def describe(self) -> str:
        if self.error:
            return f"measured {self.key}: {self.error[:160]}"
        return f"measured {self.key}: {self.value:g}" if self.value is not None else (
            f"measured {self.key}")


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Ran(Event):
    """The runtime ran a program a flow asked for (`Run`) and kept its receipt."""

    kind: ClassVar[str] = "ran"
    key: str = ""
    receipt: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.receipt.get("error")

    @property
    def output(self) -> str:
        return str(self.receipt.get("output") or "")

    def describe(self) -> str:
        error = self.receipt.get("error")
        return f"ran {self.key}" + (f": {str(error)[:160]}" if error else "")


# ---- parallel_flame_chase: planning and the leaderboard ---------------------------------------
# Flow-level kinds of the built-in flows live here too, so that views know every built-in kind.


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PlanningStarted(FlowEvent):
    kind: ClassVar[str] = "planning_started"
    revision: int = 1
    workspace: str = ""

    def describe(self) -> str:
        return f"planning (revision {self.revision})"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PlanAttempt(FlowEvent):
    kind: ClassVar[str] = "plan_attempt"
    attempt: int = 1
    status: str = ""
    error: str | None = None
    cost_usd: float = 0.0
    output_tokens: int = 0
    duration: float = 0.0

    def describe(self) -> str:
        return (f"planning attempt {self.attempt}: {self.status}"
                + (f" ({self.error})" if self.error else ""))


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Planned(FlowEvent):
    kind: ClassVar[str] = "planned"
    revision: int = 1
    plan: dict[str, Any] = dataclasses.field(default_factory=dict)
    released: list[str] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        return f"planned (revision {self.revision})"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ObjectiveReplanned(FlowEvent):
    kind: ClassVar[str] = "objective_replanned"
    revision: int = 1
    task_fingerprint: str = ""
    released: list[str] = dataclasses.field(default_factory=list)


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LeaderboardDeclared(FlowEvent):
    """The metric a run ranks by, and whether the runtime measures it (else claims rank)."""

    kind: ClassVar[str] = "leaderboard_declared"
    metric: str | None = None
    direction: str | None = None
    measured_by_runtime: bool = False
    command: str | None = None  # what the runtime measures with


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CandidateSubmitted(FlowEvent):
    kind: ClassVar[str] = "candidate_submitted"
    report_id: str = ""
    metric: str = ""
    direction: str = ""
    claimed: float = 0.0
    measured: float | None = None
    verified: bool = False
    ranked: bool = True
    unverified_reason: str | None = None

    def describe(self) -> str:
        v = "verified" if self.verified else f"unverified ({self.unverified_reason})"
        return f"submitted {self.metric}={self.claimed} {v}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CandidateBestUpdated(FlowEvent):
    kind: ClassVar[str] = "candidate_best_updated"
    report_id: str = ""
    metric: str = ""
    direction: str = ""
    value: float | None = None

    def describe(self) -> str:
        return f"new best {self.metric} = {self.value} ({self.report_id})"


# ---- parallel_flame_chase:git_pr: pull requests, merges, publication ---------------------------
# (Every built-in kind lives in this one module, so that the views know them all: hence its
# length.)


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CentralReady(FlowEvent):
    """The central repository holds the source's baseline commit on main."""

    kind: ClassVar[str] = "central_ready"
    commit: str = ""
    files: int = 0
    allowed: list[str] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        return f"central repository seeded: {self.files} files at {self.commit[:12]}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class MainMeasured(FlowEvent):
    """The runtime measured main (the baseline at the start): what candidates must beat."""

    kind: ClassVar[str] = "main_measured"
    commit: str = ""
    value: float | None = None
    error: str | None = None

    def describe(self) -> str:
        got = f"{self.value:g}" if self.value is not None else f"no value ({self.error})"
        return f"main {self.commit[:12]} measured: {got}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PushRefused(FlowEvent):
    """A lane's push did not get through the central repository's hook."""

    kind: ClassVar[str] = "push_refused"
    ref: str = ""
    reason: str = ""

    def describe(self) -> str:
        return f"push to {self.ref} refused: {self.reason[:160]}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PrOpened(FlowEvent):
    kind: ClassVar[str] = "pr_opened"
    pr: str = ""
    branch: str = ""
    head: str = ""
    title: str = ""

    def describe(self) -> str:
        return f"{self.pr} opened from {self.branch}: {self.title[:120]}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PrRequestRefused(FlowEvent):
    """A `flamechase pr` request the runtime did not carry out, and why."""

    kind: ClassVar[str] = "pr_request_refused"
    op: str = ""
    reason: str = ""

    def describe(self) -> str:
        return f"pr {self.op or 'request'} refused: {self.reason[:160]}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PrReady(FlowEvent):
    """The runtime measured a PR's head in a clean checkout: the PR is ready, with a receipt."""

    kind: ClassVar[str] = "pr_ready"
    pr: str = ""
    commit: str = ""
    value: float | None = None
    main_value: float | None = None

    def describe(self) -> str:
        return f"{self.pr} ready: measured {self.value} at {self.commit[:12]}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PrReviewing(FlowEvent):
    """The best ready PR beats main: the runtime integrates it."""

    kind: ClassVar[str] = "pr_reviewing"
    pr: str = ""
    value: float | None = None
    main_value: float | None = None

    def describe(self) -> str:
        return f"{self.pr} selected for integration ({self.value} vs main {self.main_value})"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PrMerged(FlowEvent):
    kind: ClassVar[str] = "pr_merged"
    pr: str = ""
    merge: str = ""
    value: float | None = None
    prior: float | None = None
    remeasured: bool = False  # the merge with a main that had moved was measured again

    def describe(self) -> str:
        return f"{self.pr} merged into main at {self.merge[:12]}: {self.prior} -> {self.value}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PrRejected(FlowEvent):
    kind: ClassVar[str] = "pr_rejected"
    pr: str = ""
    reason: str = ""

    def describe(self) -> str:
        return f"{self.pr} rejected: {self.reason[:160]}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class MainPublished(FlowEvent):
    """Main's changed paths were written into the source tree (and committed, in git)."""

    kind: ClassVar[str] = "main_published"
    commit: str = ""
    paths: int = 0
    source_commit: str | None = None

    def describe(self) -> str:
        return f"main {self.commit[:12]} published to the source ({self.paths} paths)"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PublicationHeld(FlowEvent):
    """Publication into the source stopped (a path edited outside the run); it is retried."""

    kind: ClassVar[str] = "publication_held"
    commit: str = ""
    reason: str = ""

    def describe(self) -> str:
        return f"publication of {self.commit[:12]} held: {self.reason[:160]}"


# ---- parrallello: fronts, blocks, rounds, gates and verdicts --------------------------------
# The runtime plays the lead: every decision it takes is one of these, journaled with its
# figures, so `status`, the live view and the replay show where each front stands.


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FrontsPlanned(FlowEvent):
    kind: ClassVar[str] = "fronts_planned"
    source: str = ""  # "file" (the path) or "planner"
    fronts: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    blocks: int = 3
    rounds_per_block: int = 3

    def describe(self) -> str:
        return f"{len(self.fronts)} front(s) planned ({self.source})"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointMade(FlowEvent):
    kind: ClassVar[str] = "checkpoint_made"
    tag: str | None = None
    commit: str | None = None
    skipped: str | None = None
    error: str | None = None

    def describe(self) -> str:
        if self.tag:
            return f"checkpoint {self.tag} at {str(self.commit)[:12]}"
        return f"no checkpoint: {self.skipped or self.error}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FrontPrepped(FlowEvent):
    kind: ClassVar[str] = "front_prepped"
    front: str = ""
    ok: bool = True
    tickets: int = 0
    error: str | None = None

    def describe(self) -> str:
        return (f"{self.front} prepped: {self.tickets} first ticket(s)" if self.ok
                else f"{self.front} prep failed: {self.error}")


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FrontStarted(FlowEvent):
    kind: ClassVar[str] = "front_started"
    front: str = ""
    wave: int = 1
    frozen: dict[str, str] = dataclasses.field(default_factory=dict)
    baseline: str = ""
    tickets: int = 0
    staged: int = 0

    def describe(self) -> str:
        return (f"{self.front} starts (wave {self.wave}): baseline {self.baseline}, "
                f"{self.tickets} ticket(s), {len(self.frozen)} gate file(s) frozen")


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RoundStarted(FlowEvent):
    kind: ClassVar[str] = "round_started"
    front: str = ""
    block: int = 1
    round: int = 1
    in_block: int = 1
    builders: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    paced: bool = False
    ceiling: int = 0

    def describe(self) -> str:
        who = ", ".join(f"{o} ({len(t)})" for o, t in self.builders.items()) or "critic only"
        return f"{self.front} round {self.round} (block {self.block}): {who}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BuilderChecked(FlowEvent):
    kind: ClassVar[str] = "builder_checked"
    front: str = ""
    round: int = 0
    owner: str = ""
    accepted: int = 0
    outside: list[str] = dataclasses.field(default_factory=list)
    frozen: list[str] = dataclasses.field(default_factory=list)
    failed_tickets: list[str] = dataclasses.field(default_factory=list)
    error: str | None = None

    def describe(self) -> str:
        text = f"{self.front}.{self.owner} round {self.round}: {self.accepted} file(s) taken"
        if self.outside:
            text += f", {len(self.outside)} outside its files reverted"
        if self.frozen:
            text += f", GATE TOUCHED ({', '.join(self.frozen[:3])})"
        return text


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GateRan(FlowEvent):
    kind: ClassVar[str] = "gate_ran"
    front: str = ""
    round: int = 0
    stage: str = "round"  # baseline | round | recheck
    passed: bool = False
    reason: str | None = None
    detail: str = ""
    n: int = 0
    m: int = 0
    failing: list[str] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        word = "PASS" if self.passed else f"FAIL ({self.reason})" if self.reason else "FAIL"
        return f"{self.front} gate --full ({self.stage}): {self.n}/{self.m} {word}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GateRefrozen(FlowEvent):
    kind: ClassVar[str] = "gate_refrozen"
    front: str = ""
    round: int = 0
    changes: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    files: list[str] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        return (f"{self.front} gate changed in review and frozen again "
                f"({len(self.files)} file(s))")


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class VerdictRecorded(FlowEvent):
    kind: ClassVar[str] = "verdict_recorded"
    front: str = ""
    block: int = 1
    round: int = 1
    approved: bool = False
    majors: int = 0
    mediums: int = 0
    minors: int = 0
    gate: str = ""
    critic_approve: bool | None = None
    mismatch: str | None = None
    reasons: list[str] = dataclasses.field(default_factory=list)
    tickets: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    summary: str = ""
    progress: float = 0.0
    overall: float = 0.0

    def describe(self) -> str:
        word = "APPROVED" if self.approved else "not approved"
        return (f"{self.front} round {self.round}: {word} (M{self.majors} m{self.mediums} "
                f"n{self.minors}, gate {self.gate})")


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BlockEnded(FlowEvent):
    kind: ClassVar[str] = "block_ended"
    front: str = ""
    block: int = 1
    rounds: int = 0
    approved: bool = False
    spend: dict[str, Any] = dataclasses.field(default_factory=dict)
    share: float = 0.0
    paced_next: bool = False

    def describe(self) -> str:
        return (f"{self.front} block {self.block} ends after {self.rounds} round(s), "
                f"{self.share:.1%} of a budget" + ("; next block paced" if self.paced_next
                                                  else ""))


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FrontEnded(FlowEvent):
    kind: ClassVar[str] = "front_ended"
    front: str = ""
    status: str = ""  # approved | not_approved | blocked | stopped
    rounds: int = 0
    open_tickets: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    reason: str = ""
    progress: float = 0.0
    overall: float = 0.0

    def describe(self) -> str:
        return f"{self.front} {self.status.replace('_', ' ')}: {self.reason}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FrontIntegrated(FlowEvent):
    kind: ClassVar[str] = "front_integrated"
    front: str = ""
    files: int = 0
    commit: str | None = None
    error: str | None = None

    def describe(self) -> str:
        if self.error:
            return f"{self.front} NOT integrated: {self.error}"
        return f"{self.front} integrated into the source: {self.files} file(s)"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Anomaly(FlowEvent):
    """Something the runtime-as-lead noticed and acted on (the seed's anomaly playbook)."""

    kind: ClassVar[str] = "anomaly"
    front: str = ""
    round: int = 0
    what: str = ""
    detail: str = ""

    def describe(self) -> str:
        return f"anomaly {self.what} in {self.front or 'the run'}: {self.detail[:160]}"
