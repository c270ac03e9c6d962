"""Moving a round on when a phase has all it needs, and closing it: the runtime's verdict, the
next tickets, the end of a block (spend, pacing) and of a front (approved, or not approved at
its ceiling with its open tickets)."""

from __future__ import annotations

from typing import Any

from flamechase.events.present import plural
from flamechase.flow import Command, Emit
from flamechase.flows.parrallello import events as fev
from flamechase.flows.parrallello import gatechange, sheets, usage
from flamechase.flows.parrallello import tickets as tk
from flamechase.flows.parrallello.onward import end_front, onward
from flamechase.flows.parrallello.progress import front_fraction
from flamechase.flows.parrallello.rounds import Ctx
from flamechase.flows.parrallello.state import (
    FrontState,
    Phase,
    RoundRecord,
    RoundState,
    Spend,
    seconds_between,
)
from flamechase.flows.parrallello.verdict import Finding, Verdict, judge

__all__ = ["advance", "end_front"]

LIST = 20  # paths named in an event


def _paths(diff: dict[str, Any] | None, part: str) -> list[str]:
    return list(((diff or {}).get(part) or {}).get("paths") or [])


def _count(diff: dict[str, Any] | None, part: str) -> int:
    return int(((diff or {}).get(part) or {}).get("count") or 0)


def advance(
    front: FrontState, ctx: Ctx, limits: dict[str, float], run_share: float
) -> tuple[FrontState, list[Command]]:
    """Move the current round through every phase that has what it needs."""
    owed: list[Command] = []
    for _ in range(20):
        rs = front.current
        if rs is None:
            break
        nxt, emitted = _step(front, rs, ctx)
        owed += emitted
        if nxt is rs:
            break
        front = front.replace(current=nxt)
        if nxt.phase == "critic" and not nxt.critic_turn:
            front = front.replace(
                lane_turns=front.lane_turns + 1,
                current=nxt.replace(critic_turn=front.lane_turns + 1),
            )
        if nxt.phase == "verdict":
            front, emitted = _close(front, nxt, ctx, limits, run_share)
            owed += emitted
    return front, owed


def _step(front: FrontState, rs: RoundState, ctx: Ctx) -> tuple[RoundState, list[Command]]:
    """The round after one transition (the same object when it must wait)."""
    bs = rs.builders.values()
    if rs.phase == "sync" and all(b.synced for b in bs):
        return rs.replace(phase="build"), []
    if rs.phase == "build" and all(b.finished for b in bs):
        return rs.replace(phase="check"), []
    if rs.phase == "check" and all(b.diff is not None and b.reaped for b in bs):
        return _checked(front, rs)
    if rs.phase == "apply" and all(b.applied or not _count(b.diff, "accepted") for b in bs):
        return rs.replace(phase="gate"), []
    if rs.phase == "gate" and rs.refused:
        return rs.replace(phase="verdict"), []
    if rs.phase == "gate" and rs.hashed and rs.gate is not None:
        return rs.replace(phase="critic_sync"), []
    if rs.phase == "critic_sync" and rs.critic_synced:
        if not rs.builders:
            return rs.replace(phase="critic"), []
        if rs.sheets is not None:
            return rs.replace(phase="critic"), sheets.said(front, rs, rs.sheets)
    return _critic_steps(front, rs)


def _critic_steps(front: FrontState, rs: RoundState) -> tuple[RoundState, list[Command]]:
    """The critic's phases, from its verdict to the round's own (`_step` goes on here)."""
    if rs.phase == "critic" and rs.verdict is not None:
        return rs.replace(phase="critic_check"), []
    if rs.phase == "critic" and rs.critic_failures >= 2:
        return rs.replace(phase="verdict"), [
            _anomaly(front, rs, "verdict-invalid", f"the critic failed twice: {rs.critic_error}")
        ]
    if rs.phase == "critic_check" and rs.critic_diff is not None:
        return _critic_checked(front, rs)
    if rs.phase == "critic_trial" and rs.regate is not None:
        return _tried(front, rs)
    if rs.phase == "critic_apply" and rs.fhashed is not None:
        if rs.fhashed != rs.refrozen:
            return _refuse(
                front,
                rs,
                "runtime-failed",
                "the gate taken into the front's tree is not the one its trial ran",
                taken=True,
            )
        return rs.replace(phase="verdict"), []
    return rs, []


