"""tournament: K solvers work in parallel copies; a judge picks a winner; the runtime checks.

A flow written against the public API only (`flamechase.flow`): a lane per solver in a
private copy of your tree, a measurement of every entry by the runtime (`Measure` with a
metric: the leaderboard ranks them), a judge whose turn is outside lanes and who reads every
solver's copy, and event kinds of its own (a `bracket` panel, an alert when the judge's pick
is not what the runtime measured best). The views must tell its story in its words only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

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
    Measure,
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

JUDGE = "judge"
BENCH = "bench"


class Entry(BaseModel):
    """What a solver's turn ends with: the score it claims."""

    model_config = ConfigDict(extra="forbid")
    claim: int = Field(ge=0)


class Pick(BaseModel):
    """What the judge's turn ends with."""

    model_config = ConfigDict(extra="forbid")
    winner: str
    why: str = ""


class TournamentParams(FlowParams):
    solvers: int = Field(default=3, ge=2, le=6)
    scorer: str = Field(default="python3 score.py", description="prints SCORE: <int>")


def solver(i: int) -> str:
    return f"solver-{i}"


def arena(lane: str) -> str:
    return f"arena/{lane}"


@events.register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BracketOpened(FlowEvent):
    kind: ClassVar[str] = "bracket_opened"
    entrants: list[str] = dataclasses.field(default_factory=list)

    def show(self, seen: Seen) -> Shown:
        return Shown(
            f"The tournament bracket opens with {len(self.entrants)} entrants.",
            "plan",
            rows=tuple(Row("bracket", e, {"standing": "solving"}) for e in self.entrants),
        )


@events.register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class EntryScored(FlowEvent):
    kind: ClassVar[str] = "entry_scored"
    claim: int = 0
    score: int | None = None

    def show(self, seen: Seen) -> Shown:
        return Shown(
            f"Tournament entry of {self.lane} scored by the runtime: {self.score} "
            f"(it claimed {self.claim}).",
            "info",
            mark=Mark(f"entry scored {self.score}"),
            rows=(
                Row(
                    "bracket",
                    self.lane or "",
                    {"standing": "scored", "claim": self.claim, "score": self.score},
                ),
            ),
        )


@events.register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TournamentDecided(FlowEvent):
    kind: ClassVar[str] = "tournament_decided"
    winner: str = ""
    score: int | None = None
    picked: str = ""
    entrants: list[str] = dataclasses.field(default_factory=list)

    def show(self, seen: Seen) -> Shown:
        upheld = self.picked == self.winner
        rows = tuple(
            Row("bracket", e, {"standing": "winner" if e == self.winner else "out"})
            for e in self.entrants
        )
        if upheld:
            return Shown(
                f"Tournament decided: {self.winner} wins with {self.score}, the judge's pick, "
                "upheld by the runtime's scores.",
                "best",
                rows=rows,
            )
        text = (
            f"The judge picked {self.picked}, but {self.winner} scored higher ({self.score}): "
            f"the tournament goes to {self.winner}."
        )
        return Shown(text, "best", rows=rows, alert=text)


class TournamentState(BaseModel):
    model_config = ConfigDict(frozen=True)
    entrants: tuple[str, ...]
    scorer: str
    places: dict[str, str] = {}
    claims: dict[str, int] = {}
    scores: dict[str, int | None] = {}
    pick: str | None = None
    decided: bool = False
    outbox: Outbox = Outbox()


