"""A critic's gate change, tried before it is taken: the yardstick only tightens.

The critic may add items and make targets stricter (`add_items`), taken at once, or
recalibrate with a proof (`recalibrate`: one of the five reasons, its measurement, its date),
taken only when the block ends, so never by the round that would benefit. Either way the
changed gate files are first run in a trial copy of the front's tree (`trials/<F>`, or
`recals/<F>` where a recalibration waits for its block's end), and judged against the
front's contract:

    critic_trial   a copy of the front's tree, the critic's gate files laid into it, hashed,
                   and the gate `--full` run from it (a yardstick)
    critic_apply   an accepted tightening: the gate files taken into the front's tree, hashed
                   again (they must be the ones the trial ran), frozen

A change that drops or renames an item, loosens a target outside a proven recalibration, adds
an item it does not declare, fails closed, or comes while a recalibration waits, is refused:
nothing reaches the front's tree, a major finding and an anomaly are recorded, and the round
is judged on the gate as it was (so it is not approved).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from flamechase.flow import Command, MakePlace
from flamechase.flows.parrallello import runtime as rt
from flamechase.flows.parrallello.gates import GateResult, judge_gate, target_text
from flamechase.flows.parrallello.plan import FrontSpec, PlanSpec
from flamechase.flows.parrallello.state import FrontState, RoundState
from flamechase.flows.parrallello.verdict import GateChange, Proof

__all__ = ["commands", "on_ran", "precheck", "refusal", "trial_contract"]


def declared(rs: RoundState) -> list[GateChange]:
    return [GateChange.model_validate(c) for c in (rs.verdict or {}).get("gate_changes") or []]


def precheck(front: FrontState, rs: RoundState) -> tuple[str, str] | None:
    """(anomaly, why) when the declared change is refused before it is tried."""
    changes = declared(rs)
    recal = [c for c in changes if c.kind == "recalibrate"]
    if front.pending is not None:
        return (
            "gate-change-refused",
            f"a recalibration from round {front.pending.get('round')} waits for its block's "
            "end; the gate changes again only after it is taken",
        )
    for c in recal:
        if not isinstance(c.proof, dict):
            return (
                "recalibration-unproven",
                f"the recalibration of {', '.join(c.items[:5])} has no proof record "
                f"(proof {str(c.proof)[:80]!r}); a proof names one of resolution, noise, "
                "denominator, clock-contention, reference-fails-gate, with its measurement "
                "and date",
            )
        try:
            Proof.model_validate(c.proof)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(x) for x in err.get("loc", ()))
            return ("recalibration-unproven", f"its proof is not valid: {where}: {err['msg']}")
        unknown = [i for i in (*c.targets, *c.removes) if i not in front.contract]
        if unknown:
            return (
                "gate-change-refused",
                f"the recalibration names {unknown[0]}, which is not an item of the contract",
            )
    return None


def trial_contract(front: FrontState, rs: RoundState) -> dict[str, str]:
    """The contract the changed gate must meet: a proven recalibration's new targets and
    removals applied to the front's."""
    contract = dict(front.contract)
    for c in declared(rs):
        if c.kind != "recalibrate":
            continue
        for i in c.removes:
            contract.pop(i, None)
        contract.update({i: target_text(t) for i, t in c.targets.items()})
    return contract


def refusal(front: FrontState, rs: RoundState, gate: GateResult) -> tuple[str, str] | None:
    """(anomaly, why) when the tried gate is not taken."""
    if gate.reason == "dropped-items":
        return ("gate-item-dropped", gate.detail)
    if gate.reason == "loosened":
        return ("gate-loosened", gate.detail)
    if gate.reason is not None:
        return ("gate-change-refused", f"the changed gate fails closed ({gate.reason})")
    said = {i for c in declared(rs) for i in c.items}
    contract = trial_contract(front, rs)
    undeclared = [i for i in gate.targets if i not in contract and i not in said]
    if undeclared:
        return (
            "gate-change-refused",
            f"the changed gate prints item {undeclared[0]}, which gate_changes does not declare",
        )
    return None


def commands(
    front: FrontState,
    rs: RoundState,
    spec: FrontSpec,
    plan: PlanSpec,
    places: Mapping[str, str],
) -> list[Command]:
    """What the trial (`critic_trial`) or the taking (`critic_apply`) still needs."""
    k, fid, n, lane = rt.key, front.id, rs.number, front.lane
    if rs.phase == "critic_apply":
        if not rs.critic_applied:
            return [
                rt.compare(
                    k(fid, "capply", n),
                    lane,
                    rt.critic_place(lane),
                    places.get(rt.critic_place(lane), ""),
                    spec.freeze,
                    (),
                    plan,
                    apply=True,
                )
            ]
        return [rt.freeze_hash(k(fid, "fhash", n), spec, lane)]
    trial = rt.trial_place(lane, rs.trial == "recalibrate")
    if trial not in places:
        return [MakePlace(trial, how="empty", label=f"the trial copy of front {fid}'s gate")]
    if not rs.trial_synced:
        return [
            rt.mirror(
                k(fid, "tsync", n),
                trial,
                lane,
                rt.front_place(lane),
                places.get(rt.front_place(lane), ""),
            )
        ]
    if not rs.trial_applied:
        return [
            rt.compare(
                k(fid, "tapply", n),
                lane,
                rt.critic_place(lane),
                places.get(rt.critic_place(lane), ""),
                spec.freeze,
                (),
                plan,
                apply=True,
                place=trial,
            )
        ]
    if not rs.rehashed:
        return [rt.freeze_hash(k(fid, "rehash", n), spec, lane, place=trial)]
    return [rt.gate_full(k(fid, "regate", n), spec, lane, rs.refrozen or {}, place=trial)]


def on_ran(
    front: FrontState, rs: RoundState, what: str, receipt: Mapping[str, Any], spec: FrontSpec
) -> RoundState:
    out = rt.tool_output(dict(receipt), "TREESYNC")
    if what == "tsync":
        return rs.replace(trial_synced=out is not None and "error" not in out)
    if what == "tapply":
        return rs.replace(trial_applied=True)
    if what == "capply":
        return rs.replace(critic_applied=True)
    if what == "rehash":
        files = (out or {}).get("files")
        return rs.replace(rehashed=True, refrozen=files if isinstance(files, dict) else {})
    if what == "fhash":
        files = (out or {}).get("files")
        return rs.replace(fhashed=files if isinstance(files, dict) else {})
    if what == "regate":
        gate = judge_gate(receipt, only=spec.only, contract=trial_contract(front, rs), tighten=True)
        return rs.replace(regate=gate)
    return rs
