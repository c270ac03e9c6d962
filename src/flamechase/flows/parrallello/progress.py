"""Progress bars from the plan's weights, and the summary `status` shows: pure functions of the
state, so the same state always renders the same text.

A front's share follows the seed's block spans: block 1 takes it from 0 to 60 %, block 2 to
85 %, block 3 to 99 % (more blocks share what is left up to 99 %), each round a third of its
block's span; approval is 100 %. The whole run is the weighted mean of its fronts, and
never reads 100 % while a front is not approved (a weighted mean of 100 % and 99 % would
round up to it).
"""

from __future__ import annotations

from typing import Any

from flamechase.events.present import plural
from flamechase.flow import FinishRun
from flamechase.flows.parrallello import weeks
from flamechase.flows.parrallello.plan import PlanSpec
from flamechase.flows.parrallello.runtime import front_place
from flamechase.flows.parrallello.state import ENDED, FrontState, PState, spec_of
from flamechase.flows.parrallello.usage import GO_ON, GO_ON_UNPROBED
from flamechase.flows.parrallello.words import stopped_at, week_said

__all__ = ["bar", "describe", "front_fraction", "overall", "stopped", "tally"]

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
    whole = round(got / total, 4) if total else 0.0
    if any(f.status != "approved" for f in state.fronts.values()):
        whole = min(whole, UNAPPROVED_CAP)
    return whole


UNAPPROVED_CAP = 0.99


def tally(state: PState) -> str:
    """Once every front has ended without all approved, the run's count of them, said
    instead of a near-done percentage (`1 of 2 fronts approved`); empty otherwise."""
    fronts = state.fronts.values()
    if not fronts or not all(f.status in ENDED for f in fronts):
        return ""
    good = sum(f.status == "approved" for f in fronts)
    if good == len(state.fronts):
        return ""
    return f"{good} of {plural(len(state.fronts), 'front')} approved"


def stopped(state: PState, front: FrontState) -> dict[str, Any] | None:
    """Where a front that ended unapproved stopped, and where its work stays."""
    if front.status not in ENDED or front.status == "approved":
        return None
    assert state.plan is not None
    return {
        "round": front.rounds,
        "block": front.block if front.rounds else 0,
        "blocks": state.plan.blocks,
        "tree": state.places.get(front_place(front.lane)) if front.rounds else None,
    }


def percent(fraction: float) -> str:
    """`99%`, rounded down: only a whole that is done reads 100 %."""
    return f"{int(min(1.0, max(0.0, fraction)) * 100 + 1e-9)}%"


def bar(fraction: float, width: int = 20) -> str:
    f = min(1.0, max(0.0, fraction))
    filled = int(f * width + 1e-9)
    return "[" + "#" * filled + "-" * (width - filled) + f"] {percent(f)}"


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
        "contract": {
            "targets": dict(front.contract),
            "recalibrations": list(front.recalibrations),
            "pending": None
            if front.pending is None
            else {"round": front.pending.get("round"), "changes": front.pending.get("changes")},
        },
        "lead": {
            "note": front.lead_note,
            "deciding": front.lead.get("status"),
            "decisions": list(front.decisions),
        },
        "prep": front.prep.status,
        "paced": front.paced,
        "blocks": list(front.blocks),
        "week": _week(front),
        "integrated": front.integrated,
        "ended": front.ended,
        "place": state.places.get(front_place(front.lane)),
        "stopped": stopped(state, front),
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
                "files": list(spec_of(state.plan, f).owners[owner]),
            }
    whole, count = overall(state), tally(state)
    display = [f"overall: {count}" if count else f"overall {bar(whole)}"] + [
        _front_line(fid, row) for fid, row in fronts.items()
    ]
    display += _anomaly_lines(state)
    said = state.usage.line()
    return {
        "usage": state.usage.model_dump() if state.knobs.usage_probe else None,
        "progress": {"overall": whole, "bar": bar(whole)},
        "fronts": fronts,
        "checkpoint": state.checkpoint,
        "control": state.control,
        "spend": state.spend.model_dump(),
        "anomalies": list(state.anomalies),
        "anomaly_count": state.anomaly_count,
        "lanes": lanes,
        "display": display + ([said] if said else []),
    }


