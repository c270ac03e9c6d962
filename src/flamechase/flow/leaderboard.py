"""The leaderboard: submissions ranked per (metric, direction), as pure functions.

A submission row is {report_id, lane, at, metric, direction, claimed, measured, verified}. With
a runtime evaluator only verified (measured) values rank; without one, claims rank, labelled
unverified, as the reference runtime does. Strictly better replaces the incumbent; ties keep it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["better", "board", "claim_matches", "metric_key"]


def metric_key(metric: str) -> str:
    return " ".join(metric.casefold().split())


def better(new: float, old: float, direction: str) -> bool:
    return new < old if direction == "minimize" else new > old


def claim_matches(claimed: float, measured: float) -> bool:
    return math.isclose(claimed, measured, rel_tol=1e-6, abs_tol=1e-9)


def board(
    submissions: Sequence[dict[str, Any]], declared: dict[str, str] | None, *, evaluator: bool
) -> dict[str, Any]:
    """The leaderboard derived from submission rows (oldest first).

    `declared` ({metric, direction}) fixes the primary metric; otherwise the first ranked
    submission does (as in the reference).
    """
    leaders: dict[tuple[str, str], dict[str, Any]] = {}
    primary: tuple[str, str] | None = None
    if declared:
        primary = (metric_key(declared["metric"]), declared["direction"])
    for s in submissions:
        ranked = s["verified"] if evaluator else True
        if not ranked:
            continue
        value = s["measured"] if s["measured"] is not None else s["claimed"]
        ident = (metric_key(s["metric"]), s["direction"])
        if primary is None:
            primary = ident
        cur = leaders.get(ident)
        if cur is None or better(value, cur["value"], s["direction"]):
            leaders[ident] = {
                "report_id": s["report_id"],
                "lane": s["lane"],
                "metric": s["metric"],
                "direction": s["direction"],
                "value": value,
                "claimed": s["claimed"],
                "verified": s["verified"],
                "at": s["at"],
            }
    best = leaders.get(primary) if primary else None
    return {
        "submission_count": len(submissions),
        "measured_by_runtime": evaluator,
        "primary": ({"metric": primary[0], "direction": primary[1]} if primary else None),
        "best": best,
        "leaders": list(leaders.values()),
    }
