"""The coordinator's planning turns, for the flows that plan one mission per lane
(parallel_flame_chase and its git_pr variant): one turn, up to PLAN_ATTEMPTS fresh sessions,
in a fresh copy of the source; again, in another copy, when TASK.md changes.

Pure, as the flows that use it: `commands` says what to do next for a plan being made,
`fold` what a planner's turn event does to it. The flow keeps the state and the outbox.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from flamechase import events as ev
from flamechase.flow import (
    Command,
    Emit,
    FinishRun,
    FlowState,
    MakePlace,
    ReleaseLane,
    ResultSpec,
    StartTurn,
)
from flamechase.flow.lanes import Lane
from flamechase.flows.parallel_flame_chase import events as pev
from flamechase.flows.parallel_flame_chase.plans import PlanResult

__all__ = ["GO_ON", "PLANNER", "PLAN_ATTEMPTS", "UNHOLD", "Planning", "Step", "commands", "fold"]

PLANNER = "coordinator"
PLAN_ATTEMPTS = 3  # fresh planning sessions before the run fails

# A new plan releases every held lane (`fold`), so a changed TASK.md is the way out of a hold,
# in the words of every flow that plans with this module: for a run whose lanes are all held,
GO_ON = (
    "to go on, change TASK.md and run the same command with the task `continue`: the "
    "coordinator re-plans and the held lanes are released"
)
# and for one held lane, while the others go on.
UNHOLD = (
    "the other lanes go on; the coordinator's next plan releases it: once the run has ended, "
    "change TASK.md and run the same command with the task `continue`"
)


class Planning(FlowState):
    """A plan being made: revision n, in its own copy, up to PLAN_ATTEMPTS sessions."""

    revision: int = 1
    announced: bool = False
    busy: bool = False
    errors: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class Step:
    """What a planner's event did: the planning after it (None: a plan was made, `plan`),
    and the commands owed (to go out through the flow's outbox)."""

    planning: Planning | None
    owed: tuple[Command, ...] = ()
    plan: dict[str, Any] | None = None


def commands(
    p: Planning,
    places: Mapping[str, str],
    lanes: Mapping[str, Lane],
    result: type[BaseModel] = PlanResult,
) -> list[Command]:
    place = f"planning/{p.revision}"
    if place not in places:
        again = f" (plan revision {p.revision})" if p.revision > 1 else ""
        return [MakePlace(place, label=f"the {PLANNER}'s snapshot of your tree{again}")]
    if len(p.errors) >= PLAN_ATTEMPTS:
        return [
            FinishRun(
                "failed",
                f"planning failed after {len(p.errors)} fresh sessions: " + " | ".join(p.errors),
            )
        ]
    out: list[Command] = []
    if not p.announced:
        # Announced once per revision; the outbox carries it through a crash.
        out.append(
            Emit(pev.PlanningStarted(actor=PLANNER, revision=p.revision, workspace=places[place]))
        )
    spec = ResultSpec(result, noun="plan", context={"lanes": list(lanes)})
    out.append(
        StartTurn(
            role=PLANNER,
            lane=None,
            number=p.revision,
            place=place,
            result=spec,
            counted=False,
            env={"FLAMECHASE_LANES": ",".join(lanes)},
        )
    )
    return out


def fold(p: Planning, event: ev.Event, lanes: Mapping[str, Lane], fingerprint: str) -> Step | None:
    """A planner's turn event (lane None, actor PLANNER); None when it changes nothing."""
    if isinstance(event, pev.PlanningStarted):
        return Step(p.replace(announced=True))
    if isinstance(event, ev.TurnStarted):
        return Step(p.replace(busy=True))
    if isinstance(event, ev.TurnInterrupted | ev.LanePaused):
        return Step(p.replace(busy=False))
    if not isinstance(event, ev.TurnValid | ev.TurnFailed):
        return None
    attempt = pev.PlanAttempt(
        actor=PLANNER,
        attempt=event.attempt,
        status=event.status,
        error=getattr(event, "error", None),
        cost_usd=event.cost_usd,
        output_tokens=event.output_tokens,
        duration=round(event.duration, 3),
    )
    if isinstance(event, ev.TurnFailed):
        errors = (*p.errors, f"attempt {event.attempt}: {event.error or 'failed'}")
        return Step(p.replace(busy=False, errors=errors), (Emit(attempt),))
    held = [n for n, ln in lanes.items() if ln.held]
    owed: list[Command] = [
        Emit(attempt),
        Emit(pev.Planned(actor=PLANNER, revision=p.revision, plan=event.result, released=held)),
    ]
    if p.revision > 1:
        owed.append(
            Emit(
                pev.ObjectiveReplanned(
                    revision=p.revision, task_fingerprint=fingerprint, released=held
                )
            )
        )
    # A new plan gives every lane a clean slate: held lanes go again, streaks restart.
    owed += [
        ReleaseLane(n, "a new plan")
        for n, ln in lanes.items()
        if ln.held or ln.consecutive_failures
    ]
    return Step(None, tuple(owed), event.result)
