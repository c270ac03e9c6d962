"""What `sim` answers itself for a turn that ends with the turn report: no actor took it.

A small piece of real work, told truthfully: the tree is surveyed (its files counted) and a
line appended to NOTES.md, and the report says exactly that. The `blocked` profile's report
stops on purpose and changes nothing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from flamechase.agents.backend import TurnRequest

__all__ = ["blocked", "survey"]


def blocked(request: TurnRequest) -> dict[str, Any]:
    return {
        "status": "blocked",
        "summary": f"sim/blocked: stopping on purpose on turn {request.turn} of "
        f"{request.lane}; nothing was changed.",
        "risks": ["this lane needs a person (or a changed objective) to go on"],
        "next_step": "release the lane or change the objective",
    }


def survey(request: TurnRequest) -> dict[str, Any]:
    ws = request.workspace
    files = _count_files(ws)
    where = f"{request.lane} turn {request.turn}" if request.lane else f"turn {request.turn}"
    line = f"- {request.role} (sim), {where}: read the tree ({files} files).\n"
    with open(ws / "NOTES.md", "a", encoding="utf-8") as notes:
        notes.write(line)
    return {
        "status": "progress",
        "summary": f"Surveyed the tree ({files} files) and noted it in NOTES.md; nothing "
        "else was changed or measured.",
        "changes": [f"NOTES.md: appended a line for turn {request.turn}"],
        "evidence": [f"{files} files in the tree (excluding dot-directories)"],
        "next_step": "a real agent would work on the objective here",
    }


def _count_files(ws: Path, limit: int = 100_000) -> int:
    total = 0
    for _, dirs, files in os.walk(ws):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        total += len(files)
        if total >= limit:
            break
    return total