class Tournament(Flow[TournamentState]):
    name = "tournament"
    summary = "Solvers in parallel copies; a judge picks; the runtime's scores decide."
    Params = TournamentParams
    State = TournamentState

    def lanes(self, params: FlowParams) -> list[LaneDef]:
        n = params.solvers if isinstance(params, TournamentParams) else 3
        return [LaneDef(solver(i), (f"solver_{i}",), arena(solver(i))) for i in range(1, n + 1)]

    def roles(self, params: FlowParams) -> list[str]:
        return [*(r for ln in self.lanes(params) for r in ln.roles), JUDGE]

    def start(self, setup: RunSetup) -> TournamentState:
        assert isinstance(setup.params, TournamentParams)
        entrants = tuple(ln.name for ln in self.lanes(setup.params))
        opened = Emit(BracketOpened(entrants=list(entrants)))
        return TournamentState(
            entrants=entrants, scorer=setup.params.scorer, outbox=Outbox().add(opened)
        )

    def evolve(self, state: TournamentState, event: Event) -> TournamentState:
        state = state.model_copy(update={"outbox": state.outbox.settle(event)})
        if isinstance(event, events.PlaceMade):
            return state.model_copy(update={"places": {**state.places, event.place: event.path}})
        if isinstance(event, events.TurnValid) and event.lane in state.entrants:
            claims = {**state.claims, event.lane: int(event.result["claim"])}
            return state.model_copy(update={"claims": claims})
        if isinstance(event, events.Measured) and event.key.startswith("entry/"):
            lane = event.key.removeprefix("entry/")
            score = int(event.value) if event.value is not None else None
            scored = EntryScored(lane=lane, claim=state.claims.get(lane, 0), score=score)
            return state.model_copy(
                update={
                    "scores": {**state.scores, lane: score},
                    "outbox": state.outbox.add(Emit(scored)),
                }
            )
        if isinstance(event, events.TurnValid) and event.actor == JUDGE:
            return self._decided(state, str(event.result["winner"]))
        return state

    def _decided(self, state: TournamentState, pick: str) -> TournamentState:
        best = max(state.entrants, key=lambda e: state.scores.get(e) or -1)
        decided = TournamentDecided(
            winner=best, score=state.scores.get(best), picked=pick, entrants=list(state.entrants)
        )
        return state.model_copy(
            update={"pick": pick, "decided": True, "outbox": state.outbox.add(Emit(decided))}
        )

    def decide(self, state: TournamentState, now: float) -> Sequence[Command]:
        out: list[Command] = list(state.outbox.pending())
        missing = [e for e in state.entrants if arena(e) not in state.places]
        if missing or BENCH not in state.places:
            out += [
                MakePlace(arena(e), label=f"{e}'s workbench, a copy of your tree") for e in missing
            ]
            if BENCH not in state.places:
                out.append(MakePlace(BENCH, label="the judge's bench, a copy of your tree"))
            return out
        if state.decided:
            return out or [FinishRun("finished", f"{self._winner(state)} wins the tournament")]
        for e in state.entrants:
            if e not in state.claims:
                out.append(
                    StartTurn(
                        role=f"solver_{e.removeprefix('solver-')}",
                        lane=e,
                        number=1,
                        place=arena(e),
                        result=ResultSpec(Entry, noun="entry"),
                    )
                )
            elif e not in state.scores:
                out.append(
                    Measure(
                        key=f"entry/{e}",
                        place=arena(e),
                        command=state.scorer,
                        pattern=r"SCORE: (\d+)",
                        lane=e,
                        label=f"{e}'s entry",
                        metric="score",
                        direction="maximize",
                    )
                )
        if len(state.scores) == len(state.entrants):
            out.append(
                StartTurn(
                    role=JUDGE,
                    lane=None,
                    number=1,
                    place=BENCH,
                    reads=tuple(arena(e) for e in state.entrants),
                    result=ResultSpec(Pick, noun="pick"),
                )
            )
        return out

    def _winner(self, state: TournamentState) -> str:
        return max(state.entrants, key=lambda e: state.scores.get(e) or -1)

    def prompt(self, state: TournamentState, ctx: TurnContext) -> str:
        if ctx.turn.role == JUDGE:
            return (
                f"Judge the entries {', '.join(state.entrants)}; write JSON to "
                f'{ctx.report_path}: {{"winner": "solver-N", "why": "..."}}'
            )
        return (
            f"Solve in {ctx.workspace}: {ctx.objective}\n"
            f'Write JSON to {ctx.report_path}: {{"claim": <your score>}}'
        )

    def describe(self, state: TournamentState) -> dict[str, Any]:
        return {"scores": state.scores, "pick": state.pick}


FLOW = Tournament()
