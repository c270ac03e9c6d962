"""The coordinator's plan: one turn (up to PLAN_ATTEMPTS fresh sessions) in a snapshot of the
source, one mission per lane; again, in a fresh snapshot, when TASK.md changes."""

from __future__ import annotations

from flamechase import events as ev
from flamechase.flow import Command, Emit, FinishRun, MakePlace, ReleaseLane, ResultSpec, StartTurn
from flamechase.flows.git_pr import jobs
from flamechase.flows.git_pr.model import GitState, Planning
from flamechase.flows.plans import PlanResult

__all__ = ["PLANNER", "commands", "fold"]

PLANNER = "coordinator"
PLAN_ATTEMPTS = 3


def commands(state: GitState, p: Planning) -> list[Command]:
    place = f"planning/{p.revision}"
    if place not in state.places:
        return [MakePlace(place)]
    if len(p.errors) >= PLAN_ATTEMPTS:
        return [FinishRun("failed", f"planning failed after {len(p.errors)} fresh sessions: "
                          + " | ".join(p.errors))]
    out: list[Command] = []
    if not p.announced:
        out.append(Emit(ev.PlanningStarted(actor=PLANNER, revision=p.revision,
                                           workspace=state.places[place])))
    spec = ResultSpec(PlanResult, noun="plan", context={"lanes": list(state.book.lanes)})
    out.append(StartTurn(role=PLANNER, lane=None, number=p.revision, place=place, result=spec,
                         counted=False, env={"FLAMECHASE_LANES": ",".join(state.book.lanes)}))
    return out


def fold(state: GitState, event: ev.Event) -> GitState:
    """The planner's turn events (lane None, actor coordinator)."""
    p = state.planning
    if p is None:
        return state
    if isinstance(event, ev.PlanningStarted):
        return state.model_copy(update={"planning": p.model_copy(update={"announced": True})})
    if isinstance(event, ev.TurnStarted):
        return state.model_copy(update={"planning": p.model_copy(update={"busy": True})})
    if isinstance(event, ev.TurnInterrupted | ev.LanePaused):
        return state.model_copy(update={"planning": p.model_copy(update={"busy": False})})
    if not isinstance(event, ev.TurnValid | ev.TurnFailed):
        return state
    attempt = ev.PlanAttempt(actor=PLANNER, attempt=event.attempt, status=event.status,
                             error=getattr(event, "error", None), cost_usd=event.cost_usd,
                             output_tokens=event.output_tokens, duration=round(event.duration, 3))
    if isinstance(event, ev.TurnFailed):
        errors = (*p.errors, f"attempt {event.attempt}: {event.error or 'failed'}")
        state = state.model_copy(update={"planning": p.model_copy(update={"busy": False,
                                                                          "errors": errors})})
        return jobs.owe(state, Emit(attempt))
    held = [n for n, ln in state.book.lanes.items() if ln.held]
    owed: list[Command] = [Emit(attempt), Emit(ev.Planned(actor=PLANNER, revision=p.revision,
                                                          plan=event.result, released=held))]
    if p.revision > 1:
        owed.append(Emit(ev.ObjectiveReplanned(revision=p.revision,
                                               task_fingerprint=state.fingerprint,
                                               released=held)))
    # A new plan gives every lane a clean slate: held lanes go again, streaks restart.
    owed += [ReleaseLane(n, "a new plan") for n, ln in state.book.lanes.items()
             if ln.held or ln.consecutive_failures]
    state = state.model_copy(update={"plan": event.result, "revision": p.revision,
                                     "planning": None})
    return jobs.owe(state, *owed)
