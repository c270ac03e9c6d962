"""tournament: K solvers work in parallel copies, the runtime measures each, a judge picks one,
and the runtime verifies the pick against its own measurements.

Written as an outside author would, on the public API only (`flamechase.flow`), with result
schemas of its own and no simulated actor: `flamechase simulate` must answer its turns from
the schemas alone.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from flamechase.flow import (
    Command,
    Emit,
    Event,
    FinishRun,
    Flow,
    FlowEvent,
    FlowParams,
    MakePlace,
    Measure,
    ResultSpec,
    RunSetup,
    StartTurn,
    TurnContext,
    events,
)


class Solution(BaseModel):
    """What a solver's turn ends with."""

    model_config = ConfigDict(extra="forbid")
    approach: str = Field(min_length=1, max_length=120)
    changed_files: list[str] = Field(default_factory=list, max_length=5)
    expected_score: int = Field(ge=0)
    confidence: float = Field(ge=0, le=1)


@functools.cache
def pick_model(solvers: int) -> type[BaseModel]:
    """The judge's answer: which solver (1..K, a bound the schema states) and why."""
    return create_model(
        "Pick",
        __config__=ConfigDict(extra="forbid"),
        winner=(int, Field(ge=1, le=solvers)),
        reason=(str, Field(min_length=1, max_length=300)),
        certainty=(Literal["low", "medium", "high"], "medium"),
    )


@events.register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TournamentDecided(FlowEvent):
    kind: ClassVar[str] = "tournament_decided"
    winner: str = ""
    picked: str = ""
    score: float | None = None
    verified: bool = False

    def describe(self) -> str:
        if self.verified:
            return (
                f"{self.winner} wins the tournament ({self.score:g}): the judge's pick, verified."
            )
        return (
            f"{self.winner} wins the tournament ({self.score}): the judge picked "
            f"{self.picked}, overruled."
        )


class TournamentParams(FlowParams):
    solvers: int = Field(default=3, ge=2, le=6, description="solvers working in parallel")
    evaluator: str = Field(default="python3 bench.py", description="prints the score")
    score_pattern: str = Field(default=r"STEPS: (\d+)", description="the score in its output")


class TournamentState(BaseModel):
    model_config = ConfigDict(frozen=True)
    params: TournamentParams
    places: dict[str, str] = {}
    solutions: dict[str, dict[str, Any]] = {}
    scores: dict[str, float | None] = {}
    pick: dict[str, Any] | None = None
    decided: TournamentDecided | None = None


def solvers(n: int) -> list[str]:
    return [f"solver_{i}" for i in range(1, n + 1)]


class Tournament(Flow[TournamentState]):
    name = "tournament"
    summary = "K solvers in parallel copies; the runtime measures; a judge picks; verified."
    Params = TournamentParams
    State = TournamentState
    resumable = False

    def roles(self, params: FlowParams) -> list[str]:
        n = params.solvers if isinstance(params, TournamentParams) else 3
        return [*solvers(n), "judge"]

    def start(self, setup: RunSetup) -> TournamentState:
        assert isinstance(setup.params, TournamentParams)
        return TournamentState(params=setup.params)

    def evolve(self, state: TournamentState, event: Event) -> TournamentState:
        if isinstance(event, events.PlaceMade):
            return state.model_copy(update={"places": {**state.places, event.place: event.path}})
        if isinstance(event, events.TurnValid) and event.actor == "judge":
            return state.model_copy(update={"pick": dict(event.result)})
        if isinstance(event, events.TurnValid) and event.actor in self.roles(state.params):
            solutions = {**state.solutions, event.actor or "": dict(event.result)}
            return state.model_copy(update={"solutions": solutions})
        if isinstance(event, events.Measured) and event.key.startswith("score/"):
            scores = {**state.scores, event.key.removeprefix("score/"): event.value}
            return state.model_copy(update={"scores": scores})
        if isinstance(event, TournamentDecided):
            return state.model_copy(update={"decided": event})
        return state

    def decide(self, state: TournamentState, now: float) -> Sequence[Command]:
        p = state.params
        names = solvers(p.solvers)
        if state.decided is not None:
            d = state.decided
            how = "verified" if d.verified else f"the judge's {d.picked} overruled"
            score = "no score" if d.score is None else f"{d.score:g}"
            return [FinishRun("finished", f"{d.winner} wins with {score} ({how})")]
        if state.pick is not None:
            return [Emit(self._verify(state))]
        out: list[Command] = []
        for role in names:
            place = f"copy-{role}"
            if place not in state.places:
                out.append(MakePlace(place, label=f"{role}'s copy"))
            elif role not in state.solutions:
                out.append(
                    StartTurn(
                        role=role,
                        lane=None,
                        number=1,
                        place=place,
                        result=ResultSpec(Solution, noun="solution"),
                    )
                )
            elif role not in state.scores:
                out.append(
                    Measure(
                        key=f"score/{role}",
                        place=place,
                        command=p.evaluator,
                        pattern=p.score_pattern,
                        label=f"{role}'s score",
                        metric="score",
                        direction="minimize",
                    )
                )
        if out:
            return out
        spec = ResultSpec(pick_model(p.solvers), noun="pick")
        return [
            StartTurn(role="judge", lane=None, number=1, result=spec, reads=tuple(state.places))
        ]

    def _verify(self, state: TournamentState) -> TournamentDecided:
        """The judge's pick stands if the runtime measured it best; else the best does."""
        assert state.pick is not None
        picked = solvers(state.params.solvers)[int(state.pick["winner"]) - 1]
        measured = {k: v for k, v in state.scores.items() if v is not None}
        best = min(measured.values(), default=None)
        if best is not None and measured.get(picked) == best:
            return TournamentDecided(winner=picked, picked=picked, score=best, verified=True)
        winner = min(measured, key=lambda k: measured[k]) if measured else picked
        return TournamentDecided(winner=winner, picked=picked, score=best, verified=False)

    def prompt(self, state: TournamentState, ctx: TurnContext) -> str:
        if ctx.turn.role == "judge":
            return (
                f"Judge the solvers' copies {sorted(state.places.values())} against the "
                f"objective: {ctx.objective}\nWrite your pick as JSON to {ctx.report_path}: "
                f"{json.dumps(ctx.turn.result.json_schema())}"
            )
        return (
            f"Solve the objective in {ctx.workspace}: {ctx.objective}\nThen write JSON to "
            f"{ctx.report_path}: {json.dumps(ctx.turn.result.json_schema())}"
        )

    def describe(self, state: TournamentState) -> dict[str, Any]:
        return {"scores": state.scores, "pick": state.pick}


FLOW = Tournament()
