"""parrallello: fronts, blocks, rounds, gates and verdicts."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from flamechase.events import FlowEvent, register

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
        return (
            f"{self.front} prepped: {self.tickets} first ticket(s)"
            if self.ok
            else f"{self.front} prep failed: {self.error}"
        )


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
        return (
            f"{self.front} starts (wave {self.wave}): baseline {self.baseline}, "
            f"{self.tickets} ticket(s), {len(self.frozen)} gate file(s) frozen"
        )


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
        return f"{self.front} gate changed in review and frozen again ({len(self.files)} file(s))"


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
        return (
            f"{self.front} round {self.round}: {word} (M{self.majors} m{self.mediums} "
            f"n{self.minors}, gate {self.gate})"
        )


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
        return (
            f"{self.front} block {self.block} ends after {self.rounds} round(s), "
            f"{self.share:.1%} of a budget" + ("; next block paced" if self.paced_next else "")
        )


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
