"""Progress bars from the plan's weights, and the summary `status` shows: pure functions of the
state, so the same state always renders the same text.

A front's share follows the seed's block spans: block 1 takes it from 0 to 60 %, block 2 to
85 %, block 3 to 99 % (more blocks share what is left up to 99 %), each round a third of its
block's span; approval is 100 %. The whole run is the weighted mean of its fronts.
"""

from __future__ import annotations

from typing import Any

from flamechase.flows.parrallello.plan import PlanSpec
from flamechase.flows.parrallello.state import FrontState, PState

__all__ = ["bar", "describe", "front_fraction", "overall"]

SPANS = (0.60, 0.85, 0.99)


def block_ends(blocks: int) -> list[float]:
    if blocks <= 1:
        return [0.99]
    if blocks == 2:
        return [0.60, 0.99]
    extra = blocks - 3
    ends = list(SPANS)
    if extra:
        step = (0.99 - 0.85) / (extra + 1)
        ends = [0.60, 0.85, *(0.85 + step * (k + 1) for k in range(extra)), 0.99]
    return ends


def front_fraction(front: FrontState, plan: PlanSpec) -> float:
    if front.status == "approved":
        return 1.0
    done = len(front.history)
    if done == 0:
        return 0.0
    ends = block_ends(plan.blocks)
    block = min((done - 1) // plan.rounds_per_block, len(ends) - 1)
    in_block = (done - 1) % plan.rounds_per_block + 1
    start = ends[block - 1] if block else 0.0
    return round(start + (ends[block] - start) * in_block / plan.rounds_per_block, 4)


def overall(state: PState) -> float:
    plan = state.plan
    if plan is None or not state.fronts:
        return 0.0
    total = sum(f.weight for f in plan.fronts)
    got = sum(f.weight * front_fraction(state.fronts[f.id], plan) for f in plan.fronts)
    return round(got / total, 4) if total else 0.0


def bar(fraction: float, width: int = 20) -> str:
    filled = round(min(1.0, max(0.0, fraction)) * width)
    return "[" + "#" * filled + "-" * (width - filled) + f"] {fraction:.0%}"


def _front_row(state: PState, front: FrontState) -> dict[str, Any]:
    assert state.plan is not None
    spec = state.plan.front(front.id)
    rs = front.current
    last = front.history[-1] if front.history else None
    fraction = front_fraction(front, state.plan)
    return {
        "status": front.status,
        "wave": spec.wave,
        "weight": spec.weight,
        "progress": fraction,
        "bar": bar(fraction),
        "block": rs.block if rs else front.block,
        "round": rs.number if rs else front.rounds,
        "phase": rs.phase if rs else None,
        "ceiling": {"blocks": state.plan.blocks, "rounds_per_block": state.plan.rounds_per_block},
        "gate": (front.last_gate.summary if front.last_gate else None),
        "last_verdict": None
        if last is None
        else {
            "round": last.number,
            "approved": last.approved,
            "majors": last.majors,
            "mediums": last.mediums,
            "minors": last.minors,
            "gate": last.gate,
        },
        "open_tickets": [t.brief() for t in front.tickets],
        "prep": front.prep.status,
        "paced": front.paced,
        "blocks": list(front.blocks),
        "integrated": front.integrated,
        "ended": front.ended,
        "place": state.places.get(f"fronts/{front.lane}"),
    }


def describe(state: PState) -> dict[str, Any]:
    """`status`'s summary: the overall bar, a row per front, and per lane its front and role."""
    if state.plan is None:
        return {
            "phase": "planning",
            "planner_errors": list(state.planner_errors),
            "display": ["planning: the planner writes the fronts"],
        }
    fronts = {fid: _front_row(state, f) for fid, f in state.fronts.items()}
    lanes: dict[str, dict[str, Any]] = {}
    for f in state.fronts.values():
        lanes[f.lane] = {"front": f.id, "role": "front lane (prep, review, gates)"}
        for owner, lane in f.owners.items():
            lanes[lane] = {
                "front": f.id,
                "owner": owner,
                "files": list(state.plan.front(f.id).owners[owner]),
            }
    whole = overall(state)
    display = [f"overall {bar(whole)}"] + [
        f"{fid:<10} {row['bar']}  {row['status']}"
        + (f" · block {row['block']} round {row['round']} ({row['phase']})" if row["phase"] else "")
        + (f" · gate {row['gate']}" if row["gate"] else "")
        for fid, row in fronts.items()
    ]
    said = state.usage.line()
    return {
        "usage": state.usage.model_dump() if state.knobs.usage_probe else None,
        "progress": {"overall": whole, "bar": bar(whole)},
        "fronts": fronts,
        "checkpoint": state.checkpoint,
        "spend": state.spend.model_dump(),
        "anomalies": list(state.anomalies[-10:]),
        "lanes": lanes,
        "display": display + ([said] if said else []),
    }
