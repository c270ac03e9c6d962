"""The lead between blocks: what the next block works on, and the note that binds it.

With `-p lead=true` a fresh `lead` session decides at each block's end (given the verdict
digest of the last blocks, the handoff notes, the open tickets and the contract, never the
code); without one the runtime applies the same rules itself. A decision classifies open
items (`recurring`: the next tickets state a change of method; `regression`: revert to what
last passed; `miscalibrated`: the critic is asked for a recalibration with proof; `too_big`:
replaced by the decision's smaller tickets), gives the next block's tickets (at most 8) and a
`lead_note` every builder and the critic of the next block receive. The runtime validates it
against the front (ids of open tickets, owners of the front) and records it
(`lead_decided`, `status`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from flamechase import events as ev
from flamechase.flow import Command, Emit
from flamechase.flows.parrallello import events as fev
from flamechase.flows.parrallello import tickets as tk
from flamechase.flows.parrallello.decision import EVERY, LeadDecision, digest, first_error
from flamechase.flows.parrallello.plan import FrontSpec
from flamechase.flows.parrallello.rounds import Ctx, begin
from flamechase.flows.parrallello.state import FrontState, spec_of
from flamechase.globs import any_match

__all__ = ["RULES", "LeadDecision", "apply", "between", "brief", "by_rules", "on_turn"]

RECURRING_ROUNDS = 3  # an item open this many rounds is recurring: change method
SPLIT_TICKETS = 5  # a builder with this many open tickets is told to split its work by files
LEAD_TRIES = 2  # a lead that fails twice leaves the block to the rules


def context(front: FrontState, spec: FrontSpec | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"open": [t.id for t in front.tickets], "owners": list(front.owners)}
    if spec is not None:
        out["files"] = {o: list(g) for o, g in spec.owners.items()}
        out["spare"] = front.spare is not None
    return out


RULES = (
    "You decide between blocks; you do not see or write code.",
    "Classify each open item that needs it: recurring (open 3+ rounds: state the "
    "change of method), regression (it passed before: the builders revert what broke "
    "it), miscalibrated (the gate is wrong: the critic may recalibrate with proof), "
    "too_big (replace it by smaller tickets).",
    "Give at most 8 tickets for the next block, each for one owner, and a lead_note "
    "(at most 15 lines) that binds the next block's builders and critic.",
    "A builder with too much (5+ tickets, a foundation item undone 2 rounds): split "
    "the front's files between two builders (split, optional; spare_lane says "
    "whether a new owner can be added).",
)


def brief(front: FrontState, spec: FrontSpec) -> dict[str, Any]:
    """What a lead is given: verdicts, notes, tickets and the contract; never the code."""
    return {
        "role": "lead",
        "front": front.id,
        "goal": spec.goal or spec.label,
        "block_ended": front.block,
        "verdicts": [r.model_dump() for r in front.history[-6:]],
        "blocks": list(front.blocks),
        "handoffs": dict(front.handoffs),
        "open_tickets": [t.brief() for t in front.tickets],
        "owners": {o: list(g) for o, g in spec.owners.items()},
        "spare_lane": front.spare is not None,
        "contract": dict(front.contract),
        "rules": list(RULES),
        "result": {
            "items": [{"id": "open ticket id", "call": "recurring", "method": "..."}],
            "tickets": [{"id": "...", "severity": "major", "title": "...", "owner": "..."}],
            "lead_note": "...",
            "split": {"owner": ["a glob or path of the front's files"], "other": ["..."]},
        },
    }


def by_rules(front: FrontState, spec: FrontSpec) -> dict[str, Any]:
    """The decision the runtime takes without a lead: recurring items change method, a
    builder with too many tickets is split by its files onto the spare builder lane (when
    the front has one and the builder more than one glob; told to split its work otherwise)."""
    recurring = [t for t in front.tickets if t.rounds_open >= RECURRING_ROUNDS - 1]
    items = [
        {
            "id": t.id,
            "call": "recurring",
            "method": f"open {t.rounds_open + 1} rounds: drop the approach tried so far and "
            "take another",
        }
        for t in recurring
    ]
    lines = []
    if recurring:
        lines.append(
            f"Recurring: {', '.join(t.id for t in recurring[:6])}. Change method: what was "
            "tried did not close them."
        )
    load: dict[str, int] = {}
    for t in front.tickets:
        who = t.owner or "?"
        load[who] = load.get(who, 0) + 1
    split: dict[str, list[str]] | None = None
    for who, n in sorted(load.items()):
        if n < SPLIT_TICKETS:
            continue
        split = split or _rules_split(front, spec, who)
        if split is not None and who in split:
            lines.append(
                f"Builder {who} has {n} open tickets: its files are split, "
                + "; ".join(f"{o} owns {', '.join(g)}" for o, g in split.items())
                + "."
            )
        else:
            lines.append(
                f"Builder {who} has {n} open tickets: split the work by files, one file "
                "group per round, most severe first."
            )
    note = "\n".join(lines) or "No recurring item: carry on with the open tickets."
    return {"items": items, "tickets": [], "lead_note": note, **({"split": split} if split else {})}


def _rules_split(front: FrontState, spec: FrontSpec, who: str) -> dict[str, list[str]] | None:
    """An overloaded sole builder's globs halved between it and a new owner on the spare
    lane; None when there is no spare lane or nothing to halve."""
    globs = list(spec.owners.get(who, ()))
    if front.spare is None or len(spec.owners) != 1 or len(globs) < 2:
        return None
    half = (len(globs) + 1) // 2
    return {who: globs[:half], f"{who}-b"[:40]: globs[half:]}


def apply(
    front: FrontState, decision: Mapping[str, Any], spec: FrontSpec, *, spread: bool = False
) -> FrontState:
    """The next block's tickets, note and files from a validated decision (`spread`: the
    rules' split, which also spreads the tickets that name no file of their owner's)."""
    d = LeadDecision.model_validate(decision, context=context(front, spec))
    if d.split is not None:
        front = _split(front, d.split, spread)
    calls = {c.id: c for c in d.items}
    kept = []
    for t in front.tickets:
        c = calls.get(t.id)
        if c is None:
            kept.append(t)
        elif c.call == "too_big" and d.tickets:
            continue  # replaced by the decision's tickets
        else:
            words = {
                "recurring": f"CHANGE METHOD: {c.method}",
                "regression": "REGRESSION: it passed before; revert what broke it " + c.method,
                "miscalibrated": "the lead judges the gate miscalibrated: the critic may "
                "recalibrate it with proof " + c.method,
                "too_big": "too big: split it " + c.method,
            }[c.call]
            kept.append(t.replace(detail=f"{words.strip()}\n{t.detail}".strip()[:4000]))
    out: dict[str, tk.Ticket] = {}
    for t in [*tk.carried("lead", d.tickets), *kept]:  # no round passed: rounds_open stays
        out.setdefault(t.id, t)
    tickets = tuple(sorted(out.values(), key=tk.rank)[: tk.OPEN_CAP])
    return front.replace(tickets=tickets, lead_note=d.lead_note)


def _split(front: FrontState, split: Mapping[str, tuple[str, ...]], spread: bool) -> FrontState:
    """The builders own the split's files from now on (a new owner takes the spare lane);
    a ticket whose owner is gone is assigned by its files."""
    lanes = {o: front.owners.get(o) or front.spare or "" for o in split}
    spare = front.spare if front.spare not in lanes.values() else None
    tickets = tuple(
        t
        if t.owner is not None
        and t.owner in split
        and all(any_match(split[t.owner], f) for f in t.files)
        and (t.files or not spread)
        else t.replace(owner=None)  # assigned by its files
        for t in front.tickets
    )
    return front.replace(
        files={o: tuple(g) for o, g in split.items()}, owners=lanes, spare=spare, tickets=tickets
    )


def on_turn(front: FrontState, event: ev.TurnEnded) -> FrontState:
    """The lead's turn ended: its decision, or (after a second failure) the rules."""
    lead = front.lead
    if lead.get("status") != "running" or event.turn != lead.get("turn"):
        return front
    if isinstance(event, ev.TurnValid):
        return front.replace(lead={**lead, "status": "done", "decision": event.result})
    if isinstance(event, ev.TurnFailed):
        failures = int(lead.get("failures", 0)) + 1
        if failures >= LEAD_TRIES:
            return front.replace(lead={**lead, "status": "failed", "error": event.error[:300]})
        return front.replace(lead={**lead, "failures": failures})
    return front


