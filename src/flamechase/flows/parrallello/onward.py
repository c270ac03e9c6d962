"""What a front does once a round is closed and it goes on: its next round, what comes between
blocks, going on after the extra-credit pause is lifted, or its end."""

from __future__ import annotations

from collections.abc import Sequence

from flamechase.flow import Command, Emit
from flamechase.flows.parrallello import events as fev
from flamechase.flows.parrallello import lead, usage, weeks
from flamechase.flows.parrallello import runtime as rt
from flamechase.flows.parrallello.progress import front_fraction
from flamechase.flows.parrallello.rounds import Ctx, begin
from flamechase.flows.parrallello.state import FrontState, FrontStatus

__all__ = ["end_front", "go_on", "onward"]


def onward(front: FrontState, ctx: Ctx, block_over: bool) -> tuple[FrontState, list[Command]]:
    """The front's next round, or at a block's end what comes between blocks."""
    if block_over:
        # Between blocks: a proven recalibration is taken (`front.on_ran`) and the lead (or
        # the rules) decides; the next block starts once both are done.
        if front.pending is not None:
            front = front.replace(pending={**front.pending, "due": True})
        return lead.between(front, ctx, ctx.knobs.lead)
    return begin(front, ctx)


def go_on(front: FrontState, ctx: Ctx) -> tuple[FrontState, list[Command]]:
    """A front paused on its usage, once the pause is lifted: its next round, or at a block's
    end what follows one (it waits on while the weekly or 5 h threshold forbids a new block,
    said once). The probe's reading that lifted it said the block's week (`weeks.read`)."""
    block_over = front.usage_paused in ("block", "reset")
    if block_over and ctx.usage_stop:
        if front.usage_paused == "reset":
            return front, []
        probing = bool(ctx.knobs.usage_probe)
        said = usage.waits(front.id, front.lane, front.block, ctx.usage_stop, probing)
        return front.replace(usage_paused="reset"), [Emit(said)]
    front = front.replace(usage_paused="")
    if block_over:  # the next block's time (its pulse, its spend) starts now, not at the wait
        front = front.replace(block_started=ctx.at)
    return onward(front, ctx, block_over)


def end_front(
    front: FrontState, ctx: Ctx, status: FrontStatus, reason: str, owed: Sequence[Command] = ()
) -> tuple[FrontState, list[Command]]:
    """The front ended (`status`), and its event."""
    front = front.replace(status=status, ended=reason, current=None)
    week = weeks.spent(front)
    return front, [
        *owed,
        Emit(
            fev.FrontEnded(
                lane=front.lane,
                front=front.id,
                status=status,
                rounds=front.rounds,
                reason=reason,
                open_tickets=[
                    {"id": t.id, "severity": t.severity, "title": t.title[:200]}
                    for t in front.tickets
                ]
                if status != "approved"
                else [],
                progress=front_fraction(front, ctx.plan),
                overall=0.0,
                block=front.block if front.rounds else 0,
                blocks=ctx.plan.blocks,
                tree=ctx.path(rt.front_place(front.lane)) if front.rounds else "",
                week=week[0] if week else None,
                week_whole=week[1] if week else True,
            )
        ),
    ]
