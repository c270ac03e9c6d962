"""Read the checkpoint an agent may leave at `$FLAMECHASE_CHECKPOINT`.

Owns: `read_checkpoint`, which returns a checkpoint's report only when the checkpoint was written
for exactly this turn (run id, lane, turn and attempt all equal, same JSON types) and is marked
`phase: "terminal"`. Anything else (missing, a symlink, a FIFO, over 1 MiB, not UTF-8, not a JSON
object, another turn's or attempt's identity, a "working" phase) yields None: the checkpoint is
then treated as absent. It never raises on bad input.
Must not touch: the checkpoint file (read only), the run database, the report schema (the caller
validates the returned report like any other).

Format: `{"identity": {"run_id", "lane", "turn", "attempt", "phase"}, "report": {...}}`.
"""

from __future__ import annotations

import json
import os
from typing import Any

from flamechase.fsutil import FileRefused, read_regular_file

__all__ = ["CHECKPOINT_LIMIT", "IDENTITY_KEYS", "read_checkpoint"]

CHECKPOINT_LIMIT = 1024 * 1024
IDENTITY_KEYS = ("run_id", "lane", "turn", "attempt")


def _same(expected: object, found: object) -> bool:
    # `type is type` keeps 1 == 1.0 == True from passing for the same turn.
    return type(expected) is type(found) and expected == found


def read_checkpoint(
    path: str | os.PathLike[str], identity: dict[str, Any]
) -> dict[str, Any] | None:
    """The report of a terminal checkpoint written for `identity`, else None. Never raises."""
    try:
        raw = read_regular_file(path, CHECKPOINT_LIMIT)
        data = json.loads(raw.decode("utf-8"))
    except (FileRefused, OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    found = data.get("identity")
    report = data.get("report")
    if not isinstance(found, dict) or not isinstance(report, dict):
        return None
    try:
        for key in IDENTITY_KEYS:
            if key not in identity or key not in found:
                return None
            if not _same(identity[key], found[key]):
                return None
    except Exception:  # a hostile `identity` mapping of the caller's own making
        return None
    if found.get("phase") != "terminal":
        return None
    return report
