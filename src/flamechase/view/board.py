"""What events show beyond their sentence, folded for every flow alike: the leaderboard (from
`Shown.score` and `Shown.ranking`) and the flow's panels (from `Shown.rows`).

The leaderboard mirrors `flow.leaderboard.board`: a declared metric when the run measures
(the flow says so with a `Ranking`), else the first ranked score fixes it; ties keep the
earlier entry first, as the leaderboard keeps the incumbent.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Mapping
from typing import Any

from flamechase.events.present import Cell, Ranking, Row, Score
from flamechase.flow.leaderboard import better, metric_key

__all__ = ["TOP_N", "Board", "Entry", "Panel", "Panels"]

# The leaderboard views show this many ranked entries; the rest only count.
TOP_N = 5


@dataclasses.dataclass(frozen=True, slots=True)
class Entry:
    """A ranked (or rankable) candidate."""

    report_id: str
    lane: str
    metric: str
    direction: str
    value: float
    claimed: float
    verified: bool
    ranked: bool


class Board:
    """The leaderboard: the best per (metric, direction) and the top entries of the primary."""

    def __init__(self) -> None:
        self.evaluator = False  # the runtime measures the candidates
        self.measured_by: str | None = None
        self.primary: tuple[str, str] | None = None
        self.leaders: dict[tuple[str, str], Entry] = {}
        self._top: list[tuple[float, int, Entry]] = []
        self.submissions = 0
        self.verified: dict[str, Entry] = {}  # report id -> its measured entry

    def declare(self, ranking: Ranking) -> None:
        self.evaluator = ranking.measured_by is not None
        self.measured_by = ranking.measured_by
        self.primary = (metric_key(ranking.metric), ranking.direction)

    def add(self, score: Score) -> None:
        self.submissions += 1
        # A claim ranks only in a run that measures nothing itself.
        ranked = score.ranked and (score.verified or not self.evaluator)
        if not ranked:
            return
        entry = Entry(
            report_id=score.ref,
            lane=score.lane,
            metric=score.metric,
            direction=score.direction,
            value=float(score.value),
            claimed=float(score.claimed if score.claimed is not None else score.value),
            verified=score.verified,
            ranked=True,
        )
        if entry.verified:
            self.verified[entry.report_id] = entry
        ident = (metric_key(entry.metric), entry.direction)
        if self.primary is None:
            self.primary = ident
        cur = self.leaders.get(ident)
        if cur is None or better(entry.value, cur.value, entry.direction):
            self.leaders[ident] = entry
        if ident == self.primary:
            key = entry.value if entry.direction == "minimize" else -entry.value
            bisect.insort(self._top, (key, self.submissions, entry), key=lambda t: t[:2])
            del self._top[TOP_N:]

    @property
    def best(self) -> Entry | None:
        return self.leaders.get(self.primary) if self.primary else None

    @property
    def top(self) -> tuple[Entry, ...]:
        return tuple(e for _, _, e in self._top)


@dataclasses.dataclass(frozen=True, slots=True)
class Panel:
    """A flow's table at one point: its columns in the order first given, and its rows in
    the order their keys were first given; `touched`: the keys, the row changed last last."""

    name: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, Mapping[str, Cell]], ...]
    touched: tuple[str, ...] = ()

    def recent(self, n: int) -> tuple[tuple[str, Mapping[str, Cell]], ...]:
        """At most `n` rows: those changed last, in the panel's order (a long panel, every
        pull request of a run, shows what is moving)."""
        if len(self.rows) <= n:
            return self.rows
        keep = set(self.touched[-n:])
        return tuple(r for r in self.rows if r[0] in keep)


class Panels:
    """Every panel the run's events filled, in the order they were first named."""

    def __init__(self) -> None:
        self._rows: dict[str, dict[str, dict[str, Cell]]] = {}
        self._columns: dict[str, dict[str, None]] = {}
        self._touched: dict[str, dict[str, None]] = {}  # panel -> keys, changed last last

    def put(self, row: Row) -> None:
        cells = self._rows.setdefault(row.panel, {}).setdefault(row.key, {})
        cells.update(row.cells)
        cols = self._columns.setdefault(row.panel, {})
        for name in row.cells:
            cols.setdefault(name, None)
        touched = self._touched.setdefault(row.panel, {})
        touched.pop(row.key, None)
        touched[row.key] = None

    def cells(self, panel: str, key: str) -> Mapping[str, Cell]:
        return self._rows.get(panel, {}).get(key, {})

    def to_json(self) -> dict[str, Any]:
        """Everything `put` kept, as JSON (view/shown keeps it between calls)."""
        return {
            name: {
                "rows": [[key, cells] for key, cells in rows.items()],
                "columns": list(self._columns[name]),
                "touched": list(self._touched[name]),
            }
            for name, rows in self._rows.items()
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Panels:
        """The panels `to_json` gave (ValueError, TypeError or KeyError if it is not that)."""
        out = cls()
        for name, panel in data.items():
            rows: dict[str, dict[str, Cell]] = {}
            for key, cells in panel["rows"]:
                if not isinstance(cells, dict) or not all(
                    v is None or isinstance(v, str | int | float | bool) for v in cells.values()
                ):
                    raise ValueError(f"panel {name!r}: row {key!r} is not cells")
                rows[str(key)] = {str(k): v for k, v in cells.items()}
            out._rows[str(name)] = rows
            out._columns[str(name)] = dict.fromkeys(str(c) for c in panel["columns"])
            out._touched[str(name)] = dict.fromkeys(str(k) for k in panel["touched"])
        return out

    def freeze(self) -> tuple[Panel, ...]:
        return tuple(
            Panel(
                name=name,
                columns=tuple(self._columns[name]),
                rows=tuple((key, dict(cells)) for key, cells in rows.items()),
                touched=tuple(self._touched[name]),
            )
            for name, rows in self._rows.items()
        )