def _front_line(fid: str, row: dict[str, Any]) -> str:
    """A front in `status`: its bar while it can still be approved; once it ended without
    approval, where it stopped and where its work is (a bar at 99 % would read near done)."""
    gate = f" · gate {row['gate']}" if row["gate"] else ""
    stop = row["stopped"]
    week = row["week"]
    spent = f" · {week_said(week['spent'], week['whole'])}" if week else ""
    if stop is not None:
        where = stopped_at(stop["round"], stop["block"], stop["blocks"], stop["tree"] or "")
        word = str(row["status"]).replace("_", " ")
        return f"{fid:<10} {word.upper()}{gate}{spent} · {where[0].lower()}{where[1:]}"
    phase = f" · block {row['block']} round {row['round']} ({row['phase']})" if row["phase"] else ""
    return f"{fid:<10} {row['bar']}  {row['status']}{phase}{gate}{spent}"


def _week(front: FrontState) -> dict[str, Any] | None:
    """The share of the week the front's ended blocks spent, where read (`weeks`)."""
    found = weeks.spent(front)
    return None if found is None else {"spent": found[0], "whole": found[1]}


ANOMALY_LINES = 5


def _anomaly_lines(state: PState) -> list[str]:
    """The anomalies, counted, and the latest of them in a line each."""
    if not state.anomaly_count:
        return []
    lines = [f"anomalies: {state.anomaly_count} (the runtime detected and acted on them)"]
    for a in state.anomalies[-ANOMALY_LINES:]:
        where = f"front {a.get('front')} round {a.get('round')}" if a.get("front") else "run"
        lines.append(f"  {a.get('what')} ({where}): {str(a.get('detail'))[:160]}")
    return lines


def final_row(front: FrontState) -> str:
    """A front in the run's last line: its end, rounds, score (the last accepted gate run),
    minors left (the last verdict's) and cost (its blocks' spend, and the share of the week
    they spent where it was read: the seed's "cost in % of the week")."""
    last = front.history[-1] if front.history else None
    cost = sum(float((b.get("spend") or {}).get("cost") or 0) for b in front.blocks)
    cost += front.block_spend.cost
    gate = front.last_gate.summary if front.last_gate else "no gate run"
    minors = f", {plural(last.minors, 'minor')} left" if last else ""
    week = weeks.spent(front)
    spent = f", {week_said(*week)}" if week else ""
    return (
        f"{front.id} {front.status.replace('_', ' ')} ({plural(front.rounds, 'round')}, "
        f"gate {gate}{minors}, ${cost:.2f}{spent})"
    )


def approved(state: PState) -> bool:
    """Every front approved and integrated without an error."""
    return all(
        f.status == "approved" and not (f.integrated or {}).get("error")
        for f in state.fronts.values()
    )


def held(state: PState) -> FinishRun:
    """Held on the extra-credit pause (or, with no probe to ask, on the weekly or 5 h
    threshold), which the same command picks up again."""
    paused = [f.id for f in state.fronts.values() if not f.done]
    return FinishRun(
        "held",
        f"{state.usage.pause or state.usage.stop}; {'front' if len(paused) == 1 else 'fronts'} "
        f"{', '.join(paused)} {'waits' if len(paused) == 1 else 'wait'}; "
        + (GO_ON if state.knobs.usage_probe else GO_ON_UNPROBED),
        resumes=True,
    )


def finish(state: PState) -> FinishRun:
    """The run's end: each front's row and the tag."""
    rows = [final_row(f) for f in state.fronts.values()]
    ok = approved(state)
    done = state.release or {}
    if done.get("tag"):
        rows.append(f"tagged {done['tag']}")
    elif done:
        rows.append(
            f"not tagged {state.knobs.release_tag}: {done.get('skipped') or done.get('error')}"
        )
    return FinishRun("finished" if ok else "failed", "; ".join(rows))
