"""The run: created, resumed, running, stopping, ended; budgets and notices."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from flamechase.events.base import Event, register
from flamechase.events.present import Seen, Shown, and_, clip, money, plural


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

    def show(self, seen: Seen) -> Shown:
        lanes = list(self.lanes) or list(seen.lane_names())
        count = f" with {plural(len(lanes), 'lane')} ({', '.join(lanes)})" if lanes else ""
        return Shown(
            f"Run created: {self.flow or seen.flow}{count}; {budget_words(self.budget)}.", "run"
        )


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
        return (
            f"run resumed (session {self.session}); "
            f"{budget_words(self.budget, self.budget_from, self.spent)}"
        )

    def show(self, seen: Seen) -> Shown:
        changed = self.changed_agents or {}
        extra = f"; new agents for {and_(sorted(changed))}" if changed else ""
        return Shown(f"Run resumed (session {self.session}){extra}.", "run")


def budget_words(
    budget: Mapping[str, Any],
    origin: Mapping[str, str] | None = None,
    spent: Mapping[str, Any] | None = None,
) -> str:
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
    message: str = ""  # the line every view shows
    # The whole of a long notice, which `status --verbose` shows instead (engine/notices.py).
    detail: str = ""

    def describe(self) -> str:
        return self.message

    def show(self, seen: Seen) -> Shown:
        more = "; `flamechase status --verbose` for the rest" if self.detail else ""
        return Shown(f"Notice: {clip(self.message, 400)}{more}", "warn")


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ObjectiveRevised(Event):
    """TASK.md changed between sessions; the run goes on toward the new text."""

    kind: ClassVar[str] = "objective_revised"
    task_fingerprint: str = ""
    objective: str = ""

    def describe(self) -> str:
        return "the objective was revised (TASK.md changed)"

    def show(self, seen: Seen) -> Shown:
        return Shown(
            "The objective changed (TASK.md was revised); the run goes on toward it.", "plan"
        )


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
    # What the place is, in the flow's words (`MakePlace(label=...)`): "lane-2's private copy".
    label: str = ""

    def describe(self) -> str:
        text = f"{self.how} {self.place} made at {self.path}"
        if self.how == "overlay":
            text += f" ({len(self.changed)} changed, {len(self.deleted)} deleted)"
        return text

    def show(self, seen: Seen) -> Shown:
        what = seen.place_words(self.place)
        text = f"The runtime makes {what}"
        if self.how == "overlay":
            text += f" ({len(self.changed)} file(s) laid over, {len(self.deleted)} deleted)"
        return Shown(text + ".", "info")


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PlaceDropped(Event):
    kind: ClassVar[str] = "place_dropped"
    place: str = ""

    def describe(self) -> str:
        return f"{self.place} removed"

    def show(self, seen: Seen) -> Shown:
        return Shown(f"The runtime removes {seen.place_words(self.place)}.", "info")


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

    def show(self, seen: Seen) -> Shown:
        if self.error:
            return Shown(
                f"The runtime could not freeze files of {seen.place_words(self.place)}: "
                f"{clip(self.error, 200)}.",
                "warn",
            )
        names = sorted(self.files)
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        return Shown(
            f"The runtime freezes {plural(len(names), 'file')} ({shown or 'none'}) of "
            f"{seen.place_words(self.place)}, hashed and kept where no agent writes.",
            "info",
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunRunning(Event):
    kind: ClassVar[str] = "run_running"
    lanes: list[str] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        return "running"

    def show(self, seen: Seen) -> Shown:
        lanes = [str(x) for x in self.lanes] or list(seen.lane_names())
        return Shown(f"Lanes start: {and_(lanes)}." if lanes else "The run starts.", "run")


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
        # The way out first: a terminal of 80 columns cuts the line after the time before it.
        them = "it" if n == 1 else "they"
        return f"stopping: Ctrl-C again cuts the {turns}, or {them} will finish and be recorded"

    def show(self, seen: Seen) -> Shown:
        return Shown(self.describe()[0].upper() + self.describe()[1:] + ".", "warn")


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BudgetSpent(Event):
    kind: ClassVar[str] = "budget_spent"
    key: str = ""
    budget: dict[str, Any] = dataclasses.field(default_factory=dict)

    def describe(self) -> str:
        return f"budget {self.key} spent; no new turns"

    def show(self, seen: Seen) -> Shown:
        return Shown(f"Budget {self.key} is spent: no new turns start.", "warn")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunEnded(Event):
    """The last event of an engine session (each kind names how it ended)."""

    message: str = ""
    budget: dict[str, Any] = dataclasses.field(default_factory=dict)
    valid_turns: int | None = None
    # Every counted turn was invalid: the run failed for its agents, not for its budget or its
    # flow (engine/rerun.py gives the way out from this, not from the message's words).
    all_turns_failed: bool = False
    # A held run the same command picks up again (`FinishRun.resumes`; engine/rerun.py).
    resumes: bool = False

    @property
    def status(self) -> str:
        return self.kind.removeprefix("run_")

    def describe(self) -> str:
        return f"run {self.status}: {self.message}"

    def show(self, seen: Seen) -> Shown:
        return Shown(
            f"Run {self.status}: {clip(self.message, 300)}. Spent {money(seen.cost)} over "
            f"{plural(seen.turns, 'turn')}.",
            "run",
        )


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


END_KINDS: frozenset[str] = frozenset(c.kind for c in (RunFinished, RunStopped, RunFailed, RunHeld))
