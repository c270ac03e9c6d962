"""What a mission is, as the coordinator writes it: parallel_flame_chase's mission plus its
bounds (a deadline, and how many progress turns may pass without an outcome), and the turn
report a lane ends with, whose status is the mission's outcome."""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    model_validator,
)

from flamechase.flows.parallel_flame_chase.plans import LaneBrief, Mission, Plan, validate_plan
from flamechase.reports import TurnReport

__all__ = ["OUTCOMES", "TERMINAL", "MissionPlanResult", "MissionReport", "MissionSpec"]

OUTCOMES = ("progress", "deliverable_ready", "no_result", "blocked")
TERMINAL = ("deliverable_ready", "no_result", "blocked")


class MissionSpec(Mission):
    """A bounded, falsifiable unit of a lane's work (extra keys are refused, as in `Mission`)."""

    deadline_hours: float = Field(default=6.0, ge=0.25, le=168)
    max_turns_without_outcome: int = Field(default=6, ge=1, le=50)


class MissionBrief(LaneBrief):
    mission: MissionSpec


class MissionPlan(Plan):
    lanes: list[MissionBrief]  # type: ignore[assignment]  # narrower: missions with bounds


class MissionPlanResult(BaseModel):
    """The coordinator's plan as a turn result: one bounded mission per lane, in lane order."""

    model_config = ConfigDict(frozen=True)

    lanes: list[dict[str, Any]]

    @model_validator(mode="wrap")
    @classmethod
    def _against_the_run(
        cls, data: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> Any:
        names = list((info.context or {}).get("lanes", ()))
        return handler(validate_plan(data, names, MissionPlan))


class MissionReport(TurnReport):
    """A lane's turn report: its status is the mission's outcome, and an outcome that ends the
    mission (deliverable_ready, no_result, blocked) must say what shows it (`evidence`)."""

    @model_validator(mode="after")
    def _outcome_has_evidence(self) -> MissionReport:
        if self.status in TERMINAL and not [e for e in self.evidence if e.strip()]:
            raise ValueError(f"status {self.status} ends the mission: give its evidence")
        return self
