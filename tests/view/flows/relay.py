"""relay: an author and a reviewer carry one baton, leg after leg, in a copy of your tree.

A flow written against the public API only (`flamechase.flow`), as someone else would write
it: one lane whose two roles alternate in a private copy, a result schema of its own (`Leg`),
and event kinds of its own that show themselves in its own words, with a panel (`legs`),
marks on the lane's track and an alert when the baton is dropped. The views must tell its
story with nothing of another flow's.
"""

from __future__ import annotations

import dataclasses
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
    MakePlace,
    Mark,
    Outbox,
    ResultSpec,
    Row,
    RunSetup,
    Seen,
    Shown,
    StartTurn,
    TurnContext,
    events,
)

LANE = "relay"
TRACK = "track"
ROLES = ("author", "reviewer")


class Leg(BaseModel):
    """What a runner's turn ends with."""

    model_config = ConfigDict(extra="forbid")
    baton: str = Field(min_length=1, max_length=200)
    verdict: Literal["carry", "drop"] = "carry"


class RelayParams(FlowParams):
    legs: int = Field(default=4, ge=1, le=50, description="legs before the relay is over")


@events.register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BatonPassed(FlowEvent):
    kind: ClassVar[str] = "baton_passed"
    leg: int = 0
    baton: str = ""
    to: str = ""

    def show(self, seen: Seen) -> Shown:
        return Shown(
            f"Relay leg {self.leg} is run: {self.actor} passes the baton “{self.baton}” to "
            f"{self.to}.",
            "report",
            mark=Mark(f"baton to {self.to}", "good"),
            rows=(Row("legs", f"leg {self.leg}", {"runner": self.actor, "baton": self.baton}),),
        )


@events.register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BatonDropped(FlowEvent):
    kind: ClassVar[str] = "baton_dropped"
    leg: int = 0

    def show(self, seen: Seen) -> Shown:
        text = f"The baton falls on relay leg {self.leg} ({self.actor}): the leg is run again."
        return Shown(
            text,
            "warn",
            mark=Mark("baton dropped", "bad"),
            rows=(Row("legs", f"leg {self.leg}", {"runner": self.actor, "baton": "dropped"}),),
            alert=text,
        )


@events.register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RelayOver(FlowEvent):
    kind: ClassVar[str] = "relay_over"
    legs: int = 0
    drops: int = 0

    def show(self, seen: Seen) -> Shown:
        return Shown(
            f"The relay is over: {self.legs} legs carried, the baton dropped {self.drops} time(s).",
            "best",
        )


class RelayState(BaseModel):
    model_config = ConfigDict(frozen=True)
    legs: int
    leg: int = 1  # the leg being run
    turns: int = 0  # valid turns so far: who runs next, and the next turn's number
    drops: int = 0
    placed: bool = False
    over: bool = False
    outbox: Outbox = Outbox()


class Relay(Flow[RelayState]):
    name = "relay"
    summary = "An author and a reviewer carry one baton, leg after leg."
    Params = RelayParams
    State = RelayState

    def roles(self, params: FlowParams) -> list[str]:
        return list(ROLES)

    def lanes(self, params: FlowParams) -> list[LaneDef]:
        return [LaneDef(LANE, ROLES, TRACK)]

    def start(self, setup: RunSetup) -> RelayState:
        assert isinstance(setup.params, RelayParams)
        return RelayState(legs=setup.params.legs)

    def evolve(self, state: RelayState, event: Event) -> RelayState:
        state = state.model_copy(update={"outbox": state.outbox.settle(event)})
        if isinstance(event, events.PlaceMade) and event.place == TRACK:
            return state.model_copy(update={"placed": True})
        if not isinstance(event, events.TurnValid) or event.lane != LANE:
            return state
        runner = event.actor or ""
        turns = state.turns + 1
        if event.result.get("verdict") == "drop":
            dropped = BatonDropped(lane=LANE, actor=runner, leg=state.leg)
            return state.model_copy(
                update={
                    "turns": turns,
                    "drops": state.drops + 1,
                    "outbox": state.outbox.add(Emit(dropped)),
                }
            )
        nxt = ROLES[turns % 2]
        said: list[Command] = [
            Emit(
                BatonPassed(
                    lane=LANE, actor=runner, leg=state.leg, baton=event.result["baton"], to=nxt
                )
            )
        ]
        over = state.leg >= state.legs
        if over:
            said.append(Emit(RelayOver(lane=LANE, legs=state.legs, drops=state.drops)))
        return state.model_copy(
            update={
                "turns": turns,
                "leg": state.leg + (0 if over else 1),
                "over": over,
                "outbox": state.outbox.add(*said),
            }
        )

    def decide(self, state: RelayState, now: float) -> Sequence[Command]:
        out: list[Command] = list(state.outbox.pending())
        if not state.placed:
            return [*out, MakePlace(TRACK, label="the relay's track, a copy of your tree")]
        if state.over:
            return out or [FinishRun("finished", f"the relay carried {state.legs} legs")]
        role = ROLES[state.turns % 2]
        return [
            *out,
            StartTurn(
                role=role,
                lane=LANE,
                number=state.turns + 1,
                place=TRACK,
                result=ResultSpec(Leg, noun="leg"),
            ),
        ]

    def prompt(self, state: RelayState, ctx: TurnContext) -> str:
        return (
            f"Run leg {state.leg} of the relay in {ctx.workspace}: {ctx.objective}\n"
            f'Write JSON to {ctx.report_path}: {{"baton": "...", "verdict": "carry"|"drop"}}'
        )

    def describe(self, state: RelayState) -> dict[str, Any]:
        return {"leg": state.leg, "drops": state.drops}


FLOW = Relay()
