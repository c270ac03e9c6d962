"""tournament: K solvers, each in a private copy of your tree; the runtime measures every
solution with your evaluator, a judge picks one, the runtime holds the pick to its measurements
and lays the winner over your tree.

    flamechase exec -f docs/examples/tournament_flow.py -a solver_1=claude/opus \
        -a solver_2=codex/gpt-5 -a solver_3=gemini/gemini-2.5-pro -a judge=claude/opus \
        -p evaluator='python3 score.py',budget.cost=20 "Make solve.py faster"
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from flamechase.events.present import Mark, Ranking, Row, Seen, Shown
from flamechase.flow import (
    Command,
    CopyParams,
    DropPlace,
    Emit,
    Event,
    FinishRun,
    Flow,
    FlowEvent,
    FlowState,
    Freeze,
    LaneDef,
    MakePlace,
    Measure,
    Outbox,
    ResultSpec,
    Role,
    Run,
    RunSetup,
    StartTurn,
    TurnContext,
    events,
    runtime_module,
)


class Attempt(BaseModel):
    """A solver's result. `summary` is what the views show of the turn."""

    model_config = ConfigDict(extra="forbid")
    summary: str = Field(min_length=1, max_length=2000)
    claim: float | None = None  # the score the solver expects: shown, never believed


