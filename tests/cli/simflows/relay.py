"""relay: an author and a reviewer take turns in one lane on your tree, the draft handed on
until the reviewer accepts it or the rounds run out.

Written as an outside author would, on the public API only (`flamechase.flow`), with result
schemas of its own (nested models, enums, bounds, lists) and no simulated actor.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from flamechase.flow import (
    Command,
    Emit,
    Event,
    FinishRun,
    Flow,
    FlowEvent,
    FlowParams,
    LaneDef,
    ResultSpec,
    RunSetup,
    StartTurn,
    TurnContext,
    events,
)

LANE = "relay"


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")
    heading: str = Field(min_length=1, max_length=60)
    words: int = Field(ge=10, le=500)


class Draft(BaseModel):
    """What the author's turn ends with."""

    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=1, max_length=80)
    sections: list[Section] = Field(min_length=1, max_length=4)
    stage: Literal["outline", "draft", "final"]


class Review(BaseModel):
    """What the reviewer's turn ends with."""

    model_config = ConfigDict(extra="forbid")
    verdict: Literal["accept", "revise"]
    score: int = Field(ge=1, le=5)
    notes: list[str] = Field(default_factory=list, max_length=5)


@events.register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BatonPassed(FlowEvent):
    kind: ClassVar[str] = "baton_passed"
    round: int = 0
    verdict: str = ""
    score: int = 0

    def describe(self) -> str:
        return f"Round {self.round}: the reviewer says {self.verdict} ({self.score}/5)."


class RelayParams(FlowParams):
    rounds: int = Field(default=4, ge=1, le=20, description="drafts before the relay ends")


class RelayState(BaseModel):
    model_config = ConfigDict(frozen=True)
    rounds: int
    turn: int = 0  # lane turns done
    draft: dict[str, Any] | None = None
    review: dict[str, Any] | None = None
    passed: int = 0  # rounds whose baton event is journaled


class Relay(Flow[RelayState]):
    name = "relay"
    summary = "An author and a reviewer hand a draft on until it is accepted."
    Params = RelayParams
    State = RelayState
    resumable = False

    def roles(self, params: FlowParams) -> list[str]:
        return ["author", "reviewer"]

    def lanes(self, params: FlowParams) -> list[LaneDef]:
        return [LaneDef(LANE, ("author", "reviewer"))]

    def start(self, setup: RunSetup) -> RelayState:
        assert isinstance(setup.params, RelayParams)
        return RelayState(rounds=setup.params.rounds)

    def evolve(self, state: RelayState, event: Event) -> RelayState:
        if isinstance(event, events.TurnValid) and event.lane == LANE:
            key = "draft" if event.actor == "author" else "review"
            return state.model_copy(update={"turn": state.turn + 1, key: dict(event.result)})
        if isinstance(event, BatonPassed):
            return state.model_copy(update={"passed": event.round})
        return state

    def decide(self, state: RelayState, now: float) -> Sequence[Command]:
        done = state.turn // 2  # rounds with a review
        if done > state.passed and state.review is not None:
            review = state.review
            return [Emit(BatonPassed(round=done, verdict=review["verdict"], score=review["score"]))]
        if state.review is not None and state.review["verdict"] == "accept":
            title = (state.draft or {}).get("title", "")
            return [FinishRun("finished", f"accepted in round {done}: {title}")]
        if done >= state.rounds:
            return [
                FinishRun("finished", f"not accepted after {done} rounds; the last draft stays")
            ]
        role = "author" if state.turn % 2 == 0 else "reviewer"
        model = Draft if role == "author" else Review
        spec = ResultSpec(model, noun="draft" if role == "author" else "review")
        return [StartTurn(role=role, lane=LANE, number=state.turn + 1, result=spec)]

    def prompt(self, state: RelayState, ctx: TurnContext) -> str:
        if ctx.turn.role == "author":
            notes = (state.review or {}).get("notes", [])
            return (
                f"Write or revise the document for: {ctx.objective}\nThe reviewer asked: "
                f"{notes or 'nothing yet'}\nThen write JSON to {ctx.report_path}: "
                f"{json.dumps(ctx.turn.result.json_schema())}"
            )
        return (
            f"Review the draft {state.draft} against: {ctx.objective}\nWrite JSON to "
            f"{ctx.report_path}: {json.dumps(ctx.turn.result.json_schema())}"
        )

    def describe(self, state: RelayState) -> dict[str, Any]:
        return {"round": state.turn // 2, "review": state.review}


FLOW = Relay()