def _refuse(
    front: FrontState, rs: RoundState, what: str, why: str, *, taken: bool = False
) -> tuple[RoundState, list[Command]]:
    """The critic's gate change is not taken: a major finding, an anomaly, and the round
    judged on the gate as it was (`taken`: it reached the front's tree, whose round is then
    refused, as a moved gate would be)."""
    finding = {
        "id": "R-critic-gate",
        "severity": "major",
        "title": f"the critic's gate change is refused ({what}): {why}"[:300],
        "owner": None,
        "evidence": "the runtime's trial run of the changed gate against the front's contract",
    }
    rs = rs.replace(
        phase="verdict",
        regate=None,
        recalibration=None,
        findings=(*rs.findings, finding),
        refused=why if taken else rs.refused,
    )
    return rs, [_anomaly(front, rs, what, why)]


def _tried(front: FrontState, rs: RoundState) -> tuple[RoundState, list[Command]]:
    """The changed gate ran in its trial copy: refused, taken now (a tightening), or proven
    and kept for the block's end (a recalibration, which this round does not benefit from)."""
    assert rs.regate is not None
    refused = gatechange.refusal(front, rs, rs.regate)
    if refused:
        return _refuse(front, rs, *refused)
    if rs.trial == "recalibrate":
        record = {
            "round": rs.number,
            "block": rs.block,
            "changes": list((rs.verdict or {}).get("gate_changes") or []),
            "files": dict(rs.refrozen or {}),
            "contract": {**gatechange.trial_contract(front, rs), **rs.regate.targets},
            "gate": rs.regate.summary,
        }
        return rs.replace(phase="verdict", regate=None, recalibration=record), []
    return rs.replace(phase="critic_apply"), []


def _anomaly(front: FrontState, rs: RoundState, what: str, detail: str) -> Command:
    return Emit(
        fev.Anomaly(
            lane=front.lane, front=front.id, round=rs.number, what=what, detail=detail[:500]
        )
    )


# long: a round's builder checks, in the order they apply
def _checked(front: FrontState, rs: RoundState) -> tuple[RoundState, list[Command]]:
    """Every builder's diff is in: revert-by-not-taking, fail tickets, refuse on a gate edit."""
    owed: list[Command] = []
    findings = list(rs.findings)
    refused = None
    for b in rs.builders.values():
        outside, frozen = _paths(b.diff, "outside"), _paths(b.diff, "frozen")
        failed = [t.id for t in b.tickets] if outside or frozen else []
        owed.append(
            Emit(
                fev.BuilderChecked(
                    lane=b.lane,
                    front=front.id,
                    round=rs.number,
                    owner=b.owner,
                    accepted=_count(b.diff, "accepted"),
                    outside=outside[:LIST],
                    frozen=frozen[:LIST],
                    failed_tickets=failed,
                    error=(b.diff or {}).get("error") or b.error,
                )
            )
        )
        if b.result is None:
            owed.append(
                _anomaly(
                    front,
                    rs,
                    "agent-dead",
                    f"builder {b.owner} failed {b.failures} time(s): {b.error}",
                )
            )
        if frozen:
            refused = f"builder {b.owner} edited the frozen gate ({', '.join(frozen[:5])})"
            findings.append(
                _finding(
                    f"R-{b.owner}-gate",
                    b.owner,
                    f"edited the frozen gate "
                    f"files {', '.join(frozen[:5])}: the round's work is "
                    "refused; never edit a gate",
                )
            )
            owed.append(_anomaly(front, rs, "gate-tamper", refused))
        elif outside:
            findings.append(
                _finding(
                    f"R-{b.owner}-outside",
                    b.owner,
                    f"{_count(b.diff, 'outside')} edit(s) outside its files "
                    f"were reverted ({', '.join(outside[:5])}); its tickets "
                    "failed: stay within your files",
                )
            )
            owed.append(
                _anomaly(
                    front, rs, "ownership-violation", f"builder {b.owner}: {', '.join(outside[:5])}"
                )
            )
    phase: Phase = "verdict" if refused else "apply"
    return rs.replace(phase=phase, refused=refused, findings=tuple(findings)), owed


def _finding(fid: str, owner: str, title: str) -> dict[str, Any]:
    return {
        "id": fid,
        "severity": "major",
        "title": title,
        "owner": owner,
        "evidence": "the runtime's diff of the builder's copy",
    }


