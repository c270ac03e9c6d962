"""The plan a coordinator returns: exactly one mission per lane."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    model_validator,
)

from flamechase.reports import one_line


class Mission(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str = Field(min_length=1, max_length=200)
    objective: str = Field(min_length=1, max_length=8000)
    success_criteria: list[str] = Field(min_length=1, max_length=12)
    kind: Literal["research", "implementation", "validation", "integration"] = "research"
    approach_class: str | None = Field(default=None, max_length=200)
    change_scale: Literal["probe", "component", "architecture", "validation", "integration"] = (
        "component"
    )
    information_question: str | None = Field(default=None, max_length=2000)
    dependencies: list[str] = Field(default_factory=list, max_length=20)


class LaneBrief(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    lane: str
    mission: Mission


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    lanes: list[LaneBrief]


def _show(name: str) -> str:
    """A lane name the coordinator wrote, safe inside a one-line message."""
    return name if name.isprintable() and name.strip() == name and name else repr(name)


def validate_plan(data: Any, lanes: Sequence[str], model: type[Plan] = Plan) -> dict[str, Any]:
    """The plan in lane order, checked as `model` (a flow with richer missions subclasses
    `Plan`) and against the run's lanes; ValueError with one line otherwise."""
    if not isinstance(data, dict):
        raise ValueError(f"plan must be a JSON object, got {type(data).__name__}")
    try:
        plan = model.model_validate(data)
    except ValidationError as exc:
        raise ValueError(one_line(exc)) from None
    names = [b.lane for b in plan.lanes]
    wanted = list(lanes)
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(
            f"plan repeats {', '.join(map(_show, repeated))}; give exactly one mission per lane"
        )
    missing = [n for n in wanted if n not in names]
    extra = [n for n in names if n not in wanted]
    if missing or extra:
        raise ValueError(
            f"plan must contain {', '.join(wanted)} once each"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; unknown {', '.join(map(_show, extra))}" if extra else "")
        )
    order = {n: i for i, n in enumerate(wanted)}
    return {
        "lanes": [
            b.model_dump(mode="json") for b in sorted(plan.lanes, key=lambda b: order[b.lane])
        ]
    }


class PlanResult(BaseModel):
    """A coordinator's plan as a turn result: `Plan`, checked against the run's lanes
    (the validation context's `lanes`), in lane order."""

    model_config = ConfigDict(frozen=True)

    lanes: list[dict[str, Any]]

    @model_validator(mode="wrap")
    @classmethod
    def _against_the_run(
        cls, data: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> Any:
        names = list((info.context or {}).get("lanes", ()))
        return handler(validate_plan(data, names))
