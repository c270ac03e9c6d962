"""The coordinator's plan, as parallel_flame_chase makes it (its `planner`), on GitState."""

from __future__ import annotations

from flamechase import events as ev
from flamechase.flow import Command
from flamechase.flows.git_pr import jobs
from flamechase.flows.git_pr.model import GitState
from flamechase.flows.parallel_flame_chase import planner
from flamechase.flows.parallel_flame_chase.planner import PLANNER, Planning

__all__ = ["PLANNER", "Planning", "commands", "fold"]


def commands(state: GitState, p: Planning) -> list[Command]:
    return planner.commands(p, state.places, state.book.lanes)


def fold(state: GitState, event: ev.Event) -> GitState:
    """The planner's turn events (lane None, actor coordinator)."""
    p = state.planning
    step = None if p is None else planner.fold(p, event, state.book.lanes, state.fingerprint)
    if p is None or step is None:
        return state
    state = state.replace(planning=step.planning)
    if step.plan is not None:
        state = state.replace(plan=step.plan, revision=p.revision)
    return jobs.owe(state, *step.owed)