def _critic_checked(front: FrontState, rs: RoundState) -> tuple[RoundState, list[Command]]:
    owed: list[Command] = []
    changed = _paths(rs.critic_diff, "accepted")  # gate files (allowed: the frozen globs)
    outside = _paths(rs.critic_diff, "outside")
    if outside:
        owed.append(
            _anomaly(
                front,
                rs,
                "critic-edited-front",
                f"the critic changed {', '.join(outside[:5])}; not taken (critics never edit)",
            )
        )
    declared = (rs.verdict or {}).get("gate_changes") or []
    if changed and declared:
        refused = gatechange.precheck(front, rs)
        if refused:
            rs, more = _refuse(front, rs, *refused)
            return rs, [*owed, *more]
        recal = any(c.get("kind") == "recalibrate" for c in declared)
        return rs.replace(phase="critic_trial", trial="recalibrate" if recal else "tighten"), owed
    if declared and not changed:
        owed.append(
            _anomaly(
                front, rs, "gate-change-refused", "gate_changes declared, but no gate file changed"
            )
        )
    if changed:
        owed.append(
            _anomaly(
                front,
                rs,
                "undeclared-gate-edit",
                "the critic changed the gate "
                f"({', '.join(changed[:5])}) without gate_changes; not taken",
            )
        )
    return rs.replace(phase="verdict"), owed


# ---- the verdict ------------------------------------------------------------------------------


# long: a round's end: verdict, anomalies, next round or block, in order
def _close(
    front: FrontState, rs: RoundState, ctx: Ctx, limits: dict[str, float], run_share: float
) -> tuple[FrontState, list[Command]]:
    verdict = Verdict.model_validate(rs.verdict) if rs.verdict else None
    gate = rs.regate or rs.gate
    extra = [Finding.model_validate(f) for f in rs.findings]
    missing = rs.refused or (None if verdict else "no verdict: the critic failed twice")
    j = judge(verdict, gate is not None and gate.passed and not rs.refused, extra, missing=missing)
    runtime = [
        tk.Ticket(id=f.id, severity=f.severity, source="runtime", title=f.title, owner=f.owner)
        for f in extra
    ]
    if verdict is None or rs.refused:  # nobody judged this round's work: carry what was open
        fresh = [*front.tickets, *runtime]
    else:
        critic = tk.carried("critic", verdict.tickets) or tk.from_findings(verdict.findings)
        fresh = [*critic, *runtime]
    open_tickets = tk.next_tickets(front.tickets, fresh, None if rs.refused else gate)
    owed: list[Command] = []
    update: dict[str, Any] = {"tickets": open_tickets, "current": None}
    if gate is not None and gate.reason is None and not rs.refused:
        update["items"] = gate.m
        update["last_gate"] = gate
        update["contract"] = {**front.contract, **gate.targets}  # new items join it
    if rs.recalibration is not None and not rs.refused:
        update["pending"] = rs.recalibration
        owed.append(_recalibration(front, rs, rs.recalibration))
    if rs.regate is not None and not rs.refused:
        refrozen = rs.refrozen
        update["frozen"] = refrozen
        owed.append(
            Emit(
                fev.GateRefrozen(
                    lane=front.lane,
                    front=front.id,
                    round=rs.number,
                    changes=list((rs.verdict or {}).get("gate_changes") or []),
                    files=sorted(refrozen or {}),
                )
            )
        )
    notes = {b.owner: str(b.result.get("handoff", "")) for b in rs.builders.values() if b.result}
    update["handoffs"] = notes or front.handoffs
    record = RoundRecord(
        number=rs.number,
        block=rs.block,
        approved=j.approved,
        majors=j.majors,
        mediums=j.mediums,
        minors=j.minors,
        gate=gate.summary if gate else "not run",
        gate_pass=j.gate_pass,
        refused=rs.refused,
        mismatch=j.mismatch,
        reasons=j.reasons,
        open_tickets=len(open_tickets),
    )
    update["history"] = (*front.history, record)
    front = front.replace(**update)
    if j.mismatch:
        owed.append(_anomaly(front, rs, "critic-rule-mismatch", j.mismatch))
    if j.approved:
        front = front.replace(status="approved", ended=f"approved in round {rs.number}")
    owed.append(
        Emit(
            fev.VerdictRecorded(
                lane=front.lane,
                front=front.id,
                block=rs.block,
                round=rs.number,
                approved=j.approved,
                majors=j.majors,
                mediums=j.mediums,
                minors=j.minors,
                gate=record.gate,
                critic_approve=j.critic_approve,
                mismatch=j.mismatch,
                reasons=list(j.reasons),
                summary=(verdict.summary if verdict else "")[:500],
                tickets=[
                    {"id": t.id, "severity": t.severity, "owner": tk.owner_of(t, ctx.spec.owners)}
                    for t in open_tickets
                ],
                progress=front_fraction(front, ctx.plan),
                overall=0.0,
                refused=rs.refused,
                last_round=rs.block >= ctx.plan.blocks and rs.in_block == ctx.plan.rounds_per_block,
            )
        )
    )
    return _after(front, rs, ctx, limits, run_share, owed)


