"""An audit's decision, as the coordinator writes it, checked exactly against the audit it
answers (the validation context, built when the decision session starts): its id and
revision, exactly its targets, and what each verdict may do. A decision that fails any check
is never applied; the engine asks the same session to repair it, then the flow a fresh one.

- `continue`: the mission goes on, its counters and deadline start again;
- `redirect`: the mission is rejected and `next_mission` replaces it; it must change the
  hypothesis, the method or the scale (`changes`), and really change what it names;
- `accept`: only a mission whose outcome is `deliverable_ready`. Lanes 2..N need an
  `integration` directive (the package is queued for lane 1) and have a frozen package;
  lane 1 must not carry one. `next_mission` is the lane's successor (none: the lane stops,
  or lane 1 resumes the mission its integration paused).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from flamechase.flows.parallel_flame_chase_mission.specs import MissionSpec

__all__ = ["Accept", "Continue", "Decision", "Directive", "Redirect", "context"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Directive(_Strict):
    priority: int = Field(default=50, ge=1, le=100, description="lower is integrated first")
    objective: str = Field(min_length=1, max_length=8000)
    success_criteria: list[str] = Field(min_length=1, max_length=12)


class Continue(_Strict):
    lane: str
    verdict: Literal["continue"]
    reason: str = Field(min_length=1, max_length=4096)


class Redirect(_Strict):
    lane: str
    verdict: Literal["redirect"]
    reason: str = Field(min_length=1, max_length=4096)
    changes: list[Literal["hypothesis", "method", "scale"]] = Field(min_length=1, max_length=3)
    next_mission: MissionSpec


class Accept(_Strict):
    lane: str
    verdict: Literal["accept"]
    reason: str = Field(min_length=1, max_length=4096)
    integration: Directive | None = None
    next_mission: MissionSpec | None = None


Verdict = Annotated[Continue | Redirect | Accept, Field(discriminator="verdict")]


def context(
    audit_id: str, revision: int, targets: list[str], lanes: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """What a decision is checked against: per target lane, `outcome` (the current
    mission's), `spec` (its mission), `package` (it carries frozen artifacts), `lane1`."""
    return {"audit_id": audit_id, "revision": revision, "targets": targets, "lanes": lanes}


class Decision(_Strict):
    audit_id: str = Field(min_length=1, max_length=40)
    revision: int = Field(ge=1)
    lanes: list[Verdict] = Field(min_length=1, max_length=8)

    @model_validator(mode="after")
    def _answers_the_audit(self, info: ValidationInfo) -> Decision:
        ctx = info.context or {}
        if not ctx:
            return self  # a schema check only (the views, the sim's self-test)
        if self.audit_id != ctx["audit_id"] or self.revision != ctx["revision"]:
            raise ValueError(
                f"this decision answers audit {ctx['audit_id']} revision {ctx['revision']}, "
                f"not {self.audit_id!r} revision {self.revision}"
            )
        named = [v.lane for v in self.lanes]
        targets = list(ctx["targets"])
        if sorted(named) != sorted(targets):
            raise ValueError(f"decide exactly the targets {', '.join(targets)} once each")
        for v in self.lanes:
            _check(v, ctx["lanes"][v.lane])
        return self


def _check(v: Continue | Redirect | Accept, lane: dict[str, Any]) -> None:
    if isinstance(v, Redirect):
        _changes(v, lane.get("spec") or {})
    if not isinstance(v, Accept):
        return
    if lane.get("outcome") != "deliverable_ready":
        got = lane.get("outcome") or "no outcome"
        raise ValueError(f"{v.lane}: accept only a deliverable_ready outcome (it has {got})")
    if lane.get("lane1"):
        if v.integration is not None:
            raise ValueError(f"{v.lane}: lane 1's accept carries no integration directive")
        return
    if v.integration is None:
        raise ValueError(f"{v.lane}: accepting a lane 2..N deliverable needs `integration`")
    if not lane.get("package"):
        raise ValueError(f"{v.lane}: its deliverable has no frozen artifact package to integrate")


def _changes(v: Redirect, old: dict[str, Any]) -> None:
    new = v.next_mission
    checks = {
        "hypothesis": (new.objective, new.information_question)
        != (
            old.get("objective"),
            old.get("information_question"),
        ),
        "method": new.approach_class != old.get("approach_class"),
        "scale": new.change_scale != old.get("change_scale", "component"),
    }
    same = [c for c in v.changes if not checks[c]]
    if same:
        raise ValueError(
            f"{v.lane}: the redirect says it changes the {' and '.join(same)} but the next "
            "mission keeps it"
        )
