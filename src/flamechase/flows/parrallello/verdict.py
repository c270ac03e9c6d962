"""What builders, critics, prep agents and planners end their turns with, and the approval rule.

The critic's verdict is advice: the runtime recounts its findings, adds what it saw itself
(an edit outside a builder's files, a touched gate) and approves only with 0 majors,
0 mediums and every gate PASS. A critic that says `approve` against the rule is recorded as a
`critic-rule-mismatch` anomaly; the rule stands either way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "BuilderResult",
    "Finding",
    "GateChange",
    "Judgement",
    "PrepResult",
    "Proof",
    "TicketIn",
    "Verdict",
    "judge",
]

Severity = Literal["major", "medium", "minor"]
HANDOFF_LINES = 15


HANDOFF_CHARS = 3000


def _handoff(text: object) -> object:
    """A handoff note cut to its limit (its first 15 lines, 3000 characters): the next round
    never reads more, and a long note is not worth sending a finished builder back to repair
    its result (its first lines, which the brief asks to be the important ones, are kept)."""
    if not isinstance(text, str):
        return text  # the field's own type check refuses it
    lines = text.strip().splitlines()[:HANDOFF_LINES]
    return "\n".join(lines)[:HANDOFF_CHARS].strip()


class TicketIn(BaseModel):
    """A ticket as a critic, prep agent or plan writes it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9_.:-]+$")
    severity: Severity
    title: str = Field(min_length=1, max_length=300)
    detail: str = Field(default="", max_length=4000)
    owner: str | None = Field(default=None, max_length=40)
    files: tuple[str, ...] = Field(default=(), max_length=50)
    gate: str | None = Field(default=None, max_length=200)  # the gate item that closes it


class Finding(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=1, max_length=80)
    severity: Severity
    title: str = Field(min_length=1, max_length=300)
    evidence: str = Field(default="", max_length=4000)
    file: str | None = Field(default=None, max_length=500)
    owner: str | None = Field(default=None, max_length=40)
    fix: str = Field(default="", max_length=2000)


class Counts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    majors: int = Field(ge=0)
    mediums: int = Field(ge=0)
    minors: int = Field(ge=0)


class Review(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    ticket_id: str = Field(min_length=1, max_length=80)
    outcome: Literal["confirmed_fixed", "not_fixed", "dispute_upheld", "dispute_rejected"]


RECALIBRATION_REASONS = (
    "resolution",  # the metric cannot resolve the target
    "noise",  # run-to-run noise larger than the margin
    "denominator",  # the ratio's denominator is wrong
    "clock-contention",  # the clock measures the machine's contention, not the code
    "reference-fails-gate",  # the reference itself fails the gate
)


class Proof(BaseModel):
    """A recalibration's proof: one of the five reasons, the measurement that shows it, and
    its date. The runtime refuses a recalibration without one (a text is not a proof)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    reason: Literal[
        "resolution", "noise", "denominator", "clock-contention", "reference-fails-gate"
    ]
    measurement: str = Field(min_length=8, max_length=2000)
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")


class GateChange(BaseModel):
    """Why the critic changed the gate: new items it measured (dated in the script) or
    stricter targets (`add_items`, taken at once), or a recalibration with its proof (new
    `targets` for the items it names, items it `removes`; taken from the next block on)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["add_items", "recalibrate"]
    items: tuple[str, ...] = Field(min_length=1, max_length=100)
    reason: str = Field(min_length=1, max_length=2000)
    # Checked by the runtime (`Proof`), not here: a bad proof refuses the change, recorded,
    # and never makes the whole verdict invalid.
    proof: dict[str, Any] | str = Field(default="")
    targets: dict[str, str | float | bool] = Field(default_factory=dict, max_length=100)
    removes: tuple[str, ...] = Field(default=(), max_length=100)


class Verdict(BaseModel):
    """The critic's turn result."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    findings: tuple[Finding, ...] = Field(default=(), max_length=40)
    tickets: tuple[TicketIn, ...] = Field(default=(), max_length=8)
    counts: Counts | None = None
    approve: bool
    tickets_review: tuple[Review, ...] = Field(default=(), max_length=40)
    gate_changes: tuple[GateChange, ...] = Field(default=(), max_length=10)
    summary: str = Field(min_length=1, max_length=2000)


class Claim(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=1, max_length=80)
    status: Literal["claimed_fixed", "disputed", "not_done"]
    evidence: str = Field(default="", max_length=2000)


class BuilderResult(BaseModel):
    """A builder's turn result: what it claims about each ticket, and its handoff note."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    tickets: tuple[Claim, ...] = Field(default=(), max_length=8)
    handoff: str = Field(min_length=1, max_length=HANDOFF_CHARS)
    files_touched: tuple[str, ...] = Field(default=(), max_length=500)
    quick_gate: str = Field(default="", max_length=300)

    _note = field_validator("handoff", mode="before")(_handoff)


class PrepResult(BaseModel):
    """A one-pass prep agent's result: the front's first tickets and a handoff note (the gate,
    baseline and conflict-free code it staged are files in its place)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    tickets: tuple[TicketIn, ...] = Field(default=(), max_length=8)
    handoff: str = Field(min_length=1, max_length=HANDOFF_CHARS)
    baseline: str = Field(default="", max_length=300)

    _note = field_validator("handoff", mode="before")(_handoff)


@dataclasses.dataclass(frozen=True, slots=True)
class Judgement:
    approved: bool
    majors: int
    mediums: int
    minors: int
    gate_pass: bool
    critic_approve: bool | None
    mismatch: str | None  # the critic's own word against the rule, if it was
    reasons: tuple[str, ...]


def judge(
    verdict: Verdict | None,
    gate_pass: bool,
    extra: Sequence[Finding] = (),
    *,
    missing: str | None = None,
) -> Judgement:
    """The approval rule: 0 majors, 0 mediums (recounted) and every gate PASS.

    `extra`: findings the runtime made itself this round; `missing`: why there is no verdict
    (a critic that failed twice): never approved.
    """
    found = [*(verdict.findings if verdict else ()), *extra]
    majors = sum(1 for f in found if f.severity == "major")
    mediums = sum(1 for f in found if f.severity == "medium")
    minors = sum(1 for f in found if f.severity == "minor")
    approved = verdict is not None and majors == 0 and mediums == 0 and gate_pass
    reasons = []
    if missing:
        reasons.append(missing)
    if majors or mediums:
        reasons.append(f"{majors} major, {mediums} medium finding(s)")
    if not gate_pass:
        reasons.append("a gate does not PASS")
    mismatch = None
    if verdict is not None:
        declared = verdict.counts
        if declared is not None and (declared.majors, declared.mediums, declared.minors) != (
            majors - _count(extra, "major"),
            mediums - _count(extra, "medium"),
            minors - _count(extra, "minor"),
        ):
            mismatch = (
                f"the critic declared {declared.majors}/{declared.mediums}/"
                f"{declared.minors} majors/mediums/minors, its findings say otherwise"
            )
        elif verdict.approve != approved:
            mismatch = (
                f"the critic said approve={str(verdict.approve).lower()}, the rule "
                f"says {'approved' if approved else 'not approved'}"
            )
    return Judgement(
        approved=approved,
        majors=majors,
        mediums=mediums,
        minors=minors,
        gate_pass=gate_pass,
        critic_approve=verdict.approve if verdict else None,
        mismatch=mismatch,
        reasons=tuple(reasons),
    )


def _count(found: Sequence[Finding], severity: str) -> int:
    return sum(1 for f in found if f.severity == severity)
