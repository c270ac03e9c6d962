"""A front's cost in the seed's unit, the share of the account's week: each block's (the weekly
share after it less the one at its start: `cost_mark.py "<F> b<k>" <weekly%>`), summed for the
front's end line, `status` and the run's final report ("one per front: rounds, score, minors
left and cost in % of the week"). Without a probe the shares are the ones the CLIs reported,
read at the block's end; with a probe, the probe's reading after the block (`read`), which
also paces the next block when the block spent over the pacing share. A block nobody read
the share across is left out and the sum said as "at least"; a front none was read for says
nothing of the week."""

from __future__ import annotations

from flamechase.flow import Command, Emit
from flamechase.flows.parrallello.state import ENDED, FrontState, Knobs
from flamechase.flows.parrallello.usage import BlockWeek, week_spent

__all__ = ["read", "spent"]


def spent(front: FrontState) -> tuple[float, bool] | None:
    """The share of the week the front's blocks spent, and whether every block it started
    was read (None: none was, or one is still waiting for the probe)."""
    if front.week_due:
        return None
    known = [float(b["week"]) for b in front.blocks if b.get("week") is not None]
    if not known:
        return None
    return round(sum(known), 4), len(known) >= front.block


def read(front: FrontState, weekly: float | None, knobs: Knobs) -> tuple[FrontState, list[Command]]:
    """The probe read `weekly` after the front's block ended (`week_due`): the block's share,
    kept in its row and said; over the pacing share, the next block is paced."""
    if not front.week_due:
        return front, []
    front = front.replace(week_due=False)
    week = week_spent(front.week_at_start, weekly)
    if week is None or not front.blocks:
        return front, []
    rows = list(front.blocks)
    rows[-1] = {**rows[-1], "week": week}
    front = front.replace(blocks=tuple(rows))
    ended = front.status in ENDED
    over = week > knobs.pacing_share and not ended
    front = front.replace(paced=front.paced or over)
    total = spent(front) if ended else None
    said = BlockWeek(
        lane=front.lane,
        front=front.id,
        block=int(rows[-1].get("block") or front.block),
        week=week,
        paced=over,
        limit=knobs.pacing_share,
        tickets=knobs.paced_tickets,
        ceiling=knobs.paced_ceiling,
        total=total[0] if total else None,
        whole=total[1] if total else True,
    )
    return front, [Emit(said)]
