"""flame_chase's decider: two actors alternating in one lane on the user's tree."""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from flamechase.flow import (
    Command,
    Event,
    Flow,
    FlowParams,
    LaneDef,
    Outbox,
    Role,
    RunSetup,
    SimActor,
    Skill,
    TurnContext,
)
from flamechase.flow.lanes import LaneBook
from flamechase.flows.flame_chase import skill as chase_skill
from flamechase.flows.sample_lanes.actor import LaneActor

ROLES = ("first_chaser", "second_chaser")


class ChaseState(BaseModel):
    model_config = ConfigDict(frozen=True)

    book: LaneBook
    outbox: Outbox = Outbox()


class FlameChase(Flow[ChaseState]):
    name = "flame_chase"
    summary = "Two actors take turns in fresh sessions on one repository."
    version = "2"
    Params = FlowParams
    State = ChaseState

    def roles(self, params: FlowParams) -> list[str]:
        return list(ROLES)

    def describe_roles(self, params: FlowParams) -> list[Role]:
        return [
            Role(ROLES[0], "takes the first turn, then every other one, on your tree"),
            Role(ROLES[1], "takes the turns between, on your tree"),
        ]

    def lanes(self, params: FlowParams) -> list[LaneDef]:
        return [LaneDef("lane-1", ROLES, "source")]

    def simulator(self) -> SimActor:
        return LaneActor()

    def start(self, setup: RunSetup) -> ChaseState:
        return ChaseState(
            book=LaneBook.open(setup.run_id, setup.lanes, holds=False, shares_reports=False)
        )

    def evolve(self, state: ChaseState, event: Event) -> ChaseState:
        book, owed = state.book.evolve(event)
        return ChaseState(book=book, outbox=state.outbox.settle(event).add(*owed))

    def decide(self, state: ChaseState, now: float) -> Sequence[Command]:
        return [*state.outbox.pending(), *state.book.turns_to_start()]

    def describe(self, state: ChaseState) -> dict[str, object]:
        return {"lanes": state.book.describe()}

    def prompt(self, state: ChaseState, ctx: TurnContext) -> str:
        lane = state.book.get(ctx.turn.lane or "")
        role = ctx.turn.role
        partner = lane.actors[1] if role == lane.actors[0] else lane.actors[0]
        previous = ""
        if lane.last_error:
            previous = f"\nThe previous turn failed: {lane.last_error}\n"
        shape = json.dumps(
            {
                "status": "progress | deliverable_ready | no_result | blocked",
                "summary": "what you did and found (required)",
                "changes": ["files changed"],
                "evidence": ["observed results"],
                "tests": ["commands run and their outcome"],
                "risks": [],
                "next_step": "the single most useful next step",
            },
            indent=2,
        )
        if ctx.skill:  # the protocol is the mounted skill's: only this turn's facts here
            return (
                f"You are {role}, taking turn {ctx.turn.number} of a flame chase on this "
                f"repository ({ctx.workspace}); your partner is {partner}. Follow the "
                f"{ctx.skill} skill, the flame chase protocol (load it first).\n"
                f"{previous}\nObjective:\n{ctx.objective}\n\n"
                f"Write your turn report as JSON to {ctx.report_path}:\n{shape}\n"
            )
        return (
            f"You are {role}, taking turn {ctx.turn.number} of a flame chase on this "
            f"repository ({ctx.workspace}). You and {partner} take turns, each in a fresh "
            "session: nothing of this conversation reaches the next turn, so leave your work "
            "in the repository and your evidence in the report.\n"
            "Read the repository (and TASK.md if present) first, then do substantial, "
            "tested work toward the objective. Do not invent success.\n"
            f"{previous}\nObjective:\n{ctx.objective}\n\n"
            f"Finish by writing your turn report as JSON to {ctx.report_path}:\n"
            + shape
            + "\nUse status progress when work landed, no_result when a direction is "
            "exhausted, blocked for a concrete blocker. No other keys.\n"
        )

    def skill(self, role: str) -> Skill | None:
        """The flame chase protocol, for both chasers."""
        return chase_skill.SKILL


FLOW = FlameChase()
