"""parrallello's words for its events: bars, ids, counts, where a front stopped (shared by its
events and `status`'s summary)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from flamechase.events.present import Cell, Row, clip

if TYPE_CHECKING:
    from flamechase.flows.parrallello.events import FrontEnded, VerdictRecorded

__all__ = [
    "bar",
    "ended_week",
    "findings",
    "front_row",
    "ids",
    "pct",
    "proofs",
    "stopped_at",
    "week_said",
]


def proofs(changes: list[dict[str, Any]]) -> str:
    out = []
    for c in changes:
        proof = c.get("proof") if isinstance(c, Mapping) else None
        if isinstance(proof, Mapping):
            targets = ", ".join(f"{k} {v}" for k, v in (c.get("targets") or {}).items())
            removes = ", ".join(c.get("removes") or ())
            what = "; ".join(x for x in (targets, removes and f"removes {removes}") if x)
            measured = clip(str(proof.get("measurement")), 120)
            out.append(
                f"{proof.get('reason')} on {proof.get('date')}: {measured}"
                + (f" -> {what}" if what else "")
            )
    return "; ".join(out) or "no proof"


def stopped_at(rounds: int, block: int, blocks: int, tree: str) -> str:
    """Where a front that was not approved stopped, and where its work is."""
    if not rounds:
        return "It never ran a round"
    of = f" of {blocks}" if blocks else ""
    at = f"It stopped at round {rounds}" + (f" (block {block}{of})" if block else "")
    return at + (f"; its work stays in its tree: {tree}" if tree else "")


def findings(v: VerdictRecorded) -> str:
    """A verdict's counts in words (never `1M 0m 2n`, which nobody can read)."""
    return f"{v.majors} major, {v.mediums} medium, {v.minors} minor"


def front_row(front: str, **cells: Cell) -> Row:
    """A row of the `fronts` panel."""
    return Row("fronts", front, cells)


def bar(fraction: object, width: int = 10) -> str:
    """`[####------] 40%`."""
    try:
        f = min(1.0, max(0.0, float(fraction)))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        f = 0.0
    filled = int(f * width + 1e-9)
    return "[" + "#" * filled + "-" * (width - filled) + f"] {pct(f)}"


def pct(fraction: float) -> str:
    """Rounded down: only what is done reads 100 %."""
    return f"{int(fraction * 100 + 1e-9)}%"


def ids(items: Any, limit: int = 4) -> str:
    names = [str(i.get("id") if isinstance(i, Mapping) else i) for i in (items or [])]
    more = f" +{len(names) - limit}" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def week_said(week: float | None, whole: bool = True) -> str:
    """A front's cost in the seed's unit, the share of the account's week (`7.5% of the
    week`); "at least" when a block of it went unread; "" when none was read."""
    if week is None:
        return ""
    return f"{'' if whole else 'at least '}{week:.1%} of the week"


def ended_week(e: FrontEnded) -> str:
    """`week_said` of a front's end, after its line's other words (`; 7.5% of the week`)."""
    said = week_said(e.week, e.week_whole)
    return f"; {said}" if said else ""
