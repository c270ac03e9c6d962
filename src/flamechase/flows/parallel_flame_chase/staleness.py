"""How current a lane's report was: the lane-1 tree it was written against (lane 1's count of
valid turns the lane's copy was on), and in lane 1's inbox, fresh or stale by N lane-1 turns.

Pure: `written` notes a report when its turn is valid, `mark` annotates lane 1's inbox.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def freshness(on: int, lane1_valid: int) -> str:
    behind = max(0, lane1_valid - on)
    if not behind:
        return "fresh"
    return f"stale by {behind} lane-1 turn" + ("s" if behind > 1 else "")


def mark(
    inbox: Sequence[Mapping[str, Any]], written_at: Mapping[str, int], lane1_valid: int
) -> list[dict[str, Any]]:
    """Lane 1's inbox, each lane report with the lane-1 tree it was written against."""
    out = []
    for entry in inbox:
        at = written_at.get(str(entry.get("report_id")))
        if at is None:  # a system report, or one from before this was recorded
            out.append(dict(entry))
            continue
        against = {"lane_1_valid_turns": at, "freshness": freshness(at, lane1_valid)}
        out.append({**entry, "written_against": against})
    return out