class Pick(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pick: str = Field(min_length=1, max_length=100)  # a lane: "solver-2"
    summary: str = Field(min_length=1, max_length=2000)


class TournamentParams(CopyParams):
    evaluator: str = Field(min_length=1, description="prints the score; run by the runtime")
    pattern: str = Field(default=r"SCORE: ([-+0-9.eE]+)", description="the score in its output")
    metric: str = "score"
    direction: Literal["minimize", "maximize"] = "maximize"
    solvers: int = Field(default=3, ge=2, le=8, description="how many solve, each in a copy")


@events.register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Ruled(FlowEvent):
    """The runtime held the judge's pick to its measurements (`lane`: the winner)."""

    kind: ClassVar[str] = "tournament_ruled"
    pick: str = ""
    upheld: bool = False
    scores: dict[str, float | None] = dataclasses.field(default_factory=dict)
    metric: str = "score"
    direction: Literal["minimize", "maximize"] = "maximize"
    measured_by: str = ""

    def show(self, seen: Seen) -> Shown:
        winner = self.lane or ""
        text = (
            f"The judge picks {self.pick}; the runtime's measurements uphold it"
            if self.upheld
            else f"The judge picks {self.pick}, but the runtime measured {winner} best"
        )
        return Shown(
            f"{text}: {winner} wins with {self.metric} {self.scores.get(winner)}.",
            "best",
            mark=Mark("winner", "good"),  # on the winner's track
            rows=tuple(  # a panel of the flow's own: one row per solver
                Row("tournament", lane, {"score": s, "won": lane == winner})
                for lane, s in self.scores.items()
            ),
            ranking=Ranking(self.metric, self.direction, measured_by=self.measured_by),
        )


class Candidate(FlowState):
    copy_path: str = ""  # the solver's private copy, once made
    solved: bool = False
    summary: str = ""
    out: str = ""  # why it is out (a failed turn, a changed yardstick, no measurement)
    score: float | None = None  # the runtime's measurement


class TournamentState(FlowState):
    params: TournamentParams
    candidates: dict[str, Candidate]  # lane -> its candidate
    places: dict[str, str] = {}  # every place made and not dropped -> its path
    yardstick: dict[str, str] | None = None  # the evaluator's frozen files -> SHA-256
    pick: str = ""
    winner: str = ""
    applied: str = ""  # what laying the winner over your tree did
    failed: str = ""  # why the run cannot go on
    outbox: Outbox = Outbox()


def copy_of(lane: str) -> str:
    return f"copies/{lane}"


def measuring(lane: str) -> str:
    return f"measure/{lane}"


class Tournament(Flow[TournamentState, TournamentParams]):
    name = "tournament"
    summary = (
        "K solvers in private copies; the runtime measures, a judge picks, the runtime checks."
    )
    structural_params = ("solvers",)

    def lanes(self, params: TournamentParams) -> list[LaneDef]:
        n = range(1, params.solvers + 1)
        return [LaneDef(f"solver-{i}", (f"solver_{i}",), copy_of(f"solver-{i}")) for i in n]

    def roles(self, params: TournamentParams) -> list[str]:
        return [*(ln.roles[0] for ln in self.lanes(params)), "judge"]

    def describe_roles(self, params: TournamentParams) -> list[Role]:
        said = {"judge": "reads every solution and picks one (checked against the scores)"}
        return [Role(r, said.get(r, "solves in a private copy")) for r in self.roles(params)]

    def demo_params(self, fields: Mapping[str, Any], evaluator: str) -> dict[str, str]:
        # For `flamechase simulate`: the bundled sample's bench.py prints STEPS, lower is better.
        return {
            "evaluator": evaluator,
            "pattern": r"STEPS: (\d+)",
            "metric": "steps",
            "direction": "minimize",
        }

    def start(self, setup: RunSetup[TournamentParams]) -> TournamentState:
        lanes = {ln.name: Candidate() for ln in setup.lanes}
        return TournamentState(params=setup.params, candidates=lanes)

    def evolve(self, state: TournamentState, event: Event) -> TournamentState:
        state = state.replace(outbox=state.outbox.settle(event))
        if isinstance(event, events.PlaceMade):
            return _place_made(state, event)
        if isinstance(event, events.PlaceDropped):
            return state.replace(places={k: v for k, v in state.places.items() if k != event.place})
        if isinstance(event, events.Frozen):
            if event.error:
                return state.replace(failed=f"the evaluator could not be frozen: {event.error}")
            return state.replace(yardstick=dict(event.files))
        if isinstance(event, events.TurnValid | events.TurnFailed) and event.actor == "judge":
            if isinstance(event, events.TurnFailed):
                return state.replace(failed=f"the judge's turn failed: {event.error[:200]}")
            return _rule(state, str(event.result["pick"]))
        if isinstance(event, events.TurnValid) and event.lane:
            return _set(state, event.lane, solved=True, summary=event.summary)
        if isinstance(event, events.TurnFailed) and event.lane:  # a cut turn is taken again
            return _set(state, event.lane, out=f"its turn failed: {event.error[:200]}")
        if isinstance(event, events.Measured):
            lane = event.key.removeprefix("score:")
            if event.value is None:
                return _set(state, lane, out=f"not measured: {event.error}")
            return _set(state, lane, score=event.value)
        if isinstance(event, events.Ran) and event.key == "apply":
            if not event.ok:
                return state.replace(failed=f"the winner could not be applied: {event.output}")
            said = json.loads(event.output.strip().splitlines()[-1].removeprefix("TREESYNC "))
            return state.replace(applied=f"{said['accepted']['count']} file(s) laid over your tree")
        return state

    def decide(self, state: TournamentState, now: float) -> Sequence[Command]:
        p, out = state.params, state.outbox.pending()
        if state.failed:
            return [FinishRun("failed", state.failed)]
        if "baseline" not in state.places:  # your tree as the run found it, for measuring
            return [MakePlace("baseline", label="the baseline (your tree at the start)")]
        if state.yardstick is None:
            return [Freeze("yardstick", place="baseline", command=p.evaluator)]
        for lane, c in state.candidates.items():
            if not c.copy_path:
                out.append(MakePlace(copy_of(lane), label=f"{lane}'s private copy"))
            elif not c.solved and not c.out:
                out.append(
                    StartTurn(
                        role=lane.replace("-", "_"),  # solver-2's role is solver_2
                        lane=lane,
                        number=1,
                        place=copy_of(lane),
                        result=ResultSpec(Attempt, noun="attempt"),
                    )
                )
            elif c.solved and not c.out and c.score is None:
                out.append(_measure_step(state, lane))
            elif measuring(lane) in state.places:
                out.append(DropPlace(measuring(lane)))  # measured: its copy may go
        if out or state.winner == "":
            return out or [self._judging(state)]
        if not state.applied:
            return [_apply(state)]
        return [FinishRun("finished", f"{state.winner} won ({state.applied})")]

    def _judging(self, state: TournamentState) -> Command:
        scored = [c for c in state.candidates.values() if c.score is not None]
        if not scored:
            return FinishRun("failed", "no solution could be measured")
        if "judging" not in state.places:  # the judge writes nothing that matters
            return MakePlace("judging", how="empty", label="the judge's desk")
        copies = {lane: c.copy_path for lane, c in state.candidates.items() if not c.out}
        return StartTurn(
            role="judge",
            lane=None,
            number=1,
            place="judging",
            result=ResultSpec(Pick, noun="pick"),
            reads=tuple(copy_of(lane) for lane in copies),  # read-only, hidden otherwise
            env={"TOURNAMENT_COPIES": json.dumps(copies)},
            counted=False,  # the judge does not spend budget.turns
        )

    def prompt(self, state: TournamentState, ctx: TurnContext) -> str:
        p = state.params
        if ctx.turn.role == "judge":
            scores = "".join(
                f"\n- {lane} ({c.copy_path}): {p.metric} {c.score}, says: {c.summary}"
                for lane, c in state.candidates.items()
                if c.score is not None
            )
            return (
                f"Objective: {ctx.objective}\nThese solutions were measured ({p.direction}):"
                f"{scores}\nRead them and pick the best. Write JSON to {ctx.report_path}: "
                '{"pick": "solver-N", "summary": "why"}'
            )
        return (
            f"Objective: {ctx.objective}\nWork in {ctx.workspace}, your private copy. The "
            f"runtime measures your solution with `{p.evaluator}` ({p.metric}, "
            f"{p.direction}); do not change {', '.join(state.yardstick or {}) or 'it'}. Write "
            f'JSON to {ctx.report_path}: {{"summary": "what you did", "claim": <score>}}'
        )

    def describe(self, state: TournamentState) -> dict[str, Any]:
        lanes = {
            lane: {"score": c.score, "out": c.out or None} for lane, c in state.candidates.items()
        }
        shown = [
            f"{lane}: {c.score if c.score is not None else c.out or '…'}"
            for lane, c in state.candidates.items()
        ]
        if state.winner:
            shown.append(f"winner: {state.winner} (the judge picked {state.pick})")
        return {"winner": state.winner or None, "display": shown, "lanes": lanes}


def _set(state: TournamentState, lane: str, **changes: Any) -> TournamentState:
    candidate = state.candidates[lane].replace(**changes)
    return state.replace(candidates={**state.candidates, lane: candidate})


def _place_made(state: TournamentState, made: events.PlaceMade) -> TournamentState:
    state = state.replace(places={**state.places, made.place: made.path})
    kind, _, lane = made.place.partition("/")
    if kind == "copies":
        return _set(state, lane, copy_path=made.path)
    # An overlay lists what the solver changed: a frozen file among them is a changed yardstick.
    touched = sorted(set(made.changed + made.deleted) & set(state.yardstick or {}))
    if kind == "measure" and touched:
        return _set(state, lane, out=f"changed the evaluator's {', '.join(touched)}")
    return state


def _measure_step(state: TournamentState, lane: str) -> Command:
    """Measured in a fresh copy of the baseline with the solver's changes laid over it and the
    evaluator's frozen files put back: the solver's own copy is never what is measured."""
    if measuring(lane) not in state.places:
        over = copy_of(lane)
        return MakePlace(
            measuring(lane), how="overlay", base="baseline", over=over, restore="yardstick"
        )
    p = state.params
    return Measure(
        key=f"score:{lane}",
        place=measuring(lane),
        command=p.evaluator,
        pattern=p.pattern,
        lane=lane,
        label=f"{lane}'s solution",
        metric=p.metric,
        direction=p.direction,
    )


def _rule(state: TournamentState, pick: str) -> TournamentState:
    """The pick stands if the runtime measured it best (ties too); else the best one wins."""
    p = state.params
    scores = {lane: c.score for lane, c in state.candidates.items()}
    sign = 1 if p.direction == "maximize" else -1
    best = max(s * sign for s in scores.values() if s is not None)
    picked = scores.get(pick)
    upheld = picked is not None and picked * sign >= best
    winner = (
        pick if upheld else next(k for k, s in scores.items() if s is not None and s * sign == best)
    )
    ruled = Ruled(
        lane=winner,
        pick=pick,
        upheld=upheld,
        scores=scores,
        metric=p.metric,
        direction=p.direction,
        measured_by=p.evaluator,
    )
    return state.replace(pick=pick, winner=winner, outbox=state.outbox.add(Emit(ruled)))


def _apply(state: TournamentState) -> Command:
    """Lay the winner's changes over your tree, never the evaluator's frozen files."""
    argv = runtime_module(
        "flamechase.tools.treesync",
        "apply",
        "--from",
        state.candidates[state.winner].copy_path,
        "--allow",
        "**",
        "--frozen",
        *(state.yardstick or {}),
    )
    return Run(
        key="apply",
        place="source",
        argv=argv,
        reads=(copy_of(state.winner),),
        label=f"treesync apply of {state.winner}'s copy to your tree",
    )


FLOW = Tournament()
