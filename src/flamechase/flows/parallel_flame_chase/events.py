"""parallel_flame_chase's planning and the leaderboard."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from flamechase.events import FlowEvent, register


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
        return f"planning attempt {self.attempt}: {self.status}" + (
            f" ({self.error})" if self.error else ""
        )


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
