"""One round of a front, as phases the runtime walks through:

    sync          each builder's copy made identical to the front's tree (`treesync mirror`)
    build         fresh builders, each with its tickets and files, in parallel
    check         what each builder changed (`treesync diff`): outside its files -> reverted
                  (never taken) and its tickets failed; a touched gate -> the round's work
                  refused; and its leftover jobs reaped
    apply         the accepted files copied into the front's tree
    gate          the gate files hashed against their frozen hashes, and `--full` run from a
                  copy whose frozen files are checked and read-only (a yardstick)
    critic_sync   the critic's copy made identical to the front's tree, then at most 3 of the
                  images the builders left (`rt.SHEETS`) taken into it as contact sheets of
                  at most 1600 px, decoded and checked by the runtime (`tools/sheets`)
    critic        a fresh adversarial critic, with the gate's result, the builders' claims
                  and handoff notes
    critic_check  what the critic changed: its declared gate change (tried next), anything
                  else (ignored, an anomaly)
    critic_trial  the changed gate run in a trial copy and judged against the contract (the
                  yardstick only tightens: `gatechange`)
    critic_apply  an accepted tightening taken into the front's tree and frozen again
    verdict       the runtime recounts and applies the approval rule (`verdict.judge`)

`commands` says what a phase still needs; `on_*` fold what arrived; `advance` moves on when a
phase has all it needs. Everything here is pure.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from flamechase import events as ev
from flamechase.flow import Command, Emit, MakePlace, ResultSpec, StartTurn
from flamechase.flows.parrallello import briefs, gatechange
from flamechase.flows.parrallello import events as fev
from flamechase.flows.parrallello import runtime as rt
from flamechase.flows.parrallello.gates import judge_gate
from flamechase.flows.parrallello.plan import FrontSpec, PlanSpec
from flamechase.flows.parrallello.state import BuilderRun, FrontState, Knobs, RoundState
from flamechase.flows.parrallello.tickets import assign
from flamechase.flows.parrallello.verdict import BuilderResult, Verdict

__all__ = ["Ctx", "begin", "commands", "on_ran", "on_turn"]

BUILDER = "builder"
CRITIC = "critic"
TURN_TRIES = 2  # a dead agent is relaunched fresh once in the same round


@dataclasses.dataclass(frozen=True, slots=True)
class Ctx:
    plan: PlanSpec
    spec: FrontSpec
    knobs: Knobs
    places: Mapping[str, str]
    at: str = ""
    usage_stop: str | None = None  # an account-usage threshold: no new block (usage.py)
    usage_pause: str | None = None  # ... or no new round
    usage_week: float | None = None  # the account's weekly share last read (usage.py)

    def path(self, place: str) -> str:
        return self.places.get(place, "")


def begin(front: FrontState, ctx: Ctx) -> tuple[FrontState, list[Command]]:
    """The front's next round: its builders and their tickets (most severe first)."""
    number = front.rounds + 1
    rpb = ctx.plan.rounds_per_block
    paced = front.paced
    per_round = ctx.knobs.paced_tickets if paced else None
    assigned = assign(front.tickets, ctx.spec.owners, ctx.plan.max_tickets, per_round)
    builders = {
        o: BuilderRun(
            owner=o, lane=front.owners[o], place=rt.builder_place(front.owners[o]), tickets=ts
        )
        for o, ts in assigned.items()
    }
    rs = RoundState(
        number=number,
        block=(number - 1) // rpb + 1,
        in_block=(number - 1) % rpb + 1,
        phase="sync" if builders else "critic_sync",
        paced=paced,
        ceiling=ctx.knobs.paced_ceiling if paced else ctx.knobs.ceiling,
        builders=builders,
        gate=None if builders else front.last_gate,
        started_at=ctx.at,
    )
    event = fev.RoundStarted(
        lane=front.lane,
        front=front.id,
        block=rs.block,
        round=number,
        in_block=rs.in_block,
        paced=paced,
        ceiling=rs.ceiling,
        builders={o: [t.id for t in b.tickets] for o, b in builders.items()},
    )
    return front.replace(current=rs, rounds=number, block=rs.block), [Emit(event)]


