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


def against(at: int, tree: str, lane1_valid: int) -> dict[str, Any]:
    """What a report (and every artifact it carries) was written against, and how current."""
    out: dict[str, Any] = {"lane_1_valid_turns": at, "freshness": freshness(at, lane1_valid)}
    if tree:
        out["lane_1_tree"] = tree
    return out


def mark(
    inbox: Sequence[Mapping[str, Any]],
    written_at: Mapping[str, int],
    lane1_valid: int,
    trees: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Lane 1's inbox, each lane report with the lane-1 tree it was written against."""
    out = []
    for entry in inbox:
        rid = str(entry.get("report_id"))
        at = written_at.get(rid)
        if at is None:  # a system report, or one from before this was recorded
            out.append(dict(entry))
            continue
        tree = (trees or {}).get(rid, "")
        out.append({**entry, "written_against": against(at, tree, lane1_valid)})
    return out


def describe(
    written_at: Mapping[str, int], trees: Mapping[str, str], lane1_valid: int
) -> dict[str, dict[str, Any]]:
    """Every lane report's `written_against`, as of now (`status`)."""
    return {rid: against(at, trees.get(rid, ""), lane1_valid) for rid, at in written_at.items()}
