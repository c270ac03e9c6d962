"""parallel_flame_chase's decider: plan, lanes, reports, artifacts and the leaderboard."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from flamechase import events as ev
from flamechase.flow import (
    Command,
    Emit,
    FinishRun,
    Flow,
    FlowState,
    LaneDef,
    MakePlace,
    Outbox,
    Role,
    Run,
    RunSetup,
    SimActor,
    Skill,
    TurnContext,
)
from flamechase.flow.lanes import LaneBook, report_id
from flamechase.flows.parallel_flame_chase import candidates, planner, staleness
from flamechase.flows.parallel_flame_chase import copies as pfc_copies
from flamechase.flows.parallel_flame_chase import events as pev
from flamechase.flows.parallel_flame_chase import measure as pfc_measure
from flamechase.flows.parallel_flame_chase import prompts as pfc_prompts
from flamechase.flows.parallel_flame_chase import refresh as pfc_refresh
from flamechase.flows.parallel_flame_chase import sim as pfc_sim
from flamechase.flows.parallel_flame_chase import skill as pfc_skill
from flamechase.flows.parallel_flame_chase.lane_params import MeasuredLaneParams
from flamechase.flows.parallel_flame_chase.planner import GO_ON, PLANNER, UNHOLD, Planning
from flamechase.flows.parallel_flame_chase.plans import PlanResult


class ParallelParams(MeasuredLaneParams):
    evaluator: str | None = Field(
        default=None,
        min_length=1,
        max_length=1000,
        description="shell command the runtime runs to measure a submission",
    )
    evaluator_files: list[str] = Field(
        default_factory=list,
        max_length=100,
        description="globs of files the evaluator uses besides those its command names; "
        "frozen at the start, a submission that changes them is not measured",
    )
    lane_refresh: Literal["rebase", "never"] = Field(
        default="rebase",
        description="rebase: before a lane 2..N turn, carry the lane copy's changes onto "
        "lane 1's tree once lane 1 had a valid turn since (conflicts keep the lane's "
        "version and are named in its prompt); never: copies stay on the tree they began on",
    )


class PfcState(FlowState):
    params: ParallelParams
    book: LaneBook
    outbox: Outbox = Outbox()
    places: dict[str, str] = {}  # place name -> path, once made
    plan: dict[str, Any] | None = None
    revision: int = 0  # the last revision planned
    planning: Planning | None = Planning()
    fingerprint: str = ""  # of the objective being planned for
    candidates: tuple[dict[str, Any], ...] = ()
    measuring: dict[str, dict[str, Any]] = {}  # report id -> its submission, until measured
    frozen: dict[str, str] | None = None  # the evaluator's files (path -> sha256) once frozen
    freeze_error: str | None = None
    dropping: tuple[str, ...] = ()  # measurement places to remove
    source: str = ""  # the user's tree (lane 1's), what lane copies are refreshed onto
    lane1_valid: int = 0  # valid lane-1 turns: how far lane 1's tree has moved
    lane1_turns: tuple[int, ...] = ()  # the turn number of each valid lane-1 turn
    fresh: dict[str, pfc_refresh.Fresh] = {}  # private lane -> the lane-1 tree it is on
    written_at: dict[str, int] = {}  # lane 2..N report id -> lane1_valid its copy was on
    written_tree: dict[str, str] = {}  # ... and that tree's commit in the refresh repository
    copied_at: dict[str, int] = {}  # private lane -> lane1_valid when its copy was (re)made


def lane_name(n: int) -> str:
    return f"lane-{n}"


def lane_place(n: int) -> str:
    return "source" if n == 1 else f"lanes/lane-{n}"


class ParallelFlameChase(Flow[PfcState, ParallelParams]):
    name = "parallel_flame_chase"
    summary = (
        "A coordinator plans N lanes and leaves; two actors alternate in each lane; "
        "only lane 1 writes your tree."
    )
    version = "2"
    Params = ParallelParams
    State = PfcState
    structural_params = ("lanes",)
    # Hooks for a flow built on this one (parallel_flame_chase_mission): its plan's model, and
    # whether two failed turns or a `blocked` report hold a lane.
    plan_result: type[BaseModel] = PlanResult
    holds = True

    # ---- declarations ----------------------------------------------------------------------

    def lanes(self, params: ParallelParams) -> list[LaneDef]:
        n = params.lanes
        return [
            LaneDef(f"lane-{i}", (f"lane_{i}_actor_a", f"lane_{i}_actor_b"), lane_place(i))
            for i in range(1, n + 1)
        ]

    def roles(self, params: ParallelParams) -> list[str]:
        return [PLANNER, *(r for lane in self.lanes(params) for r in lane.roles)]

    def describe_roles(self, params: ParallelParams) -> list[Role]:
        said = {PLANNER: "plans one mission per lane, once, and leaves the run"}
        for lane in self.lanes(params):
            where = (
                "your tree (the only lane that writes it)"
                if lane.in_source
                else "a private copy; reaches lane 1 by reports and artifacts"
            )
            for role in lane.roles:
                said[role] = f"{lane.name}, taking turns, on {where}"
        return [Role(r, said.get(r, "")) for r in self.roles(params)]

    def copies_needed(self, params: ParallelParams, *, fresh: bool, revised: bool) -> int:
        return len(self.copy_names(params, fresh=fresh, revised=revised))

    def copy_names(self, params: ParallelParams, *, fresh: bool, revised: bool) -> list[str]:
        if not fresh:
            return ["planning"] if revised else []
        private = [ln.name for ln in self.lanes(params) if not ln.in_source]
        rebase = params.lane_refresh == "rebase"
        return pfc_copies.names(private, rebase=rebase, evaluator=bool(params.evaluator))

    def demo_params(self, fields: Mapping[str, Any], evaluator: str) -> dict[str, str]:
        # The bundled sample's bench.py prints `STEPS: <int>`, lower is better.
        return {
            "evaluator": evaluator,
            "metric_pattern": r"STEPS: (\d+)",
            "metric": "steps",
            "direction": "minimize",
        }

    def simulator(self) -> SimActor:
        return pfc_sim.ACTOR

    # ---- folding ---------------------------------------------------------------------------

    def start(self, setup: RunSetup[ParallelParams]) -> PfcState:
        params = setup.params
        book = LaneBook.open(
            setup.run_id,
            setup.lanes,
            holds=self.holds,
            shares_reports=True,
            system_reports=True,
            remedy=UNHOLD,
        )
        state = PfcState(params=params, book=book, source=setup.source)
        declared = candidates.declared(params.model_dump())
        if declared:
            state = state.replace(
                outbox=state.outbox.add(
                    Emit(
                        pev.LeaderboardDeclared(
                            metric=declared["metric"],
                            direction=declared["direction"],
                            measured_by_runtime=True,
                            command=params.evaluator,
                        )
                    )
                )
            )
        return state

    def evolve(self, state: PfcState, event: ev.Event) -> PfcState:
        book, owed = state.book.evolve(event)
        out = state.outbox.settle(event).add(*owed)
        state = state.replace(book=book, outbox=out)
        if isinstance(event, ev.PlaceMade):
            state = state.replace(places={**state.places, event.place: event.path})
            made = [n for n, ln in state.book.lanes.items() if ln.place == event.place]
            if made and not state.book.get(made[0]).in_source:
                state = state.replace(copied_at={**state.copied_at, made[0]: state.lane1_valid})
            return self._measure_place(state, event)
        if isinstance(event, ev.PlaceDropped):
            lane = next((n for n, ln in state.book.lanes.items() if ln.place == event.place), "")
            return state.replace(
                dropping=tuple(p for p in state.dropping if p != event.place),
                places={k: v for k, v in state.places.items() if k != event.place},
                fresh=pfc_refresh.dropped(state.fresh, lane) if lane else state.fresh,
            )
        if isinstance(event, ev.Frozen) and event.key == pfc_measure.FROZEN:
            return state.replace(frozen=event.files, freeze_error=event.error)
        if isinstance(event, ev.RunResumed) and event.params:
            params = self.Params.model_validate(event.params)
            return state.replace(params=params)
        if isinstance(event, ev.ObjectiveRevised):
            return state.replace(
                planning=Planning(revision=state.revision + 1), fingerprint=event.task_fingerprint
            )
        if event.lane is None and event.actor == PLANNER:
            return self._planning(state, event)
        if isinstance(event, ev.Ran) and event.key.startswith(pfc_refresh.PREFIX):
            lane = event.key[len(pfc_refresh.PREFIX) :].split(":", 1)[0]
            nxt = state.book.get(lane).turns + 1
            fresh = pfc_refresh.ran(state.fresh, event, nxt, state.lane1_valid)
            return state.replace(fresh=fresh or state.fresh)
        if isinstance(event, ev.TurnValid) and event.lane:
            state = self._written(state, event, event.lane)
        if isinstance(event, ev.TurnStarted) and event.lane == lane_name(1):
            return self._inbox_marked(state, event)
        if isinstance(event, ev.TurnValid) and event.result.get("submission"):
            return self._submitted(state, event)
        if isinstance(event, ev.Measured) and event.key in state.measuring:
            return self._measured(state, event)
        return state

    def _planning(self, state: PfcState, event: ev.Event) -> PfcState:
        p = state.planning
        step = None if p is None else planner.fold(p, event, state.book.lanes, state.fingerprint)
        if p is None or step is None:
            return state
        state = state.replace(planning=step.planning, outbox=state.outbox.add(*step.owed))
        if step.plan is not None:
            # The plan is in the event: its snapshots (this revision's and any superseded
            # one's) hold nothing the run needs any more, and a tree's worth of bytes each.
            spent = [k for k in state.places if k.startswith("planning/")]
            state = state.replace(
                plan=step.plan,
                revision=p.revision,
                dropping=(*state.dropping, *(k for k in spent if k not in state.dropping)),
            )
        return state

    def _written(self, state: PfcState, event: ev.TurnValid, lane: str) -> PfcState:
        """Lane 1 moved on, or a lane's report was written against the tree its copy is on."""
        if lane == lane_name(1):
            return state.replace(
                lane1_valid=state.lane1_valid + 1, lane1_turns=(*state.lane1_turns, event.turn)
            )
        fresh = state.fresh.get(lane)
        rid = report_id(state.book.run_id, lane, event.turn, event.attempt)
        # A copy never refreshed is on the tree it was made from.
        on = fresh.on if fresh is not None and fresh.base else state.copied_at.get(lane, 0)
        tree = fresh.base if fresh is not None else ""
        dated = pev.ReportDated(
            lane=lane,
            report_id=rid,
            lane_1_turns=on,
            lane_1_tree=tree,
            behind=max(0, state.lane1_valid - on),
        )
        return state.replace(
            written_at={**state.written_at, rid: on},
            written_tree={**state.written_tree, rid: tree},
            outbox=state.outbox.add(Emit(dated)),
        )

    def _inbox_marked(self, state: PfcState, event: ev.TurnStarted) -> PfcState:
        """What lane 1's prompt said of each lane report in its inbox, for the views."""
        marks = {
            rid: staleness.freshness(state.written_at[rid], state.lane1_valid)
            for rid in event.delivered
            if rid in state.written_at
        }
        if not marks:
            return state
        said = pev.InboxMarked(lane=event.lane, turn=event.turn, marks=marks)
        return state.replace(outbox=state.outbox.add(Emit(said)))

    def _submitted(self, state: PfcState, event: ev.TurnValid) -> PfcState:
        lane = event.lane or ""
        rid = report_id(state.book.run_id, lane, event.turn, event.attempt)
        sub = dict(event.result["submission"])
        if state.params.evaluator:
            return state.replace(
                book=state.book.wait_for(lane, rid),
                measuring={
                    **state.measuring,
                    rid: {"sub": sub, "role": event.actor, "lane": lane, "at": event.at},
                },
            )
        return self._add_candidate(state, rid, lane, event.actor, event.at, sub, None)

    def _measure_place(self, state: PfcState, made: ev.PlaceMade) -> PfcState:
        """A submission's measurement copy exists: measure it, unless it touched frozen files."""
        rid = made.place.removeprefix("measure/")
        info = state.measuring.get(rid)
        if info is None or made.place != pfc_measure.place_of(rid):
            return state
        touched = pfc_measure.tampered(made, state.frozen or {})
        if not touched:
            return state
        state = self._done_measuring(state, rid)
        report = pfc_measure.system_report(rid, info["lane"], state.book.run_id, made.at, touched)
        state = state.replace(outbox=state.outbox.add(report))
        receipt = {
            "error": "tampered: the submission changed the evaluator's files " + ", ".join(touched),
            "tampered": touched,
            "value": None,
        }
        return self._add_candidate(
            state, rid, info["lane"], info["role"], info["at"], info["sub"], receipt
        )

    def _done_measuring(self, state: PfcState, rid: str) -> PfcState:
        rest = {k: v for k, v in state.measuring.items() if k != rid}
        return state.replace(
            measuring=rest,
            book=state.book.done_waiting(rid),
            dropping=(*state.dropping, pfc_measure.place_of(rid)),
        )

    def _measured(self, state: PfcState, event: ev.Measured) -> PfcState:
        info = state.measuring[event.key]
        state = self._done_measuring(state, event.key)
        # The state keeps the receipt without the output itself (its hash stays).
        receipt = {k: v for k, v in event.receipt.items() if k != "output"}
        return self._add_candidate(
            state, event.key, info["lane"], info["role"], info["at"], info["sub"], receipt
        )

    def _add_candidate(
        self,
        state: PfcState,
        rid: str,
        lane: str,
        role: str | None,
        at: str,
        sub: Mapping[str, Any],
        receipt: Mapping[str, Any] | None,
    ) -> PfcState:
        row, announce = candidates.record(
            state.candidates,
            state.params.model_dump(),
            report_id=rid,
            lane=lane,
            role=role,
            at=at,
            sub=sub,
            receipt=receipt,
        )
        return state.replace(
            candidates=(*state.candidates, row),
            outbox=state.outbox.add(*(Emit(e) for e in announce)),
        )

    # ---- deciding --------------------------------------------------------------------------

    def decide(self, state: PfcState, now: float) -> Sequence[Command]:
        out: list[Command] = list(state.outbox.pending())
        p = state.params
        out += [pfc_measure.drop(place) for place in state.dropping]
        private = [ln for ln in state.book.lanes.values() if not ln.in_source]
        # The first private lane's copy is the planner's snapshot, dropped once it planned.
        waiting = private[:1] if state.planning is not None else []
        out += [
            MakePlace(ln.place, label=f"{ln.name}'s private copy of your tree")
            for ln in private
            if ln.place not in state.places
            and ln not in waiting
            and pfc_refresh.between_turns(state.book.lanes)
        ]
        if p.evaluator:
            if state.freeze_error:
                return [
                    FinishRun(
                        "failed", f"cannot freeze the evaluator's files: {state.freeze_error}"
                    )
                ]
            ready = pfc_measure.setup(p.evaluator, p.evaluator_files, state.places, state.frozen)
            if ready:  # nothing runs before the baseline and the frozen evaluator exist
                return out + ready
        if state.planning is not None:
            return out + planner.commands(
                state.planning, state.places, state.book.lanes, self.plan_result
            )
        # One at a time, in the one kept copy (no two evaluators sharing the cores either).
        for key, info in list(state.measuring.items())[:1]:
            lane = state.book.get(info["lane"])
            out += pfc_measure.steps(
                key,
                info,
                lane.place,
                state.places,
                p.evaluator or "",
                p.metric_pattern,
                p.evaluator_timeout,
            )
        if any(ln.place not in state.places for ln in private):
            return out
        if (
            state.book.all_held()
            and not state.measuring
            and not state.outbox
            and not state.dropping
        ):
            return [*out, FinishRun("held", state.book.held_message(GO_ON))]
        return out + self._turns(state)

    def _turns(self, state: PfcState) -> list[Command]:
        """The lanes' next turns, a lane 2..N turn after its copy is on lane 1's tree."""
        turns = state.book.turns_to_start()
        if state.params.lane_refresh == "never":
            return list(turns)
        lanes = list(state.book.lanes.values())
        runs = pfc_refresh.commands(
            state.fresh, lanes, state.places, state.lane1_valid, state.source, state.copied_at
        )
        wait = pfc_refresh.waiting(state.fresh, lanes, state.lane1_valid, state.source)
        if any(r.key.split(":")[2] == "record" for r in runs if isinstance(r, Run)):
            # Every copy's base is recorded before any lane (lane 1 too) starts: the base is
            # then the tree the copy was made from, and the lanes start together as before.
            return runs
        return [*runs, *(t for t in turns if t.lane not in wait)]

    # ---- words -----------------------------------------------------------------------------

    def prompt(self, state: PfcState, ctx: TurnContext) -> str:
        if ctx.turn.lane is None:
            return pfc_prompts.plan_prompt(
                objective=ctx.objective,
                lanes=list(state.book.lanes),
                previous_errors=state.planning.errors if state.planning else (),
                workspace_map=ctx.workspace_map,
                report_path=ctx.report_path,
                skill=ctx.skill,
            )
        lane = state.book.get(ctx.turn.lane)
        letter = "a" if ctx.turn.role == lane.actors[0] else "b"
        mission = None
        for entry in (state.plan or {}).get("lanes", []):
            if entry.get("lane") == lane.name and isinstance(entry.get("mission"), dict):
                mission = entry["mission"]
        note = pfc_refresh.note(state.fresh.get(lane.name), ctx.turn.number, state.lane1_turns)
        return note + pfc_prompts.lane_prompt(
            run_id=ctx.run_id,
            lane=lane.name,
            in_source=lane.in_source,
            role=ctx.turn.role,
            actor=letter,
            partner=lane.actors[1 if letter == "a" else 0],
            turn=ctx.turn.number,
            workspace=ctx.workspace,
            artifact_root=ctx.artifact_root,
            leaderboard=candidates.board(state.candidates, state.params.model_dump()),
            objective=ctx.objective,
            mission=mission,
            consecutive_failures=lane.consecutive_failures,
            last_error=lane.last_error,
            workspace_map=ctx.workspace_map,
            inbox=(
                staleness.mark(ctx.inbox, state.written_at, state.lane1_valid, state.written_tree)
                if lane.in_source
                else ctx.inbox
            ),
            inbox_path=ctx.inbox_path,
            checkpoint_path=ctx.checkpoint_path,
            checkpoint_identity=ctx.checkpoint_identity,
            report_path=ctx.report_path,
            skill=ctx.skill,
        )

    def skill(self, role: str) -> Skill | None:
        """The lane protocol, for every lane actor and the coordinator that plans for them."""
        return pfc_skill.SKILL

    def repair_prompt(self, state: PfcState, ctx: TurnContext, reason: str) -> str:
        if ctx.turn.lane is None:
            return pfc_prompts.plan_repair_prompt(reason, ctx.report_path)
        return super().repair_prompt(state, ctx, reason)

    def describe(self, state: PfcState) -> dict[str, Any]:
        return {
            "plan": state.plan,
            "leaderboard": candidates.board(state.candidates, state.params.model_dump()),
            "lanes": state.book.describe(),
            "reports": staleness.describe(state.written_at, state.written_tree, state.lane1_valid),
        }


FLOW = ParallelFlameChase()
