"""How `exec` shows events as they happen: JSON lines, or one plain line per event."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from flamechase import events as ev


class JsonObserver:
    """One JSON object per event on stdout, nothing else."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout

    def event(self, event: dict[str, Any]) -> None:
        self.out.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.out.flush()


def describe(event: dict[str, Any]) -> str:
    """One human line for an event: its time, lane and actor, and what the kind says."""
    e = ev.parse(event)
    who = " ".join(x for x in (e.lane, e.actor) if x)
    return f"{e.at[11:19]} {who + ' ' if who else ''}{e.describe()}"


class LineObserver:
    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout

    def event(self, event: dict[str, Any]) -> None:
        self.out.write(describe(event) + "\n")
        self.out.flush()