# ---- what a phase still needs ------------------------------------------------------------------


def commands(front: FrontState, ctx: Ctx) -> list[Command]:
    rs = front.current
    if rs is None:
        return []
    k = rt.key
    fid, n, lane = front.id, rs.number, front.lane
    fpath = ctx.path(rt.front_place(lane))
    out: list[Command] = []
    if rs.phase == "sync":
        for b in rs.builders.values():
            if b.place not in ctx.places:
                out.append(MakePlace(b.place, how="empty", label=rt.builder_label(b.owner, fid)))
            elif not b.synced:
                out.append(
                    rt.mirror(
                        k(fid, "sync", n, b.owner), b.place, b.lane, rt.front_place(lane), fpath
                    )
                )
    elif rs.phase == "build":
        out += [_builder_turn(front, rs, b, ctx) for b in rs.builders.values() if not b.finished]
    elif rs.phase == "check":
        for b in rs.builders.values():
            if b.diff is None:
                out.append(
                    rt.compare(
                        k(fid, "diff", n, b.owner),
                        lane,
                        b.place,
                        ctx.path(b.place),
                        ctx.spec.owners[b.owner],
                        ctx.spec.freeze,
                        ctx.plan,
                        apply=False,
                    )
                )
            if not b.reaped:
                out.append(rt.reap(k(fid, "reap", n, b.owner), b.place, b.lane))
    elif rs.phase == "apply":
        out += [
            rt.compare(
                k(fid, "apply", n, b.owner),
                lane,
                b.place,
                ctx.path(b.place),
                ctx.spec.owners[b.owner],
                ctx.spec.freeze,
                ctx.plan,
                apply=True,
            )
            for b in rs.builders.values()
            if _taken(b) and not b.applied
        ]
    elif rs.phase == "gate":  # both at once: the gate runs from checked bytes (a yardstick)
        if not rs.hashed:
            out.append(rt.freeze_hash(k(fid, "hash", n), ctx.spec, lane))
        if rs.gate is None:
            out.append(rt.gate_full(k(fid, "gate", n), ctx.spec, lane, front.frozen or {}))
    else:
        out += _critic_commands(front, rs, ctx)
    return out


def _critic_commands(front: FrontState, rs: RoundState, ctx: Ctx) -> list[Command]:
    k, fid, n = rt.key, front.id, rs.number
    place = rt.critic_place(front.lane)
    if rs.phase == "critic_sync":
        if place not in ctx.places:
            label = f"the critic's copy of front {front.id}"
            return [MakePlace(place, how="empty", label=label)]
        if rs.critic_synced:  # after the mirror, which would remove them
            if rs.sheets is not None or not rs.builders:
                return []
            builders = [(b.owner, b.place, ctx.path(b.place)) for b in rs.builders.values()]
            return [rt.sheets(k(fid, "sheets", n), place, front.lane, builders)]
        return [
            rt.mirror(
                k(fid, "csync", n),
                place,
                front.lane,
                rt.front_place(front.lane),
                ctx.path(rt.front_place(front.lane)),
            )
        ]
    if rs.phase == "critic":
        brief = briefs.critic_brief(ctx.plan, ctx.spec, front, rs)
        return [
            StartTurn(
                role=CRITIC,
                lane=front.lane,
                number=rs.critic_turn,
                place=place,
                result=ResultSpec(Verdict, noun="verdict"),
                env=_env(brief),
                note={"brief": brief},
            )
        ]
    if rs.phase == "critic_check":
        return [
            rt.compare(
                k(fid, "cdiff", n),
                front.lane,
                place,
                ctx.path(place),
                ctx.spec.freeze,
                (),
                ctx.plan,
                apply=False,
            )
        ]
    if rs.phase in ("critic_trial", "critic_apply"):
        return gatechange.commands(front, rs, ctx.spec, ctx.plan, ctx.places)
    return []


def _env(brief: Mapping[str, Any]) -> dict[str, str]:
    return {"FLAMECHASE_BRIEF": json.dumps(brief, ensure_ascii=False)}