def _users(front: FrontState, ctx: Ctx) -> tuple[FrontState, dict[str, Any] | None, list[Command]]:
    """The user's decision (-p lead_decision) for this front, if it has not taken it yet and
    it is valid for the front (refused like a lead's otherwise: an anomaly, the rules)."""
    given = ctx.knobs.lead_decision or {}
    decision = given.get(front.id, given.get(EVERY))
    if decision is None or digest(decision) == front.user_decided:
        return front, None, []
    front = front.replace(user_decided=digest(decision))
    try:
        LeadDecision.model_validate(decision, context=context(front, ctx.spec))
    except ValueError as exc:
        detail = f"-p lead_decision refused for front {front.id}: {first_error(exc)}"
        return front, None, [_anomaly(front, "user-decision-refused", detail)]
    return front, dict(decision), []


def _anomaly(front: FrontState, what: str, detail: str) -> Emit:
    return Emit(
        fev.Anomaly(lane=front.lane, front=front.id, round=front.rounds, what=what, detail=detail)
    )


def between(front: FrontState, ctx: Ctx, with_lead: bool) -> tuple[FrontState, list[Command]]:
    """The next block starts once its recalibration (if any) is taken and its decision is
    in: the user's (once, when given), else the lead's, else the rules' (without a lead, or
    when the lead failed twice)."""
    if front.pending is not None:
        return front, []  # taken first (`front.commands`), then this again
    front, users, owed = _users(front, ctx)
    with_lead = with_lead and not owed  # a refused user's decision: the rules decide
    status = front.lead.get("status")
    if users is None and with_lead and status is None:
        turn = front.lane_turns + 1
        return front.replace(lead={"status": "running", "turn": turn}, lane_turns=turn), owed
    if users is None and with_lead and status == "running":
        return front, owed
    if users is not None:
        decision, source = users, "user"
    elif with_lead and status == "done":
        decision, source = dict(front.lead.get("decision") or {}), "lead"
    else:
        decision, source = by_rules(front, ctx.spec), "rules"
        if status == "failed":
            owed.append(
                _anomaly(
                    front,
                    "lead-failed",
                    f"the lead failed twice ({front.lead.get('error')}); "
                    "the runtime's rules decide this block",
                )
            )
    front = apply(front, decision, ctx.spec, spread=source == "rules")
    ctx = dataclasses.replace(ctx, spec=spec_of(ctx.plan, front))
    record = {"block": front.block + 1, "source": source, **decision}
    front = front.replace(lead={}, decisions=(*front.decisions, record))
    owed.append(
        Emit(
            fev.LeadDecided(
                lane=front.lane,
                front=front.id,
                block=front.block + 1,
                source=source,
                items=list(decision.get("items") or []),
                tickets=[t.id for t in front.tickets],
                note=front.lead_note,
                split={o: list(g) for o, g in (decision.get("split") or {}).items()},
            )
        )
    )
    front, started = begin(front, ctx)
    return front, [*owed, *started]
