"""parrallello: fronts of fresh builders, an adversarial critic, and gates that decide.

    flamechase exec -f parrallello -a builder=claude/claude-sonnet-4-5 \
        -a critic=claude/claude-opus-4-5:high -a prep=codex/gpt-5 \
        -p plan=PLAN.yaml,budget.cost=200 "$(cat TASK.md)"

The runtime runs the protocol (an optional `lead` session, or the runtime's rules, decides
between blocks): it checkpoints the source, preps future fronts,
opens fronts wave by wave, runs the rounds (fresh builders on their own files, the gate
`--full`, a fresh critic), recounts every verdict and applies the approval rule itself, paces
blocks by their spend, and integrates approved fronts into the source. See docs/parrallello.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from flamechase import events as ev
from flamechase.flow import (
    Command,
    Emit,
    FinishRun,
    Flow,
    LaneDef,
    Role,
    RunSetup,
    SimActor,
    Skill,
    TurnContext,
    WaitUntil,
)
from flamechase.flows.parrallello import (
    briefs,
    checkpoint,
    closing,
    control,
    front,
    onward,
    planner,
    progress,
    pulse,
    skills,
    usage,
    weeks,
)
from flamechase.flows.parrallello import events as fev
from flamechase.flows.parrallello import roles as parrallello_roles
from flamechase.flows.parrallello import runtime as rt
from flamechase.flows.parrallello import sim as fronts_sim
from flamechase.flows.parrallello.params import ParrallelloParams
from flamechase.flows.parrallello.plan import lane_names
from flamechase.flows.parrallello.planner import PLANNER
from flamechase.flows.parrallello.rounds import Ctx, on_turn
from flamechase.flows.parrallello.state import ENDED, FrontState, Knobs, PState, spec_of

__all__ = ["FLOW", "Parrallello"]


def usage_rest(f: FrontState) -> bool:
    """The front does nothing more while the run is paused on the extra credit."""
    return f.done or bool(f.usage_paused) or (f.status == "waiting" and f.prep.status != "running")


BUILDER, CRITIC, PREP, LEAD = "builder", "critic", "prep", "lead"
TOOL_TRIES = 2  # a runtime program (a copy, a diff, a hash) that fails is run once more
ANOMALIES_KEPT = 200  # anomalies kept in the state (every one is also an `anomaly` event)


def _owe(state: PState, owed: Sequence[Command], at: str) -> PState:
    """`owed` into the outbox, and every anomaly among it into the run's state: what the
    runtime detected is state (`status`), not only an event."""
    seen = [
        {
            "what": c.event.what,
            "front": c.event.front,
            "round": c.event.round,
            "detail": c.event.detail,
            "at": at,
        }
        for c in owed
        if isinstance(c, Emit) and isinstance(c.event, fev.Anomaly)
    ]
    anomalies = (*state.anomalies, *seen)[-ANOMALIES_KEPT:] if seen else state.anomalies
    return state.replace(
        outbox=state.outbox.add(*owed),
        anomalies=anomalies,
        anomaly_count=state.anomaly_count + len(seen),
    )


def _limits(budget: dict[str, Any]) -> dict[str, float]:
    return {
        k: float(v)
        for k, v in budget.items()
        if k in ("cost", "turns", "output_tokens", "duration")
        and isinstance(v, int | float)
        and v > 0
    }


class Parrallello(Flow[PState, ParrallelloParams]):
    name = "parrallello"
    summary = (
        "Fronts of fresh builders on files of their own, an adversarial critic and "
        "gates the runtime runs; approval = 0 majors, 0 mediums, every gate PASS."
    )
    Params = ParrallelloParams
    State = PState
    structural_params = ("plan", "fronts", "prep", "lead")

    # ---- declarations ------------------------------------------------------------------------

    def roles(self, params: ParrallelloParams) -> list[str]:
        return [
            *([PLANNER] if params.loaded_plan is None else []),
            BUILDER,
            CRITIC,
            *([PREP] if params.prep else []),
            *([LEAD] if params.lead else []),
        ]

    def describe_roles(self, params: ParrallelloParams) -> list[Role]:
        return parrallello_roles.described(self.roles(params))

    def lanes(self, params: ParrallelloParams) -> list[LaneDef]:
        out = []
        for lane, builders in lane_names(params.loaded_plan, params.fronts, params.lead):
            # The front's lane also takes its one prep turn; listed with one role, the views
            # do not take its critics and its prep for two actors handing a tree back and forth.
            out.append(LaneDef(lane, (CRITIC,), rt.front_place(lane)))
            out += [LaneDef(b, (BUILDER,), rt.builder_place(b)) for b in builders]
        return out

    def copies_needed(self, params: ParrallelloParams, *, fresh: bool, revised: bool) -> int:
        return len(self.copy_names(params, fresh=fresh, revised=revised))

    def copy_names(self, params: ParrallelloParams, *, fresh: bool, revised: bool) -> list[str]:
        if not fresh:
            return []
        p = params
        names = [ln.place for ln in self.lanes(params)]
        names += [rt.critic_place(lane) for lane, _ in lane_names(p.loaded_plan, p.fronts)]
        if p.prep:
            names += [rt.stage_place(lane) for lane, _ in lane_names(p.loaded_plan, p.fronts)]
        return names if p.loaded_plan is not None else ["planning", *names]

    def demo_params(self, fields: Mapping[str, Any], evaluator: str) -> dict[str, str]:
        # A planner, a prep per front and a few rounds each: more turns than the default 12.
        return {"budget.turns": "40"}

    def simulator(self) -> SimActor:
        return fronts_sim.ACTOR

    # ---- folding -------------------------------------------------------------------------------

    def start(self, setup: RunSetup[ParrallelloParams]) -> PState:
        p = setup.params
        slots = tuple((lane, tuple(b)) for lane, b in lane_names(p.loaded_plan, p.fronts, p.lead))
        state = PState(knobs=Knobs.of(p), run_id=setup.run_id, slots=slots)
        if p.checkpoint == "off":
            state = checkpoint.off(state)
        plan = p.loaded_plan
        if plan is None:
            return state
        return state.replace(
            plan=plan,
            fronts=planner.fronts_of(plan, slots),
            outbox=state.outbox.add(planner.planned(plan, p.plan or "")),
        )

    def evolve(self, state: PState, event: ev.Event) -> PState:
        state = state.replace(outbox=state.outbox.settle(event))
        if isinstance(event, ev.RunCreated):
            return state.replace(created_at=event.at, limits=_limits(event.budget))
        if isinstance(event, ev.RunResumed):
            knobs = Knobs(
                **{
                    **state.knobs.model_dump(),
                    **{k: v for k, v in event.params.items() if k in Knobs.model_fields},
                }
            )
            state = state.replace(limits=_limits(event.budget), knobs=knobs)
            u, said = usage.resumed(state.usage, probing=bool(knobs.usage_probe))
            state = state.replace(usage=u)
            # A pause lifted without a probe to ask: the paused fronts go on now.
            return self._settle(state, [Emit(said)], event.at) if said else state
        if isinstance(event, ev.PlaceMade):
            state = state.replace(places={**state.places, event.place: event.path})
            return self._each(state, lambda f, _c: (front.on_place(f, event.place), []), event)
        if isinstance(event, ev.Ran):
            return self._ran(state, event)
        if isinstance(event, ev.TurnEnded):
            return self._turn_ended(state, event)
        if (
            isinstance(event, fev.RoundStarted)
            and event.in_block == 1
            and event.front in state.fronts
        ):
            # A block starts with its first round: the week's share it starts from.
            f = state.fronts[event.front].replace(week_at_start=state.usage.shares.get("weekly"))
            return state.replace(fronts={**state.fronts, event.front: f})
        if isinstance(event, pulse.Pulse):
            return state.replace(
                pulses={**state.pulses, pulse.slot(event.front, event.block): event.number}
            )
        if isinstance(event, ev.TurnStarted) and event.actor == PLANNER:
            return state.replace(planner_busy=True)
        return state

    def _ctx(self, state: PState, f: FrontState, at: str) -> Ctx:
        assert state.plan is not None
        u = state.usage
        spec = spec_of(state.plan, f)
        week = u.shares.get("weekly")
        return Ctx(state.plan, spec, state.knobs, state.places, at, u.stop, u.pause, week)

    def _each(self, state: PState, change: Any, event: ev.Event) -> PState:
        """Apply `change(front, ctx) -> (front, owed)` to every front, then move them on."""
        owed: list[Command] = []
        fronts = dict(state.fronts)
        for fid, f in state.fronts.items():
            fronts[fid], more = change(f, self._ctx(state, f, event.at))
            owed += more
        return self._settle(state.replace(fronts=fronts), owed, event.at)

    def _settle(self, state: PState, owed: list[Command], at: str) -> PState:
        """Move every round on, end what cannot go on, and owe the events of it all."""
        share = state.spend.share(state.limits)
        fronts = dict(state.fronts)
        # A round's end waits for the probe asked after it (and the first, and a resume's).
        ended = sum(len(f.history) for f in state.fronts.values())
        asking = bool(state.knobs.usage_probe) and (
            state.usage.asking or usage.due(state.usage, ended)
        )
        lifted = not (state.usage.pause or asking)
        for fid, was in state.fronts.items():
            f = was
            if f.usage_paused and lifted:
                f, more = onward.go_on(f, self._ctx(state, f, at))
                owed += more
            fronts[fid], more = closing.advance(f, self._ctx(state, f, at), state.limits, share)
            owed += more
        state = state.replace(fronts=fronts)
        if state.plan is None:
            return _owe(state, owed, at)
        state, more = self._blocked(state, at, share)
        owed += more
        for c in list(owed):  # the control plane, written from the state once it moved on
            if isinstance(c, Emit) and isinstance(c.event, fev.BlockEnded):
                state = control.snapshot(state, c.event.front, c.event.block)
        whole, tally = progress.overall(state), progress.tally(state)
        owed = [
            Emit(dataclasses.replace(c.event, overall=whole, tally=tally))
            if isinstance(c, Emit) and isinstance(c.event, fev.VerdictRecorded | fev.FrontEnded)
            else c
            for c in owed
        ]
        return _owe(state, owed, at)

    def _blocked(self, state: PState, at: str, share: float) -> tuple[PState, list[Command]]:
        """Waiting fronts that can never start: a dependency not approved, or the budget."""
        assert state.plan is not None
        owed: list[Command] = []
        fronts = dict(state.fronts)
        changed = True
        while changed:
            changed = False
            for spec in state.plan.fronts:
                f = fronts[spec.id]
                if f.status != "waiting":
                    continue
                failed = [
                    d
                    for d in spec.depends_on
                    if fronts[d].status in ENDED
                    and (
                        fronts[d].status != "approved" or (fronts[d].integrated or {}).get("error")
                    )
                ]
                # (on a usage threshold a waiting front only waits: until the reset)
                reason = (
                    f"depends on {', '.join(failed)}, which did not land"
                    if failed
                    else f"{share:.0%} of a budget is spent"
                    if share >= state.knobs.stop_share
                    else None
                )
                if reason:
                    fronts[spec.id], more = onward.end_front(
                        f, self._ctx(state, f, at), "blocked" if failed else "stopped", reason
                    )
                    owed += more
                    changed = True
        return state.replace(fronts=fronts), owed

    def _ran(self, state: PState, event: ev.Ran) -> PState:
        key = rt.parse_key(event.key)
        if key is None:
            return state
        if key.what == "checkpoint":
            return checkpoint.ran(state, event)
        if key.what == "usage":
            return self._usage_read(state, event)
        if key.what == "release":
            return state.replace(release=control.result(event.receipt))
        if key.what == "control":
            return control.ran(state, event.key, event.receipt)
        failed = rt.tool_failed(key, event.receipt)
        if failed:  # never judge work on a copy that failed: once more, then stop the run
            tries = state.retried.get(event.key, 0) + 1
            fatal = (
                f"the runtime's {key.what} for front {key.front} failed twice: {failed}"
                if tries >= TOOL_TRIES
                else None
            )
            anomaly = fev.Anomaly(
                front=key.front,
                round=key.round,
                what="runtime-failed",
                detail=f"{key.what}: {failed}",
            )
            state = state.replace(retried={**state.retried, event.key: tries}, fatal=fatal)
            return _owe(state, [Emit(anomaly)], event.at)
        f = state.fronts.get(key.front)
        if f is None:
            return state
        nf, owed = front.on_ran(f, key, event.receipt, self._ctx(state, f, event.at))
        return self._settle(state.replace(fronts={**state.fronts, f.id: nf}), owed, event.at)

    def _usage_read(self, state: PState, event: ev.Ran) -> PState:
        """The probe answered: its reading judged, and after a block the share of the week
        the block spent (`weeks`)."""
        ended = sum(len(f.history) for f in state.fronts.values())
        at = pulse.epoch(event.at) or 0.0
        u, read = usage.answered(state.usage, event.receipt, at, ended)
        state = state.replace(usage=u, outbox=state.outbox.add(Emit(read)))
        fronts, said = dict(state.fronts), []
        for fid, was in state.fronts.items():
            fronts[fid], more = weeks.read(was, u.shares.get("weekly"), state.knobs)
            said += more
        return self._settle(state.replace(fronts=fronts), said, event.at)

    def _turn_ended(self, state: PState, event: ev.TurnEnded) -> PState:
        counted = int(event.counted and isinstance(event, ev.TurnValid | ev.TurnFailed))
        state = state.replace(spend=state.spend.plus(event.cost_usd, counted, event.output_tokens))
        if event.usage_shares:  # what the turn's CLI said of the account: judged as the probe
            by = f"{event.usage_source or 'its CLI'} at a {event.actor} turn"
            u, read = usage.reported(state.usage, dict(event.usage_shares), by)
            state = state.replace(usage=u, outbox=state.outbox.add(*([Emit(read)] if read else [])))
        if event.lane is None:
            return planner.on_turn(state, event) if event.actor == PLANNER else state
        f = next(
            (
                f
                for f in state.fronts.values()
                if event.lane == f.lane or event.lane in f.owners.values()
            ),
            None,
        )
        if f is None:
            return state
        if f.status == "building":
            f = f.replace(
                block_spend=f.block_spend.plus(event.cost_usd, counted, event.output_tokens)
            )
        owed: list[Command] = []
        if event.actor == PREP:
            f, owed = front.on_prep_turn(f, event)
        elif event.actor == LEAD:
            f, owed = front.on_lead_turn(f, event, self._ctx(state, f, event.at))
        else:
            f = on_turn(f, event)
        return self._settle(state.replace(fronts={**state.fronts, f.id: f}), owed, event.at)

    # ---- deciding ------------------------------------------------------------------------------

    def decide(self, state: PState, now: float) -> Sequence[Command]:
        out: list[Command] = list(state.outbox.pending())
        if state.fatal:
            return [*out, FinishRun("failed", state.fatal)]
        if state.plan is None:
            return out + planner.commands(state)
        if state.checkpoint is None:
            out.append(checkpoint.take(state))
        elif failed := checkpoint.failed(state):
            return [*out, failed]
        probe = state.knobs.usage_probe
        if probe:
            ended = sum(len(f.history) for f in state.fronts.values())
            # Every 2 h while fronts remain: the reset a waiting front waits for.
            timed = not all(f.done for f in state.fronts.values())
            if usage.due(state.usage, ended, now if timed else 0.0):
                out.append(usage.probe(state.usage.seen + 1, probe, rt.SOURCE))
            elif timed and (at := usage.next_probe(state.usage)) is not None:
                out.append(WaitUntil(at))
            # Nothing starts before the first reading, a resume's, or the one after a round
            # (the seed's "at every end of block": the next block is judged on it).
            if state.usage.asking or usage.due(state.usage, ended):
                return out
        out += control.commands(state)
        for f in state.fronts.values():
            out += front.commands(state, f)
        out += pulse.commands(state, now)
        settled = not state.outbox and state.control_due is None
        fronts = state.fronts.values()
        resting = all(usage_rest(f) for f in fronts) and not all(f.done for f in fronts)
        # Held: on the extra credit; on the weekly or 5 h threshold only with no probe to ask
        # again (with one, the run waits for the reset, asking it every 2 h).
        stop = state.usage.stop
        holding = state.usage.pause or (stop and not (probe and usage.probe_reads(stop)))
        if holding and settled and resting:
            return [*out, progress.held(state)]
        if all(f.done for f in state.fronts.values()) and settled:
            return [
                *out,
                *(control.release(state, progress.approved(state)) or [progress.finish(state)]),
            ]
        return out

    # ---- words ---------------------------------------------------------------------------------

    def prompt(self, state: PState, ctx: TurnContext) -> str:
        if ctx.turn.role == PLANNER:
            return briefs.planner_prompt(
                ctx.objective,
                len(state.slots),
                str(ctx.report_path),
                str(ctx.workspace),
                state.planner_errors,
                ctx.skill,
            )
        brief = ctx.turn.note["brief"]
        return briefs.words(brief, str(ctx.report_path), str(ctx.workspace), ctx.skill)

    def skill(self, role: str) -> Skill | None:
        """Each role's rules (skills.py): planner, builder, critic, prep and lead."""
        return skills.for_role(role)

    def repair_prompt(self, state: PState, ctx: TurnContext, reason: str) -> str:
        return (
            f"Your result was rejected: {reason}\nWrite a corrected JSON result for the "
            f"work you just did to {ctx.report_path}, in the shape you were asked for "
            "(do not start new work)."
        )

    def describe(self, state: PState) -> dict[str, Any]:
        return progress.describe(state)


FLOW = Parrallello()
