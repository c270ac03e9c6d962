"""Planning: the planner role's sessions, each fresh, in a snapshot of the source.

Up to PLAN_ATTEMPTS sessions; an invalid plan or a failed session is retried in a new one.
Returns the plan or every attempt's reason; the control loop records the outcome.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from flamechase.agents.backend import Backend, TurnRequest
from flamechase.engine.turns import TurnOutcome, run_turn
from flamechase.flow import Flow, LaneDef, PlanView

PLAN_ATTEMPTS = 3


@dataclasses.dataclass(slots=True)
class PlanResult:
    plan: dict[str, Any] | None
    errors: list[str]
    outcomes: list[TurnOutcome]


async def plan(
    *,
    flow: Flow,
    backend: Backend,
    base: TurnRequest,
    lanes: Sequence[LaneDef],
    objective: str,
    workspace_map: Mapping[str, Any],
    attempt_dir: Callable[[int], Path],
    on_spawn: Callable[[int, str], None],
    on_attempt: Callable[[int, TurnOutcome], None],
    admit: Callable[[], bool],
    first_attempt: int = 1,
) -> PlanResult:
    """Run planning sessions until one returns a valid plan or attempts run out.

    `first_attempt` numbers the sessions after those a crashed engine already recorded.
    """
    errors: list[str] = []
    outcomes: list[TurnOutcome] = []
    for attempt in range(first_attempt, first_attempt + PLAN_ATTEMPTS):
        if not admit():
            errors.append(f"attempt {attempt}: not started, the budget is spent")
            break
        io_dir = attempt_dir(attempt)
        view = PlanView(objective=objective, lanes=lanes, attempt=attempt,
                        previous_errors=tuple(errors), workspace_map=workspace_map,
                        report_path=io_dir / "report.json")
        request = dataclasses.replace(base, turn=attempt, io_dir=io_dir,
                                      prompt=flow.plan_prompt(view))

        def validate(data: Any) -> dict[str, Any]:
            return flow.validate_plan(data, lanes)

        def repair(reason: str, _path: Path = io_dir / "report.json") -> str:
            return (f"Your plan was rejected: {reason}\nWrite a corrected plan as JSON to "
                    f"{_path}: {{\"lanes\": [{{\"lane\": \"lane-1\", \"mission\": {{\"title\": "
                    "…, \"objective\": …, \"success_criteria\": [...]}}}}, …]}} with exactly "
                    "one entry per lane.")

        out = await run_turn(backend, request, on_spawn=on_spawn, validate=validate,
                             repair_prompt=repair)
        outcomes.append(out)
        on_attempt(attempt, out)
        if out.status == "valid":
            return PlanResult(out.result, errors, outcomes)
        errors.append(f"attempt {attempt}: {out.error or out.status}")
        if out.status == "interrupted":
            break
    return PlanResult(None, errors, outcomes)
