"""After each lane turn: what the lane pushed goes through the central repository's hook, then
the PR requests it made (`flamechase pr ...`) are carried out. The lane's next turn waits.

    export   (jailed as the lane, in its clone) the outbox's refs that changed since the
             runtime last forwarded it, and a bundle of the new commits
    forward  (the runtime, in the central repository) each changed ref pushed through the hook
             as that lane; refusals go back to the lane as system reports
    requests open / ready, judged against the central repository's refs (`requests.py`)

Only refs that changed in the outbox since the runtime last forwarded it are pushed again, so
a refused push is reported once, not after every turn.
"""

from __future__ import annotations

import json
from typing import Any

from flamechase import events as ev
from flamechase.flow import Emit
from flamechase.flows.git_pr import events as gev
from flamechase.flows.git_pr import jobs, programs, requests
from flamechase.flows.git_pr.model import (
    CENTRAL,
    AfterTurn,
    GitState,
    Job,
    lane_place,
    result_of,
    waiting_key,
)

__all__ = ["after_turn", "on_export", "on_forward"]


def bundle_path(state: GitState, lane: str) -> str:
    return f"{state.place(lane_place(lane))}/{programs.BUNDLE}"


def after_turn(state: GitState, event: ev.TurnEnded) -> GitState:
    """A lane's turn was recorded (valid or failed): forward its pushes, then its requests."""
    lane = event.lane or ""
    after = AfterTurn(
        turn=event.turn, requests=tuple(event.requests), refused_lines=tuple(event.requests_refused)
    )
    state = state.replace(
        after={**state.after, lane: after}, book=state.book.wait_for(lane, waiting_key(lane))
    )
    central = state.place(CENTRAL)
    seen = json.dumps(state.seen.get(lane, {}), sort_keys=True)
    return jobs.add(
        state,
        "export",
        subject=lane,
        place=lane_place(lane),
        lane=lane,
        reads=(CENTRAL,),
        argv=programs.export(central, bundle_path(state, lane)),
        env={"FLAMECHASE_GIT_SEEN": seen},
    )


def on_export(state: GitState, job: Job, receipt: dict[str, Any], at: str) -> GitState:
    lane = job.subject
    after = state.after.get(lane)
    if after is None:
        return state
    result = result_of(receipt)
    if result.get("error"):
        state = jobs.system_report(
            state,
            [lane],
            "push_failed",
            f"The runtime could not read your pushes: {result['error']}",
            at,
        )
        return requests.carry_out(state, lane, after, at)
    updates = {str(k): str(v) for k, v in (result.get("changed") or {}).items()}
    deletes = [str(r) for r in result.get("deleted") or ()]
    # The outbox's refs as the runtime will have seen them once it forwarded these.
    seen = state.seen.get(lane, {})
    pushed = {**{r: s for r, s in seen.items() if r not in deletes}, **updates}
    after = after.replace(pushed=pushed)
    state = state.replace(after={**state.after, lane: after})
    if not updates and not deletes:
        return requests.carry_out(state, lane, after, at)
    bundle = bundle_path(state, lane) if result.get("bundle") else None
    return jobs.add(
        state,
        "forward",
        subject=lane,
        place=CENTRAL,
        reads=(lane_place(lane),),
        argv=programs.forward(state.place(CENTRAL), lane, bundle, updates, deletes),
        env=programs.lane_policy(state, lane),
    )


def on_forward(state: GitState, job: Job, receipt: dict[str, Any], at: str) -> GitState:
    lane = job.subject
    after = state.after.get(lane)
    if after is None:
        return state
    result = result_of(receipt)
    if result.get("error"):
        return requests.carry_out(
            jobs.system_report(
                state,
                [lane],
                "push_failed",
                f"Your pushes did not reach the central repository: {result['error']}",
                at,
            ),
            lane,
            after,
            at,
        )
    seen = {**state.seen, lane: dict(after.pushed or {})}
    touched = {str(k): v for k, v in (result.get("refs") or {}).items()}
    mine = {r: s for r, s in state.refs.get(lane, {}).items() if r not in touched}
    mine |= {r: str(s) for r, s in touched.items() if s and r.startswith(f"refs/heads/{lane}/")}
    state = state.replace(seen=seen, refs={**state.refs, lane: mine})
    refused = {ref: why for ref, why in (result.get("results") or {}).items() if why != "ok"}
    for ref, why in sorted(refused.items()):
        state = jobs.owe(state, Emit(gev.PushRefused(lane=lane, ref=ref, reason=str(why))))
    if refused:
        lines = "; ".join(
            f"{ref.removeprefix('refs/heads/')}: {why}" for ref, why in sorted(refused.items())
        )
        state = jobs.system_report(
            state,
            [lane],
            "push_refused",
            f"The central repository refused your push: {lines}",
            at,
            {"refused": refused},
        )
    return requests.carry_out(state, lane, after, at)
