"""The planner: a run without `-p plan=` starts with it. Its snapshot of the tree, its turn (a
fresh session each time, at most `PLAN_TRIES`), and the fronts the plan it writes opens; a
plan the user gave opens its fronts the same way (`fronts_of`, `planned`)."""

from __future__ import annotations

from collections.abc import Sequence

from flamechase import events as ev
from flamechase.flow import Command, Emit, FinishRun, MakePlace, ResultSpec, StartTurn
from flamechase.flows.parrallello import events as fev
from flamechase.flows.parrallello.plan import PlanSpec
from flamechase.flows.parrallello.state import FrontState, PState

__all__ = ["PLANNER", "PLAN_TRIES", "commands", "fronts_of", "on_turn", "planned"]

PLANNER = "planner"
PLAN_TRIES = 3


def fronts_of(plan: PlanSpec, slots: Sequence[tuple[str, Sequence[str]]]) -> dict[str, FrontState]:
    out = {}
    for spec, (lane, builders) in zip(plan.fronts, slots, strict=False):
        spare = builders[len(spec.owners)] if len(builders) > len(spec.owners) else None
        out[spec.id] = FrontState(
            id=spec.id,
            lane=lane,
            owners=dict(zip(spec.owners, builders, strict=False)),
            spare=spare,
        )
    return out


def planned(plan: PlanSpec, source: str) -> Command:
    return Emit(
        fev.FrontsPlanned(
            source=source,
            blocks=plan.blocks,
            rounds_per_block=plan.rounds_per_block,
            fronts=[
                {
                    "id": f.id,
                    "wave": f.wave,
                    "depends_on": list(f.depends_on),
                    "weight": f.weight,
                    "gate": f.gate,
                    "owners": {o: list(g) for o, g in f.owners.items()},
                    "freeze": list(f.freeze),
                }
                for f in plan.fronts
            ],
        )
    )


def on_turn(state: PState, event: ev.TurnEnded) -> PState:
    """The planner's turn ended: a failure kept for the next session's prompt, or its plan."""
    state = state.replace(planner_busy=False)
    if isinstance(event, ev.TurnFailed):
        return state.replace(
            planner_errors=(
                *state.planner_errors,
                f"attempt {event.attempt}: {event.error[:300]}",
            )
        )
    if not isinstance(event, ev.TurnValid) or state.plan is not None:
        return state
    plan = PlanSpec.model_validate(event.result, context={"fronts_max": len(state.slots)})
    return state.replace(
        plan=plan,
        fronts=fronts_of(plan, state.slots),
        outbox=state.outbox.add(planned(plan, "planner")),
    )


def commands(state: PState) -> list[Command]:
    """Until there is a plan: the planner's snapshot, then its turn, or the run's end."""
    if "planning" not in state.places:
        return [MakePlace("planning", label="the planner's snapshot of your tree")]
    if len(state.planner_errors) >= PLAN_TRIES:
        return [
            FinishRun(
                "failed",
                f"planning failed after {PLAN_TRIES} fresh sessions: "
                + " | ".join(state.planner_errors),
            )
        ]
    spec = ResultSpec(PlanSpec, noun="plan", context={"fronts_max": len(state.slots)})
    return [
        StartTurn(
            role=PLANNER,
            lane=None,
            number=1,
            place="planning",
            result=spec,
            counted=False,
            env={"FLAMECHASE_FRONTS_MAX": str(len(state.slots))},
        )
    ]
