"""How the fold takes a turn's events: the row of the lane (or of the track of a role outside
lanes) while the turn runs and once it ended, the reports its inbox was delivered and
acknowledged, and what it spent (`RunFold` counts it between the engine's budget reports).

Each handler takes the fold, the event, the `Change` it fills and the time of the previous
event, as every handler of the fold's table does (view/state.py, `_HANDLERS`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from flamechase import events as ev
from flamechase.view.rows import SOURCE, Change

if TYPE_CHECKING:
    from flamechase.view.state import RunFold

__all__ = ["TURN_KINDS", "cut", "failed", "started", "switched", "valid"]

TURN_KINDS = (ev.TurnStarted, ev.TurnEnded)


def track(fold: RunFold, e: ev.Event) -> str | None:
    """The row of a turn event: its lane, or a track of its role outside lanes."""
    if e.lane:
        fold.row(e.lane)
        return e.lane
    if not e.actor:
        return None
    fold.row(e.actor, (e.actor,), solo=True)
    return e.actor


def started(fold: RunFold, e: ev.TurnStarted, ch: Change, before: str | None) -> None:
    name = track(fold, e)
    if name is None:
        return
    fold.set_row(
        name,
        ch,
        actor=e.actor,
        turn=e.turn,
        attempt=e.attempt or 1,
        since=e.at or None,
        backend=e.backend,
        paused_until=None,
        place=e.place or None,
    )
    had = fold.inbox.reads.get(name)
    fold.inbox.started(name, e.reads if e.lane else None, e.delivered)
    after = fold.inbox.reads.get(name)
    if after is not None and after != had:
        ch.reads = tuple(n for n in fold.order if n in after)


def valid(fold: RunFold, e: ev.TurnValid, ch: Change, before: str | None) -> None:
    name = track(fold, e)
    _count_spend(fold, e, ch, counted=e.counted)
    if name is None:
        return
    snap = fold.lanes[name]
    fold.worked[name] = snap.place or SOURCE
    fold.set_row(
        name,
        ch,
        actor=None,
        turn=None,
        since=None,
        turns=snap.turns + 1,
        valid=snap.valid + 1,
        failures=0,
        last_status=e.report_status or "valid",
        last_actor=e.actor,
        last_error=None,
    )
    if e.report_id and e.lane:  # journals of flamechase 0.1 published with the turn
        fold.publish(e.report_id, e.lane, e.actor, e.report_status, ch)
    for source, seq in e.acknowledged.items():
        count = fold.inbox.ack(name, str(source), _int(seq))
        if count is not None:
            ch.acks.append((name, str(source), count))
    fold.inbox.note_integration(name, e.actor, e.summary)


def failed(fold: RunFold, e: ev.TurnFailed, ch: Change, before: str | None) -> None:
    name = track(fold, e)
    _count_spend(fold, e, ch, counted=e.counted)
    if name is None:
        return
    snap = fold.lanes[name]
    fold.worked[name] = snap.place or SOURCE
    fold.set_row(
        name,
        ch,
        actor=None,
        turn=None,
        since=None,
        turns=snap.turns + 1,
        failed=snap.failed + 1,
        failures=snap.failures + 1,
        last_status="turn_failed",
        last_actor=e.actor,
        last_error=e.error or "no reason recorded",
    )
    if e.report_id and e.lane:
        fold.publish(e.report_id, e.lane, e.actor, "turn_failed", ch)


def cut(
    fold: RunFold, e: ev.TurnInterrupted | ev.LanePaused, ch: Change, before: str | None
) -> None:
    fold.cost = _spend(fold.cost, e.cost_usd)
    fold.output_tokens += e.output_tokens
    ch.spend = True
    name = track(fold, e)
    if name is None:
        return
    extra: dict[str, Any] = {}
    if isinstance(e, ev.LanePaused):
        extra["paused_until"] = e.lane_until
    fold.set_row(name, ch, actor=None, turn=None, since=None, **extra)


def switched(fold: RunFold, e: ev.AgentSwitched, ch: Change, before: str | None) -> None:
    name = track(fold, e)
    if name is not None:
        fold.set_row(name, ch, moved_to=e.to if e.index else None)


def _count_spend(fold: RunFold, e: ev.TurnEnded, ch: Change, *, counted: bool) -> None:
    if counted:
        fold.turns += 1
    fold.cost = _spend(fold.cost, e.cost_usd)
    fold.output_tokens += e.output_tokens
    ch.spend = True


def _spend(total: float, more: float) -> float:
    """`total + more`, never past the largest float: agents report their own spend, and two
    huge reports must not make the run's cost infinite (no view could write it as JSON)."""
    return min(total + more, sys.float_info.max)


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0
