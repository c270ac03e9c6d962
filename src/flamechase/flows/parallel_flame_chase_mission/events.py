"""parallel_flame_chase_mission's event kinds (missions, audits, the integration queue), and
how every view shows them: a line on the timeline, and a row of the `missions`, `audits` or
`integration` panel (status, the live view and the replay draw the same rows)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from flamechase.events import FlowEvent, register
from flamechase.events.present import Cell, Row, Seen, Shown, and_, clip


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class MissionMoved(FlowEvent):
    """A mission changed state (its `at` is when; from, to and why are here)."""

    kind: ClassVar[str] = "mission_moved"
    mission_id: str = ""
    title: str = ""
    from_status: str | None = None
    to_status: str = ""
    why: str = ""
    origin: str = "plan"
    deadline_at: float | None = None

    def describe(self) -> str:
        return f"mission {self.mission_id} {self.from_status or 'new'} -> {self.to_status}"

    def show(self, seen: Seen) -> Shown:
        was = f"{self.from_status} → " if self.from_status else ""
        tag = {"rejected": "warn", "blocked": "warn", "accepted": "best"}.get(self.to_status)
        return Shown(
            f"{self.lane}'s mission {self.mission_id} “{clip(self.title, 80)}”: "
            f"{was}{self.to_status} ({clip(self.why, 160)}).",
            tag or "plan",  # type: ignore[arg-type]
            rows=(
                Row(
                    "missions",
                    self.lane or "",
                    {
                        "mission": self.mission_id,
                        "title": clip(self.title, 60),
                        "state": self.to_status,
                        "why": clip(self.why, 80),
                    },
                ),
            ),
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AuditTriggered(FlowEvent):
    """A trigger the clock raised (a passed deadline, the periodic global review): the flow
    folds it into the open audit, or opens one."""

    kind: ClassVar[str] = "audit_triggered"
    trigger_id: str = ""
    trigger_kind: str = ""
    scope: str = "targeted"
    mission_id: str | None = None
    why: str = ""

    def show(self, seen: Seen) -> Shown:
        where = f" on {self.lane}" if self.lane else ""
        return Shown(f"Audit trigger {self.trigger_kind}{where}: {clip(self.why, 160)}.", "warn")


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AuditOpened(FlowEvent):
    """An audit opened, or an open one took in a new trigger (its revision is bumped)."""

    kind: ClassVar[str] = "audit_opened"
    audit_id: str = ""
    scope: str = "targeted"
    targets: list[str] = dataclasses.field(default_factory=list)
    revision: int = 1
    trigger_kind: str = ""
    why: str = ""

    def describe(self) -> str:
        return f"audit {self.audit_id} r{self.revision} ({self.scope}: {self.trigger_kind})"

    def show(self, seen: Seen) -> Shown:
        how = "opens" if self.revision == 1 else f"widens (revision {self.revision})"
        return Shown(
            f"Audit {self.audit_id} {how}: {self.scope}, pausing {and_(self.targets)} "
            f"({self.trigger_kind}: {clip(self.why, 160)}).",
            "warn",
            rows=(
                _audit_row(
                    self.audit_id,
                    self.revision,
                    self.scope,
                    self.targets,
                    "quiescing",
                    trigger=f"{self.trigger_kind}: {clip(self.why, 80)}",
                ),
            ),
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AuditDeciding(FlowEvent):
    """Every target is quiet: a fresh coordinator session decides, in its own snapshot."""

    kind: ClassVar[str] = "audit_deciding"
    audit_id: str = ""
    revision: int = 1
    targets: list[str] = dataclasses.field(default_factory=list)
    scope: str = "targeted"

    def show(self, seen: Seen) -> Shown:
        return Shown(
            f"Audit {self.audit_id} (revision {self.revision}): {and_(self.targets)} quiet; a "
            "fresh coordinator session decides.",
            "turn",
            phase="auditing",
            rows=(_audit_row(self.audit_id, self.revision, self.scope, self.targets, "deciding"),),
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class DecisionRefused(FlowEvent):
    """A coordinator session ended without a valid decision (after its repairs): nothing is
    applied, the targets stay paused, a fresh session tries after `retry_at`."""

    kind: ClassVar[str] = "decision_refused"
    audit_id: str = ""
    revision: int = 1
    session: int = 1
    error: str = ""
    retry_at: float = 0.0

    def show(self, seen: Seen) -> Shown:
        return Shown(
            f"Audit {self.audit_id}: decision session {self.session} gave no valid decision "
            f"({clip(self.error, 200)}); nothing applied, a fresh session retries.",
            "fail",
            rows=(
                Row(
                    "audits",
                    self.audit_id,
                    {"state": f"deciding: session {self.session} refused, a fresh one retries"},
                ),
            ),
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class DecisionDiscarded(FlowEvent):
    """A decision for a revision the audit has moved past: never applied."""

    kind: ClassVar[str] = "decision_discarded"
    audit_id: str = ""
    revision: int = 1
    why: str = ""

    def show(self, seen: Seen) -> Shown:
        return Shown(
            f"Audit {self.audit_id}: a decision for revision {self.revision} is discarded "
            f"({clip(self.why, 160)}).",
            "warn",
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AuditDecided(FlowEvent):
    kind: ClassVar[str] = "audit_decided"
    audit_id: str = ""
    revision: int = 1
    scope: str = "targeted"
    verdicts: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        said = ", ".join(f"{v.get('lane')} {v.get('verdict')}" for v in self.verdicts)
        return f"audit {self.audit_id} r{self.revision} decided: {said}"

    def show(self, seen: Seen) -> Shown:
        said = and_([f"{v.get('lane')} {v.get('verdict')}" for v in self.verdicts])
        why = "; ".join(f"{v.get('lane')}: {clip(v.get('reason'), 100)}" for v in self.verdicts)
        targets = [str(v.get("lane")) for v in self.verdicts]
        row = _audit_row(
            self.audit_id,
            self.revision,
            self.scope,
            targets,
            "decided: " + said,
            why=clip(why, 160),
        )
        return Shown(f"Audit {self.audit_id} decided: {said} ({why}).", "plan", rows=(row,))


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LaneRefreshed(FlowEvent):
    """A redirected lane 2..N's private copy is remade from lane 1's tree as it is now, so
    its next mission starts on the current tree; the old copy (and its edits) is dropped."""

    kind: ClassVar[str] = "lane_refreshed"
    place: str = ""
    audit_id: str = ""
    mission_id: str = ""  # the mission the new copy is for

    def describe(self) -> str:
        return f"{self.lane}'s copy {self.place} remade from lane 1's tree"

    def show(self, seen: Seen) -> Shown:
        return Shown(
            f"{self.lane}'s private copy is remade from lane 1's current tree for its "
            f"redirected mission {self.mission_id} (audit {self.audit_id}); the old copy is "
            "dropped.",
            "plan",
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class IntegrationMoved(FlowEvent):
    """An integration item for lane 1 changed state: queued, active, accepted, rejected."""

    kind: ClassVar[str] = "integration_moved"
    item_id: str = ""
    source_lane: str = ""
    source_mission_id: str = ""
    priority: int = 50
    status: str = "queued"
    artifacts: int = 0
    why: str = ""

    def show(self, seen: Seen) -> Shown:
        tag = {"rejected": "fail", "accepted": "best"}.get(self.status, "report")
        return Shown(
            f"Integration {self.item_id} from {self.source_lane} ({self.artifacts} "
            f"artifacts, priority {self.priority}): {self.status} ({clip(self.why, 160)}).",
            tag,  # type: ignore[arg-type]
            rows=(
                Row(
                    "integration",
                    self.item_id,
                    {
                        "from": self.source_lane,
                        "priority": self.priority,
                        "state": self.status,
                        "why": clip(self.why, 80),
                    },
                ),
            ),
        )


def _audit_row(
    aid: str, revision: int, scope: str, targets: list[str], state: str, **more: str
) -> Row:
    # `more`: what opened it (a trigger) or why it was decided so, kept beside its state.
    cells: dict[str, Cell] = {
        "revision": revision,
        "scope": scope,
        "targets": ", ".join(targets),
        "state": state,
    }
    return Row("audits", aid, {**cells, **more})


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ExternalSeen(FlowEvent):
    """A pass over the external events file took in events (evidence, review requests) or
    found some wrong; the events themselves never act."""

    kind: ClassVar[str] = "external_seen"
    events: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)

    def show(self, seen: Seen) -> Shown:
        took = and_([f"{e.get('kind')} ({e.get('lane') or e.get('scope')})" for e in self.events])
        wrong = f"; {len(self.errors)} refused: {clip(self.errors[0], 160)}" if self.errors else ""
        return Shown(
            f"External events: {took or 'none taken'}{wrong}.", "warn" if self.errors else "info"
        )
