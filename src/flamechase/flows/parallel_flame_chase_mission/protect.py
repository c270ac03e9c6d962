"""`protected_paths`: files lanes must not change (the evaluator, its data). The runtime, not
the agent, tells a write: it hashes the files the globs match in a lane's tree before the
lane's first turn and after each of its turns (`Freeze`, the runtime's own hashes), and a
turn after which they differ (changed, added, removed, or no longer readable as regular
files) is recorded and opens an audit on that lane. The lane's next turn waits for the hash.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flamechase import events as ev
from flamechase.flow import FlowState, Freeze
from flamechase.flow.lanes import LaneBook

__all__ = ["KEY", "Protect", "Write"]

KEY = "protect:"
KEEP = 50  # writes kept in the state (every one is in the run's events as a trigger)


class Write(FlowState):
    lane: str
    turn: int
    mission_id: str | None = None
    paths: tuple[str, ...] = ()
    error: str | None = None
    at: str = ""

    def said(self) -> str:
        if self.error:
            return f"after turn {self.turn} the protected files could not be hashed: {self.error}"
        return f"turn {self.turn} changed protected {', '.join(self.paths[:10])}"


class Protect(FlowState):
    seen: dict[str, dict[str, str]] = {}  # lane -> protected path -> sha256, last hashed
    owed: dict[str, str] = {}  # lane -> the key of the hash owed after its last turn
    writes: tuple[Write, ...] = ()

    def ended(self, lane: str, turn: int, attempt: int) -> Protect:
        """A lane turn ended: its tree is hashed again before its next turn."""
        return self.replace(owed={**self.owed, lane: f"{KEY}{lane}:{turn}:{attempt}"})

    def waits(self, lane: str) -> bool:
        return lane not in self.seen or lane in self.owed

    def commands(self, book: LaneBook, globs: Sequence[str]) -> list[Freeze]:
        out = []
        for name, lane in book.lanes.items():
            key = self.owed.get(name) or (f"{KEY}{name}:0:0" if name not in self.seen else "")
            if key and not lane.busy:
                out.append(Freeze(key, place=lane.place, paths=tuple(globs)))
        return out

    def frozen(self, e: ev.Frozen, mission_id: str | None) -> tuple[Protect, Write | None]:
        """A lane's protected files hashed: the write it shows, if any."""
        lane, turn, _ = e.key.removeprefix(KEY).rsplit(":", 2)
        owed = {k: v for k, v in self.owed.items() if v != e.key}
        first = lane not in self.seen
        before: Mapping[str, str] = self.seen.get(lane, {})
        after = dict(before) if e.error else dict(e.files)
        book = self.replace(seen={**self.seen, lane: after}, owed=owed)
        if first and not e.error:
            return book, None  # the baseline
        paths = sorted(p for p in {*after, *before} if after.get(p) != before.get(p))
        if not paths and not e.error:
            return book, None
        w = Write(
            lane=lane,
            turn=int(turn),
            mission_id=mission_id,
            paths=tuple(paths),
            error=e.error,
            at=e.at,
        )
        return book.replace(writes=(*self.writes, w)[-KEEP:]), w

    def of(self, lane: str) -> list[dict[str, Any]]:
        return [w.model_dump() for w in self.writes if w.lane == lane][-10:]
