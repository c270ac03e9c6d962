"""parallel_flame_chase:git_pr: every lane a git clone, competing through pull requests that the
runtime measures and merges itself.

    flamechase exec -f parallel_flame_chase:git_pr -a coordinator=codex/gpt-5:high \
        -a lane_1_actor_a=claude/opus:max,lane_1_actor_b=codex/gpt-5:high ... \
        -p budget.duration=12h,evaluator='python bench.py',metric_pattern='CYCLES: (\\d+)' \
        "$(cat TASK.md)"

A coordinator plans N lanes and leaves; in each lane two actors alternate, each lane in its own
clone of a central repository seeded with the source's baseline. No lane is privileged: lanes
push their own branches (through the central repository's hook) and open pull requests with
`flamechase pr`; the runtime freezes the evaluator's files from the baseline, records a PR that
changes one as tampered (never merged), measures a ready PR in a clean checkout of exactly its
head with the frozen files put back,
keeps the receipt where lanes cannot write, merges the best PR that beats main (re-measuring a
merge with a main that moved), and publishes each merge into the source tree, path by path.
Reports pass between lanes as in parallel_flame_chase; what the runtime decides reaches each
lane as system reports. See the modules: `setup` (the layout), `pushes` and `requests` (after
each turn), `review` (receipts and the integration policy), `frozen` (the frozen evaluator),
`publication` (the source), `skill` (the lane protocol of pull requests, mounted on every
session).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from flamechase import events as ev
from flamechase.flow import (
    Command,
    FinishRun,
    Flow,
    LaneDef,
    Role,
    RunSetup,
    SimActor,
    Skill,
    TurnContext,
)
from flamechase.flow.lanes import LaneBook
from flamechase.flows.git_pr import jobs, planning, prompts, publication, pushes, review, setup
from flamechase.flows.git_pr import sim as git_sim
from flamechase.flows.git_pr import skill as git_skill
from flamechase.flows.git_pr.model import CENTRAL, CLOSED, GitState, lane_place
from flamechase.flows.git_pr.params import GitPrParams, allowed_globs, task_paths
from flamechase.flows.parallel_flame_chase.planner import GO_ON, UNHOLD, Planning

__all__ = ["FLOW", "GitPr"]

PR_SHOWN = 200  # PRs `status --json` lists (the newest)
# What the PR protocol rests on is the jail: said at every start that turns it off.
UNJAILED = (
    "parallel_flame_chase:git_pr with sandbox=off: lanes and their evaluations run "
    "unconfined, so nothing stops them from writing the central repository past its "
    "hook or the run's store (forging receipts, PR states and merges); its "
    "guarantees hold only with a jail"
)


class GitPr(Flow[GitState, GitPrParams]):
    name = "parallel_flame_chase:git_pr"
    summary = (
        "A coordinator plans N lanes; each lane, a git clone, competes through pull "
        "requests the runtime measures with the evaluator frozen from your tree, merges and "
        "publishes into it."
    )
    version = "1"
    Params = GitPrParams
    State = GitState
    structural_params = ("lanes",)

    # ---- declarations ----------------------------------------------------------------------

    def lanes(self, params: GitPrParams) -> list[LaneDef]:
        n = params.lanes
        return [
            LaneDef(
                f"lane-{i}", (f"lane_{i}_actor_a", f"lane_{i}_actor_b"), lane_place(f"lane-{i}")
            )
            for i in range(1, n + 1)
        ]

    def roles(self, params: GitPrParams) -> list[str]:
        return [planning.PLANNER, *(r for lane in self.lanes(params) for r in lane.roles)]

    def describe_roles(self, params: GitPrParams) -> list[Role]:
        said = {planning.PLANNER: "plans one mission per lane, once, and leaves the run"}
        for lane in self.lanes(params):
            for role in lane.roles:
                said[role] = (
                    f"{lane.name}, taking turns, in its own git clone; proposes its work as "
                    "pull requests the runtime measures and merges"
                )
        return [Role(r, said.get(r, "")) for r in self.roles(params)]

    def copies_needed(self, params: GitPrParams, *, fresh: bool, revised: bool) -> int:
        return len(self.copy_names(params, fresh=fresh, revised=revised))

    def copy_names(self, params: GitPrParams, *, fresh: bool, revised: bool) -> list[str]:
        if fresh:
            return [
                "planning",
                "central repository",
                *(f"{ln.name} clone" for ln in self.lanes(params)),
            ]
        return ["planning"] if revised else []

    def demo_params(self, fields: Mapping[str, Any], evaluator: str) -> dict[str, str]:
        # The bundled sample's bench.py prints `STEPS: <int>`, lower is better.
        return {
            "evaluator": evaluator,
            "metric_pattern": r"STEPS: (\d+)",
            "metric": "steps",
            "direction": "minimize",
        }

    def simulator(self) -> SimActor:
        return git_sim.ACTOR

    def start_notices(self, params: GitPrParams) -> list[str]:
        return [UNJAILED] if params.sandbox == "off" else []

    # ---- folding ---------------------------------------------------------------------------

    def start(self, run: RunSetup[GitPrParams]) -> GitState:
        params = run.params
        book = LaneBook.open(run.run_id, run.lanes, holds=True, shares_reports=True, remedy=UNHOLD)
        return GitState(
            params=params,
            allowed=allowed_globs(params, run.objective),
            task_allowed=tuple(task_paths(run.objective)),
            source=run.source,
            book=book,
        )

    def evolve(self, state: GitState, event: ev.Event) -> GitState:
        book, owed = state.book.evolve(event)
        state = state.replace(book=book, outbox=state.outbox.settle(event).add(*owed))
        if isinstance(event, ev.Frozen) and event.key == setup.FREEZE:
            return setup.on_frozen(state, event)
        if isinstance(event, ev.PlaceMade):
            return state.replace(places={**state.places, event.place: event.path})
        if isinstance(event, ev.RunResumed) and event.params:
            # The params in force now (the stored ones, with what this command line gave).
            params = GitPrParams.model_validate(event.params)
            task = state.allowed if state.task_allowed is None else state.task_allowed
            return state.replace(params=params, allowed=tuple(params.allowed_paths) or task)
        if isinstance(event, ev.ObjectiveRevised):
            task = tuple(task_paths(event.objective))
            return state.replace(
                planning=Planning(revision=state.revision + 1),
                fingerprint=event.task_fingerprint,
                task_allowed=task,
                allowed=tuple(state.params.allowed_paths) or task,
            )
        if event.lane is None and event.actor == planning.PLANNER:
            return planning.fold(state, event)
        if isinstance(event, ev.TurnValid | ev.TurnFailed) and event.lane in state.book.lanes:
            return pushes.after_turn(state, event)
        if isinstance(event, ev.Ran | ev.Measured):
            return review.integrate(self._result(state, event), event.at)
        return state

    @staticmethod
    def _result(state: GitState, event: ev.Ran | ev.Measured) -> GitState:
        key, receipt = event.key, event.receipt
        if key.startswith("setup/"):
            return setup.on_result(state, key, receipt)
        if key.startswith(publication.KEY):
            return publication.on_result(state, receipt, event.at)
        state, job = jobs.take(state, key)
        if job is None:
            return state
        if job.purpose == "export":
            return pushes.on_export(state, job, receipt, event.at)
        if job.purpose == "forward":
            return pushes.on_forward(state, job, receipt, event.at)
        return review.on_result(state, job, receipt, event.at)

    # ---- deciding --------------------------------------------------------------------------

    def decide(self, state: GitState, now: float) -> Sequence[Command]:
        out: list[Command] = list(state.outbox.pending())
        failed = setup.failure(state)
        if failed is not None:
            return [*out, failed]
        out += setup.commands(state)
        if state.planning is not None:
            out += planning.commands(state, state.planning)
        out += jobs.runnable(state)
        out += publication.commands(state, now)
        if state.planning is not None:
            return out
        if state.book.all_held() and not state.jobs and state.review is None and not state.outbox:
            return [*out, FinishRun("held", state.book.held_message(GO_ON))]
        return out + self._turns(state)

    @staticmethod
    def _turns(state: GitState) -> list[Command]:
        out: list[Command] = []
        for turn in state.book.turns_to_start():
            lane = turn.lane or ""
            if lane not in state.steps or state.frozen is None:
                continue  # its clone is not made yet, or the evaluator not yet frozen
            out.append(
                dataclasses.replace(
                    turn,
                    inbox_from=(*turn.inbox_from, f"system:{lane}"),
                    requests=True,
                    reads=(CENTRAL,),
                    artifacts=False,
                )
            )
        return out

    # ---- words -----------------------------------------------------------------------------

    def prompt(self, state: GitState, ctx: TurnContext) -> str:
        p = state.params
        if ctx.turn.lane is None:
            errors = state.planning.errors if state.planning else ()
            return prompts.plan_prompt(
                objective=ctx.objective,
                lanes=list(state.book.lanes),
                previous_errors=errors,
                workspace_map=ctx.workspace_map,
                report_path=ctx.report_path,
                metric=p.metric,
                direction=p.direction,
                skill=ctx.skill,
            )
        lane = state.book.get(ctx.turn.lane)
        partner = lane.actors[1] if ctx.turn.role == lane.actors[0] else lane.actors[0]
        mission = None
        for entry in (state.plan or {}).get("lanes", []):
            if entry.get("lane") == lane.name and isinstance(entry.get("mission"), dict):
                mission = entry["mission"]
        return prompts.lane_prompt(
            state,
            lane=lane.name,
            role=ctx.turn.role,
            partner=partner,
            turn=ctx.turn.number,
            workspace=ctx.workspace,
            objective=ctx.objective,
            mission=mission,
            inbox=ctx.inbox,
            inbox_path=ctx.inbox_path,
            checkpoint_path=ctx.checkpoint_path,
            checkpoint_identity=ctx.checkpoint_identity,
            workspace_map=ctx.workspace_map,
            report_path=ctx.report_path,
            skill=ctx.skill,
        )

    def skill(self, role: str) -> Skill | None:
        """The lane protocol of pull requests, for every session: each lane actor's, and the
        coordinator's, which plans for lanes that follow it."""
        return git_skill.SKILL

    def describe(self, state: GitState) -> dict[str, Any]:
        p = state.params
        last = state.ledger[-1] if state.ledger else None
        best = (
            {
                "metric": p.metric,
                "direction": p.direction,
                "value": last.score,
                "lane": last.lane,
                "report_id": last.pr,
            }
            if last
            else None
        )
        per_lane = {
            n: {
                "next_role": ln.next_role,
                "open_prs": sum(
                    1 for pr in state.prs.values() if pr.lane == n and pr.status not in CLOSED
                ),
                "merged_prs": sum(1 for e in state.ledger if e.lane == n),
            }
            for n, ln in state.book.lanes.items()
        }
        return {
            "plan": state.plan,
            "main": {
                "commit": state.main,
                "score": state.main_score,
                "metric": p.metric,
                "direction": p.direction,
                "evaluator": p.evaluator,
                "baseline": state.baseline,
                "measured": state.main_measured,
                "error": state.main_error,
                "published": state.published,
                "publication_held": state.publication.held,
                "central": state.places.get(CENTRAL),
            },
            "allowed_paths": list(state.allowed),
            "evaluator_files": sorted(state.frozen or ()),
            "pull_requests": [pr.summary() for pr in list(state.prs.values())[-PR_SHOWN:]],
            "reviewing": state.review.pr if state.review else None,
            "ledger": [e.model_dump(mode="json") for e in state.ledger],
            "leaderboard": {"best": best},
            "lanes": per_lane,
        }


FLOW = GitPr()