def _builder_turn(front: FrontState, rs: RoundState, b: BuilderRun, ctx: Ctx) -> StartTurn:
    brief = briefs.builder_brief(ctx.plan, ctx.spec, front, rs, b.owner)
    return StartTurn(
        role=BUILDER,
        lane=b.lane,
        number=rs.number,
        place=b.place,
        result=ResultSpec(BuilderResult, noun="builder result"),
        env=_env(brief),
        note={"brief": brief},
    )


def _taken(b: BuilderRun) -> bool:
    return bool(b.diff and b.diff.get("accepted", {}).get("count"))


# ---- folding what arrived ------------------------------------------------------------------------


def _with_builder(rs: RoundState, b: BuilderRun) -> RoundState:
    return rs.replace(builders={**rs.builders, b.owner: b})


def on_turn(front: FrontState, event: ev.TurnEnded) -> FrontState:
    """A builder's or the critic's turn ended (cut turns are simply asked for again)."""
    rs = front.current
    if rs is None or not isinstance(event, ev.TurnValid | ev.TurnFailed):
        return front
    if event.lane == front.lane and rs.phase == "critic" and event.turn == rs.critic_turn:
        if isinstance(event, ev.TurnValid):
            rs = rs.replace(verdict=event.result)
        else:
            rs = rs.replace(critic_failures=rs.critic_failures + 1, critic_error=event.error[:500])
        return front.replace(current=rs)
    b = next((b for b in rs.builders.values() if b.lane == event.lane), None)
    if b is None or rs.phase != "build" or event.turn != rs.number or b.finished:
        return front
    if isinstance(event, ev.TurnValid):
        b = b.replace(result=event.result, finished=True)
    else:
        failures = b.failures + 1
        b = b.replace(failures=failures, error=event.error[:500], finished=failures >= TURN_TRIES)
    return front.replace(current=_with_builder(rs, b))


def on_ran(
    front: FrontState, key: rt.Key, receipt: Mapping[str, Any], spec: FrontSpec
) -> FrontState:
    rs = front.current
    if rs is None or key.round != rs.number:
        return front
    out = rt.tool_output(dict(receipt), "TREESYNC")
    b = rs.builders.get(key.who)
    if key.what == "sync" and b is not None:
        rs = _with_builder(rs, b.replace(synced=out is not None and "error" not in out))
    elif key.what == "diff" and b is not None:
        rs = _with_builder(rs, b.replace(diff=out or {"error": _err(receipt)}))
    elif key.what == "reap" and b is not None:
        rs = _with_builder(rs, b.replace(reaped=True))
    elif key.what == "apply" and b is not None:
        rs = _with_builder(rs, b.replace(applied=True))
    elif key.what == "hash":
        rs = _hashed(front, rs, out, receipt)
    elif key.what == "gate":
        rs = rs.replace(gate=judge_gate(receipt, only=spec.only, contract=front.contract))
    elif key.what == "sheets":
        rs = rs.replace(sheets=rt.tool_output(dict(receipt), "SHEETS") or {"error": _err(receipt)})
    elif key.what == "csync":
        rs = rs.replace(critic_synced=out is not None and "error" not in out)
    elif key.what == "cdiff":
        rs = rs.replace(critic_diff=out or {"error": _err(receipt)})
    else:  # the critic's gate change: its trial and its taking
        rs = gatechange.on_ran(front, rs, key.what, receipt, spec)
    return front.replace(current=rs)


def _err(receipt: Mapping[str, Any]) -> str:
    return str(receipt.get("error") or "no output")[:300]


def _hashed(
    front: FrontState, rs: RoundState, out: dict[str, Any] | None, receipt: Mapping[str, Any]
) -> RoundState:
    files = (out or {}).get("files")
    if not isinstance(files, dict):
        return rs.replace(
            hashed=True, refused=f"the gate files could not be hashed ({_err(receipt)})"
        )
    if files != front.frozen:
        changed = sorted(set(files.items()) ^ set((front.frozen or {}).items()))
        names = sorted({p for p, _ in changed})
        return rs.replace(
            hashed=True,
            refused=f"the frozen gate files changed in the front's tree: {', '.join(names[:5])}",
        )
    return rs.replace(hashed=True)