# long: what follows a verdict, one case after another
def _after(
    front: FrontState,
    rs: RoundState,
    ctx: Ctx,
    limits: dict[str, float],
    run_share: float,
    owed: list[Command],
) -> tuple[FrontState, list[Command]]:
    """Approved, a block's end, the ceiling, or the next round."""
    block_over = rs.in_block == ctx.plan.rounds_per_block or front.status == "approved"
    if block_over:
        spend = front.block_spend.plus(seconds=_seconds(front.block_started, ctx.at))
        share = spend.share(limits)
        # The seed's "a block spends > 9 % of the week": read from the account's weekly share
        # the CLIs reported (with a probe, from its reading after the block: `go_on`), besides
        # the share of a budget the block spent.
        week = (
            None if ctx.knobs.usage_probe else usage.week_spent(front.week_at_start, ctx.usage_week)
        )
        paced = share > ctx.knobs.pacing_share or (week or 0.0) > ctx.knobs.pacing_share
        # Whether a next block is paced is worth saying only when there is a next block. A
        # usage threshold does not end the front: its next block only waits (the reset, or
        # the resume after the extra credit's pause), and goes paced all the same.
        last = (
            front.status == "approved"
            or rs.block >= ctx.plan.blocks
            or run_share >= ctx.knobs.stop_share
        )
        row = {
            "block": rs.block,
            "rounds": rs.in_block,
            "spend": spend.model_dump(),
            "share": round(share, 4),
            "paced_next": paced and not last,
            "week": week,
        }
        owed.append(
            Emit(
                fev.BlockEnded(
                    lane=front.lane,
                    front=front.id,
                    block=rs.block,
                    rounds=rs.in_block,
                    approved=front.status == "approved",
                    spend=spend.model_dump(),
                    share=round(share, 4),
                    paced_next=paced and not last,
                    week=week,
                )
            )
        )
        front = front.replace(
            blocks=(*front.blocks, row),
            paced=paced,
            block_spend=Spend(),
            block_started=ctx.at,
            week_due=bool(ctx.knobs.usage_probe),  # the probe asked after it reads it
        )
    if front.status == "approved":
        return end_front(front, ctx, "approved", front.ended, owed)
    if block_over and rs.block >= ctx.plan.blocks:
        return end_front(
            front,
            ctx,
            "not_approved",
            f"ceiling reached: {plural(ctx.plan.blocks, 'block')} of "
            f"{plural(ctx.plan.rounds_per_block, 'round')}",
            owed,
        )
    if block_over and run_share >= ctx.knobs.stop_share:
        return end_front(
            front,
            ctx,
            "stopped",
            f"{run_share:.0%} of a budget is spent: no new block starts",
            owed,
        )
    if block_over and ctx.usage_stop:
        # The seed's "wait mode until the reset": the front keeps its place and starts its
        # next block once the usage reads below (`go_on`).
        said = usage.waits(
            front.id, front.lane, rs.block, ctx.usage_stop, bool(ctx.knobs.usage_probe)
        )
        return front.replace(usage_paused="reset"), [*owed, Emit(said)]
    if ctx.usage_pause or ctx.knobs.usage_probe:
        # Paused, not ended: the front keeps its place, and goes on (`go_on`) once the probe
        # asked after this round answered (the next round or block is judged on its reading),
        # or, on the extra credit, once a resumed run's probe reads below the threshold.
        return front.replace(usage_paused="block" if block_over else "round"), owed
    front, started = onward(front, ctx, block_over)
    return front, [*owed, *started]


def _recalibration(front: FrontState, rs: RoundState, record: dict[str, Any]) -> Command:
    changes = [c for c in record["changes"] if c.get("kind") == "recalibrate"]
    return Emit(
        fev.RecalibrationProven(
            lane=front.lane,
            front=front.id,
            round=rs.number,
            block=rs.block,
            changes=changes,
            gate=str(record.get("gate") or ""),
        )
    )


def _seconds(start: str, end: str) -> float:
    return seconds_between(start, end) if start and end else 0.0
