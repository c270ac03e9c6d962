"""A front before and after its rounds: prep, opening, and integration.

- **Prep** (one pass, no critic): as soon as no unfinished front of an earlier wave shares a
  file with it, a `prep` agent works in a snapshot of the source (`stages/<F>`): it stages the
  gate, a baseline and the first tickets, and code in the front's own files.
- **Opening**, once every earlier wave has ended and its dependencies are approved and in the
  source: the front's tree (`fronts/<F>`, a snapshot of the source), the staged files taken
  into it (only the front's own files and gate), the gate files hashed (frozen from here on),
  a baseline `--full` run, and the first round.
- **Integration** of an approved front: its own files and gate copied into the source and
  committed (never pushed).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from flamechase import events as ev
from flamechase.flow import Command, Emit, MakePlace, ResultSpec, StartTurn
from flamechase.flows.parrallello import briefs, lead, rounds
from flamechase.flows.parrallello import events as fev
from flamechase.flows.parrallello import runtime as rt
from flamechase.flows.parrallello import tickets as tk
from flamechase.flows.parrallello.closing import end_front
from flamechase.flows.parrallello.gates import GateResult, judge_gate, target_text
from flamechase.flows.parrallello.plan import FrontSpec
from flamechase.flows.parrallello.rounds import Ctx
from flamechase.flows.parrallello.state import FrontState, PrepState, PState, spec_of
from flamechase.flows.parrallello.verdict import PrepResult
from flamechase.globs import overlap

__all__ = ["commands", "on_lead_turn", "on_place", "on_prep_turn", "on_ran"]

PREP = "prep"
LEAD = "lead"


def _globs(spec: FrontSpec) -> list[str]:
    return [*rt.owned(spec), *spec.freeze]


def collides(a: FrontSpec, b: FrontSpec) -> bool:
    return any(overlap(x, y) is not None for x in _globs(a) for y in _globs(b))


def _earlier(state: PState, spec: FrontSpec) -> list[FrontSpec]:
    assert state.plan is not None
    return [f for f in state.plan.fronts if f.wave < spec.wave]


def prep_allowed(state: PState, spec: FrontSpec) -> bool:
    """No unfinished front of an earlier wave shares a file (or a gate) with this one."""
    return not any(not state.fronts[f.id].done and collides(f, spec) for f in _earlier(state, spec))


def startable(state: PState, front: FrontState, spec: FrontSpec) -> bool:
    if state.checkpoint is None or front.status != "waiting":
        return False
    if state.knobs.prep and front.prep.status not in ("done", "failed"):
        return False
    return all(state.fronts[f.id].done for f in _earlier(state, spec))


def commands(state: PState, front: FrontState) -> list[Command]:
    assert state.plan is not None
    spec = spec_of(state.plan, front)
    ctx = Ctx(state.plan, spec, state.knobs, state.places)
    if front.status == "waiting":
        if (state.usage.pause or state.usage.stop) and front.prep.status != "running":
            return []  # paused on its usage: nothing new starts (a prep under way ends)
        out = _prep_commands(state, front, spec) if state.knobs.prep else []
        if startable(state, front, spec) and rt.front_place(front.lane) not in state.places:
            out.append(MakePlace(rt.front_place(front.lane), label=rt.front_label(front.id)))
        return out
    if front.status == "opening":
        return _opening(state, front, spec)
    if front.status == "building" and front.current is None and front.pending:
        return _recalibrating(state, front, spec)
    if front.status == "building" and front.current is None and front.lead:
        return _leading(state, front, spec)
    if front.status == "building":
        return rounds.commands(front, ctx)
    landing = front.status == "approved" and front.integrated is None
    # A control-plane commit owed goes first: the two never commit in the tree at once.
    if landing and state.control_due is None and _next_to_land(state) == front:
        path = state.places.get(rt.front_place(front.lane), "")
        return [
            rt.integrate(
                spec,
                front.lane,
                path,
                f"parrallello: front {front.id} approved (round {front.rounds})",
            )
        ]
    return []


def _leading(state: PState, front: FrontState, spec: FrontSpec) -> list[Command]:
    """Between blocks: a fresh lead decides, in a place of its own with no code in it."""
    if front.lead.get("status") != "running":
        return []
    place = rt.lead_place(front.lane)
    if place not in state.places:
        return [MakePlace(place, how="empty", label=f"front {front.id}'s lead's desk (no code)")]
    brief = lead.brief(front, spec)
    return [
        StartTurn(
            role=LEAD,
            lane=front.lane,
            number=int(front.lead["turn"]),
            place=place,
            result=ResultSpec(
                lead.LeadDecision, noun="lead decision", context=lead.context(front, spec)
            ),
            env={"FLAMECHASE_BRIEF": json.dumps(brief, ensure_ascii=False)},
            note={"brief": brief},
        )
    ]


def on_lead_turn(
    front: FrontState, event: ev.TurnEnded, ctx: Ctx
) -> tuple[FrontState, list[Command]]:
    front = lead.on_turn(front, event)
    if front.lead.get("status") in ("done", "failed") and front.current is None:
        return lead.between(front, ctx, ctx.knobs.lead)
    return front, []


def _recalibrating(state: PState, front: FrontState, spec: FrontSpec) -> list[Command]:
    """Between blocks: the proven recalibration's gate taken into the front's tree, frozen."""
    assert state.plan is not None and front.pending is not None
    k, lane, n = rt.key, front.lane, front.rounds
    if not front.pending.get("taken"):
        trial = rt.trial_place(lane, recalibration=True)
        return [
            rt.compare(
                k(front.id, "recal", n),
                lane,
                trial,
                state.places.get(trial, ""),
                spec.freeze,
                (),
                state.plan,
                apply=True,
            )
        ]
    return [rt.freeze_hash(k(front.id, "recalhash", n), spec, lane)]


def _recalibrated(
    front: FrontState, receipt: Mapping[str, Any], ctx: Ctx
) -> tuple[FrontState, list[Command]]:
    """The recalibrated gate is in the front's tree: frozen, written into the contract with
    its proof and date, and the next block starts."""
    pending = front.pending or {}
    files = (rt.tool_output(dict(receipt), "TREESYNC") or {}).get("files")
    if not isinstance(files, dict) or files != pending.get("files"):
        front = front.replace(pending=None)
        return end_front(
            front,
            ctx,
            "not_approved",
            "the recalibrated gate in the front's tree is not the one its trial ran",
        )
    changes = [c for c in pending.get("changes", []) if c.get("kind") == "recalibrate"]
    record = {
        "round": pending.get("round"),
        "applied_from_block": front.block + 1,
        "changes": changes,
        "contract": pending.get("contract"),
    }
    front = front.replace(
        frozen=files,
        contract=dict(pending.get("contract") or front.contract),
        recalibrations=(*front.recalibrations, record),
        pending=None,
    )
    refrozen = fev.GateRefrozen(
        lane=front.lane,
        front=front.id,
        round=front.rounds,
        changes=changes,
        files=sorted(files),
    )
    front, started = lead.between(front, ctx, ctx.knobs.lead)
    return front, [Emit(refrozen), *started]


def _next_to_land(state: PState) -> FrontState | None:
    """Approved fronts land in your tree one at a time (one git index), in plan order."""
    return next(
        (f for f in state.fronts.values() if f.status == "approved" and f.integrated is None), None
    )


def _prep_commands(state: PState, front: FrontState, spec: FrontSpec) -> list[Command]:
    assert state.plan is not None
    place = rt.stage_place(front.lane)
    if front.prep.status == "none" and prep_allowed(state, spec) and place not in state.places:
        return [MakePlace(place, label=f"front {front.id}'s staging copy of your tree")]
    if front.prep.status != "running":
        return []
    busy = {f.id: _globs(f) for f in _earlier(state, spec) if not state.fronts[f.id].done}
    brief = briefs.prep_brief(state.plan, spec, busy)
    return [
        StartTurn(
            role=PREP,
            lane=front.lane,
            number=front.prep.turn,
            place=place,
            result=ResultSpec(PrepResult, noun="prep result"),
            env={"FLAMECHASE_BRIEF": json.dumps(brief, ensure_ascii=False)},
            note={"brief": brief},
        )
    ]


def _opening(state: PState, front: FrontState, spec: FrontSpec) -> list[Command]:
    assert state.plan is not None
    k, lane = rt.key, front.lane
    stage = rt.stage_place(lane)
    if front.prep.status == "done" and stage in state.places and not front.opened.get("stage"):
        return [
            rt.compare(
                k(front.id, "stage"),
                lane,
                stage,
                state.places[stage],
                _globs(spec),
                (),
                state.plan,
                apply=True,
            )
        ]
    if not front.opened.get("freeze"):
        return [rt.freeze_hash(k(front.id, "freeze"), spec, lane)]
    return [rt.gate_full(k(front.id, "baseline"), spec, lane, front.frozen or {})]


# ---- folding ------------------------------------------------------------------------------------


def on_place(front: FrontState, name: str) -> FrontState:
    if name == rt.front_place(front.lane) and front.status == "waiting":
        return front.replace(status="opening")
    if name == rt.stage_place(front.lane) and front.prep.status == "none":
        turn = front.lane_turns + 1
        return front.replace(prep=PrepState(status="running", turn=turn), lane_turns=turn)
    return front


def on_prep_turn(front: FrontState, event: ev.TurnEnded) -> tuple[FrontState, list[Command]]:
    p = front.prep
    if (
        p.status != "running"
        or event.turn != p.turn
        or not isinstance(event, ev.TurnValid | ev.TurnFailed)
    ):
        return front, []
    if isinstance(event, ev.TurnValid):
        prep = p.replace(status="done", result=event.result)
        return front.replace(prep=prep), [
            Emit(
                fev.FrontPrepped(
                    lane=front.lane,
                    front=front.id,
                    ok=True,
                    tickets=len(event.result.get("tickets") or []),
                )
            )
        ]
    failures = p.failures + 1
    prep = p.replace(
        failures=failures, error=event.error[:500], status="failed" if failures >= 2 else "running"
    )
    owed: list[Command] = []
    if failures >= 2:
        owed.append(
            Emit(
                fev.FrontPrepped(lane=front.lane, front=front.id, ok=False, error=event.error[:300])
            )
        )
    return front.replace(prep=prep), owed


# long: one branch per runtime program a front runs
def on_ran(
    front: FrontState, key: rt.Key, receipt: Mapping[str, Any], ctx: Ctx
) -> tuple[FrontState, list[Command]]:
    """A receipt of the opening (stage, freeze, baseline) or of the integration."""
    out = rt.tool_output(dict(receipt), "TREESYNC")
    if key.what == "stage":
        return front.replace(opened={**front.opened, "stage": True}), []
    if key.what == "freeze":
        files = (out or {}).get("files")
        if not isinstance(files, dict) or not files:
            front = front.replace(frozen={}, opened={**front.opened, "freeze": True})
            return end_front(
                front,
                ctx,
                "not_approved",
                "no gate: none of its freeze globs "
                f"({', '.join(ctx.spec.freeze)}) names a file in its tree",
            )
        return front.replace(frozen=files, opened={**front.opened, "freeze": True}), []
    if key.what == "baseline":
        return _baseline(front, receipt, ctx)
    if key.what == "recal" and front.pending is not None:
        return front.replace(pending={**front.pending, "taken": True}), []
    if key.what == "recalhash" and front.pending is not None:
        return _recalibrated(front, receipt, ctx)
    if key.what == "integrate":
        done = rt.tool_output(dict(receipt), "GITPOINT") or {
            "error": str(receipt.get("error") or "no output")[:300]
        }
        if receipt.get("exit_code") != 0 and "error" not in done:
            done = {**done, "error": str(receipt.get("error"))}
        return front.replace(integrated=done), [
            Emit(
                fev.FrontIntegrated(
                    lane=front.lane,
                    front=front.id,
                    files=int(done.get("files") or 0),
                    commit=done.get("commit"),
                    error=done.get("error"),
                )
            )
        ]
    front = rounds.on_ran(front, key, receipt, ctx.spec)
    rs = front.current
    gate = (
        None
        if rs is None
        else rs.gate
        if key.what == "gate"
        else (rs.regate if key.what == "regate" else None)
    )
    if gate is None:
        return front, []
    return front, _gate_ran(front, key.round, "round" if key.what == "gate" else "recheck", gate)


def _gate_ran(front: FrontState, rnd: int, stage: str, gate: GateResult) -> list[Command]:
    """The `gate_ran` event, and an anomaly for items whose own `pass` lied."""
    out: list[Command] = [
        Emit(
            fev.GateRan(
                lane=front.lane,
                front=front.id,
                round=rnd,
                stage=stage,
                passed=gate.passed,
                reason=gate.reason,
                detail=gate.detail,
                n=gate.n,
                m=gate.m,
                failing=[str(i.get("id")) for i in gate.failing[:10]],
            )
        )
    ]
    if gate.lied:
        out.append(
            Emit(
                fev.Anomaly(
                    lane=front.lane,
                    front=front.id,
                    round=rnd,
                    what="pass-flag-mismatch",
                    detail=f"the {stage} gate says {', '.join(gate.lied[:5])} pass(es); "
                    "their values miss their targets: counted as failing",
                )
            )
        )
    if gate.reason == "target-moved":
        out.append(
            Emit(
                fev.Anomaly(
                    lane=front.lane,
                    front=front.id,
                    round=rnd,
                    what="target-moved",
                    detail=gate.detail,
                )
            )
        )
    return out


def _baseline(
    front: FrontState, receipt: Mapping[str, Any], ctx: Ctx
) -> tuple[FrontState, list[Command]]:
    contract = {i: target_text(t) for i, t in ctx.spec.targets.items()}
    gate = judge_gate(receipt, only=ctx.spec.only, contract=contract, plan=True)
    if gate.reason == "unbound":  # P0: every plan target is an item of the gate, as planned
        why = f"the gate is refused at P0: {gate.detail}"
        front = front.replace(opened={**front.opened, "baseline": True}, last_gate=gate)
        anomaly = fev.Anomaly(
            lane=front.lane, front=front.id, round=0, what="gate-unbound", detail=gate.detail
        )
        return end_front(
            front, ctx, "not_approved", why, [*_gate_ran(front, 0, "baseline", gate), Emit(anomaly)]
        )
    given = [
        *tk.carried("plan", ctx.spec.tickets),
        *tk.carried(
            "prep",
            PrepResult.model_validate(front.prep.result).tickets if front.prep.result else (),
        ),
    ]
    open_tickets = tk.next_tickets((), given, gate)
    front = front.replace(
        status="building",
        last_gate=gate,
        tickets=open_tickets,
        items=gate.m if gate.reason is None else None,
        contract={**contract, **gate.targets} if gate.reason is None else contract,
        block_started=ctx.at,
        opened={**front.opened, "baseline": True},
    )
    owed: list[Command] = [
        *_gate_ran(front, 0, "baseline", gate),
        Emit(
            fev.FrontStarted(
                lane=front.lane,
                front=front.id,
                wave=ctx.spec.wave,
                frozen=dict(front.frozen or {}),
                baseline=gate.summary,
                tickets=len(open_tickets),
                staged=int(front.opened.get("stage", False)),
            )
        ),
    ]
    front, started = rounds.begin(front, ctx)
    return front, [*owed, *started]
