"""parrallello: fronts, blocks, rounds, gates and verdicts."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from flamechase.events import FlowEvent, register
from flamechase.events.present import Mark, Seen, Shown, clip, plural
from flamechase.flows.parrallello.words import (
    bar,
    ended_week,
    findings,
    front_row,
    ids,
    pct,
    proofs,
    stopped_at,
)

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
        return f"{plural(len(self.fronts), 'front')} planned ({self.source})"

    def show(self, seen: Seen) -> Shown:
        fronts = [f for f in self.fronts if isinstance(f, Mapping)]
        waves = sorted({int(f.get("wave", 1)) for f in fronts})
        by = "The planner plans" if self.source == "planner" else "The plan file sets"
        return Shown(
            f"{by} {plural(len(fronts), 'front')} ({ids(fronts, 8)}) in "
            f"{plural(len(waves), 'wave')}; at most {plural(self.blocks, 'block')} of "
            f"{plural(self.rounds_per_block, 'round')} each.",
            "plan",
            rows=tuple(
                front_row(str(f.get("id")), wave=int(f.get("wave", 1)), state="planned")
                for f in fronts
            ),
        )


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

    def show(self, seen: Seen) -> Shown:
        if self.tag:
            return Shown(
                f"Checkpoint of your tree: tag {self.tag} at {str(self.commit)[:12]} "
                "(never pushed).",
                "info",
            )
        return Shown(f"No checkpoint of your tree: {self.skipped or self.error}.", "warn")


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

    def show(self, seen: Seen) -> Shown:
        if self.ok:
            return Shown(
                f"Front {self.front} is staged in one pass: "
                f"{plural(self.tickets, 'first ticket')}.",
                "plan",
            )
        return Shown(f"Front {self.front}: staging failed ({self.error}); it starts cold.", "warn")


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

    def show(self, seen: Seen) -> Shown:
        return Shown(
            f"Front {self.front} opens (wave {self.wave}): its gate frozen "
            f"({plural(len(self.frozen), 'file')}), baseline {self.baseline}, "
            f"{plural(self.tickets, 'ticket')}.",
            "run",
            rows=(front_row(self.front, wave=self.wave, state="open", tickets=self.tickets),),
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

    def show(self, seen: Seen) -> Shown:
        work = "; ".join(f"{o}: {ids(t)}" for o, t in self.builders.items())
        paced = f", paced (ceiling {self.ceiling})" if self.paced else ""
        return Shown(
            f"Front {self.front}, round {self.round} (block {self.block}, round "
            f"{self.in_block} of the block){paced}: {work or 'no tickets: review only'}.",
            "turn",
            mark=Mark(f"round {self.round}"),
            rows=(front_row(self.front, state="in round", block=self.block, round=self.round),),
        )


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
            text += f", the frozen gate edited ({', '.join(self.frozen[:3])})"
        return text

    def show(self, seen: Seen) -> Shown:
        text = (
            f"Front {self.front}, round {self.round}: builder {self.owner}'s "
            f"{plural(self.accepted, 'file')} taken"
        )
        if self.frozen:
            return Shown(
                text + f"; it edited the frozen gate ({ids(self.frozen)}): the round's work "
                "is refused.",
                "fail",
            )
        if self.outside:
            return Shown(
                text + f"; edits outside its files reverted ({ids(self.outside)}), "
                f"ticket(s) failed: {ids(self.failed_tickets) or 'none'}.",
                "fail",
            )
        return Shown(text + ".", "info")


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

    def show(self, seen: Seen) -> Shown:
        word = "PASS" if self.passed else "FAIL"
        why = f" — fails closed: {self.reason} ({self.detail})" if self.reason else ""
        failing = f"; failing {ids(self.failing)}" if self.failing else ""
        stage = {"baseline": "baseline", "recheck": "recheck"}.get(
            self.stage, f"round {self.round}"
        )
        return Shown(
            f"Front {self.front} gate --full, {stage}, run by the runtime: SUMMARY "
            f"{self.n}/{self.m} {word}{why}{failing}.",
            "info" if self.passed else "warn",
            mark=Mark(f"gate {self.n}/{self.m}", "good" if self.passed else "bad"),
            rows=(front_row(self.front, gate=f"{self.n}/{self.m} {word}"),),
        )


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

    def show(self, seen: Seen) -> Shown:
        why = "; ".join(
            f"{c.get('kind')}: {c.get('reason')}" for c in self.changes if isinstance(c, Mapping)
        )
        return Shown(
            f"Front {self.front}'s gate changed in review and is frozen again ({why}).", "plan"
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RecalibrationProven(FlowEvent):
    """A critic's recalibration with its proof, tried and accepted; taken at the block's end
    (the round that proposed it is judged on the gate as it was)."""

    kind: ClassVar[str] = "recalibration_proven"
    front: str = ""
    round: int = 0
    block: int = 1
    changes: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    gate: str = ""

    def describe(self) -> str:
        return f"{self.front} recalibration proven in round {self.round}: {proofs(self.changes)}"

    def show(self, seen: Seen) -> Shown:
        return Shown(
            f"Front {self.front}'s gate is recalibrated with proof in round {self.round} "
            f"({proofs(self.changes)}); it applies once block {self.block} ends "
            f"(its trial: {self.gate}).",
            "plan",
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LeadDecided(FlowEvent):
    """The decision for a front's next block: the lead's, or the runtime's rules'."""

    kind: ClassVar[str] = "lead_decided"
    front: str = ""
    block: int = 1
    source: str = "rules"  # lead | user (-p lead_decision) | rules
    items: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    tickets: list[str] = dataclasses.field(default_factory=list)
    note: str = ""
    split: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    def describe(self) -> str:
        return (
            f"{self.front} block {self.block} decided by the {self.source}: {clip(self.note, 120)}"
        )

    def show(self, seen: Seen) -> Shown:
        who = "The lead decides" if self.source == "lead" else "The runtime's rules decide"
        who = "Your decision (-p lead_decision) decides" if self.source == "user" else who
        calls = ", ".join(
            f"{c.get('id')} {c.get('call')}" for c in self.items if isinstance(c, Mapping)
        )
        return Shown(
            f"{who} front {self.front}'s block {self.block}"
            + (f" ({calls})" if calls else "")
            + (
                "; the front's files are split: "
                + "; ".join(f"{o} {', '.join(g)}" for o, g in self.split.items())
                if self.split
                else ""
            )
            + f"; tickets: {ids(self.tickets) or 'none'}; note: {clip(self.note, 300)}",
            "plan",
        )


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
    refused: str | None = None  # the round's work was refused (a builder edited the gate)
    last_round: bool = False  # the front's ceiling: no round follows an unapproved verdict
    tally: str = ""  # every front has ended: how many were approved, said instead of a bar

    def describe(self) -> str:
        word = "APPROVED" if self.approved else "not approved"
        return f"{self.front} round {self.round}: {word} ({findings(self)}, gate {self.gate})"

    def show(self, seen: Seen) -> Shown:
        word = "APPROVED" if self.approved else "not approved"
        # The counts follow; a reason that only restates them is not said twice, and a
        # refused round's gate never ran, so "a gate does not PASS" would be a guess.
        said = [r for r in self.reasons if not r.endswith("finding(s)")]
        if self.refused:
            word = "REFUSED"
            said = [self.refused, "nothing of it taken, its gate not run"]
        why = f" ({'; '.join(said)})" if said else ""
        if self.last_round and not self.approved:
            where = "The front's last round (its ceiling)"
        else:
            where = f"{bar(self.progress)} this front"
        return Shown(
            f"Front {self.front}, round {self.round}: {word}{why} — {findings(self)}; "
            f"gate {self.gate}; next tickets: {ids(self.tickets) or 'none'}. {where} · "
            f"{self.tally or bar(self.overall) + ' all fronts'}",
            "best" if self.approved else "fail" if self.refused else "end",
            mark=Mark(
                "approved" if self.approved else "refused" if self.refused else "verdict",
                "good" if self.approved else "bad" if self.refused else "info",
            ),
            rows=(
                front_row(
                    self.front,
                    verdict=f"{word.lower() if self.refused else word}: {findings(self)}",
                    progress=pct(self.progress),
                ),
            ),
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
    week: float | None = None  # the share of the account's week it spent, when read

    def _week(self) -> str:
        return f", {self.week:.1%} of the week" if self.week is not None else ""

    def describe(self) -> str:
        return (
            f"{self.front} block {self.block} ends after {plural(self.rounds, 'round')}, "
            f"{self.share:.1%} of a budget{self._week()}"
            + ("; next block paced" if self.paced_next else "")
        )

    def show(self, seen: Seen) -> Shown:
        paced = "; the next block is paced" if self.paced_next else ""
        return Shown(
            f"Front {self.front}, block {self.block} ends after "
            f"{plural(self.rounds, 'round')}, {self.share:.1%} of a budget{self._week()}{paced}.",
            "info",
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
    block: int = 0  # the block it stopped in (0: it never opened)
    blocks: int = 0  # the plan's ceiling
    tree: str = ""  # where its work stays (the front's tree under the run directory)
    tally: str = ""  # every front has ended: how many were approved, said instead of a bar
    week: float | None = None  # the share of the week its blocks spent, where read (weeks)
    week_whole: bool = True  # False: a block of it went unread ("at least")

    def describe(self) -> str:
        return f"{self.front} {self.status.replace('_', ' ')}: {self.reason}{ended_week(self)}"

    def show(self, seen: Seen) -> Shown:
        tail = f"; open: {ids(self.open_tickets)}" if self.open_tickets else ""
        word = self.status.replace("_", " ")
        why = "" if self.reason.startswith(self.status) else f": {self.reason}"
        whole = self.tally or f"{bar(self.overall)} all"
        if self.status == "approved":
            where = f"{bar(self.progress)} this front · {whole}"
        else:  # where it stopped, not a near-done percentage
            where = f"{stopped_at(self.rounds, self.block, self.blocks, self.tree)} · {whole}"
        return Shown(
            f"Front {self.front} {word.upper()} after {plural(self.rounds, 'round')}"
            f"{why}{tail}{ended_week(self)}. {where}",
            "best" if self.status == "approved" else "fail",
            mark=Mark(word, "good" if self.status == "approved" else "bad"),
            rows=(
                front_row(
                    self.front,
                    state=word,
                    progress=pct(self.progress)
                    if self.status == "approved"
                    else f"stopped at round {self.rounds}",
                    **({"work": self.tree} if self.tree and self.status != "approved" else {}),
                ),
            ),
        )


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

    def show(self, seen: Seen) -> Shown:
        if self.error:
            return Shown(f"Front {self.front} could not be integrated: {self.error}.", "fail")
        commit = f", commit {str(self.commit)[:12]}" if self.commit else ""
        return Shown(
            f"Front {self.front} lands in your tree: {plural(self.files, 'file')}{commit}.",
            "report",
            rows=(front_row(self.front, state="integrated"),),
        )


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

    def show(self, seen: Seen) -> Shown:
        where = f"front {self.front}, round {self.round}" if self.front else "the run"
        text = f"Anomaly in {where}: {self.what} — {clip(self.detail, 300)}."
        return Shown(text, "warn", mark=Mark(self.what, "bad"), alert=text)
