"""How an event shows itself: one sentence, what it is about, and what it adds to a view.

Every view (the plain log, the live view, the replay, `trace`, `status`, `serve`) folds a run's
events and asks each one to `show` itself against what the fold has seen so far (`Seen`); it
draws what comes back. No view keeps a list of kinds, so a flow's own kinds are shown in the
flow's own words, with the marks, panel rows and scores the flow gives them:

- `Shown.text` and `tag`: the sentence and what it is about (the page styles and filters by
  it; `trace` draws hand-offs).
- `mark`: a mark on the track of the event's lane (a pull request merged, a gate run).
- `rows`: rows of a panel, a table the flow names (`fronts`, `missions`): each row is keyed,
  and a later row of the same key replaces the cells it names.
- `score` and `ranking`: a candidate for the leaderboard, and what the run ranks by.
- `phase`: the run's phase from here on (`planning`), shown in place of `running`.
- `alert`: something a person should look at (the flow saw something wrong), kept in a list
  of its own.

A kind that says nothing of itself is shown by `Event.describe()`; a stored kind that nobody
registered (its flow's code is not loaded) is shown plainly, with its payload's first fields.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Literal, Protocol

__all__ = [
    "TAGS",
    "Cell",
    "Mark",
    "Ranking",
    "ReportSeen",
    "Row",
    "Score",
    "Seen",
    "Shown",
    "Tag",
    "and_",
    "cell_text",
    "clip",
    "money",
    "plural",
    "secs",
]

Tag = Literal["run", "turn", "end", "fail", "report", "receive", "plan", "best", "warn", "info"]
TAGS: tuple[Tag, ...] = (
    "run",
    "turn",
    "end",
    "fail",
    "report",
    "receive",
    "plan",
    "best",
    "warn",
    "info",
)
Cell = str | int | float | bool | None
Tone = Literal["info", "good", "bad"]


@dataclasses.dataclass(frozen=True, slots=True)
class Mark:
    """A mark on a track: `label` as drawn, `tone` how it is coloured."""

    label: str
    tone: Tone = "info"


@dataclasses.dataclass(frozen=True, slots=True)
class Row:
    """One row of the panel `panel`, keyed by `key`; `cells` replace the row's cells of the
    same names (the others stay), in the order first given."""

    panel: str
    key: str
    cells: Mapping[str, Cell]


@dataclasses.dataclass(frozen=True, slots=True)
class Score:
    """A candidate on the leaderboard: `value` is what ranks it (the runtime's measurement
    when `verified`), `claimed` what an agent said; `ranked` False: shown, never ranked."""

    ref: str
    lane: str
    metric: str
    direction: Literal["minimize", "maximize"]
    value: float
    claimed: float | None = None
    verified: bool = True
    ranked: bool = True


@dataclasses.dataclass(frozen=True, slots=True)
class Ranking:
    """What the run ranks candidates by; `measured_by`: the command the runtime measures
    with (None: candidates are ranked by what they claim)."""

    metric: str
    direction: Literal["minimize", "maximize"]
    measured_by: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Shown:
    """An event as the views draw it."""

    text: str
    tag: Tag = "info"
    mark: Mark | None = None
    rows: tuple[Row, ...] = ()
    score: Score | None = None
    ranking: Ranking | None = None
    phase: str | None = None
    alert: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class ReportSeen:
    """A published report as the fold knows it."""

    report_id: str
    lane: str
    actor: str | None
    status: str | None
    artifacts: int


class Seen(Protocol):
    """What the views' fold knows when it asks an event to show itself (the event already
    folded): how a place is described, the reports published so far, the run's totals."""

    @property
    def flow(self) -> str: ...

    @property
    def cost(self) -> float: ...

    @property
    def turns(self) -> int: ...

    @property
    def limits(self) -> Mapping[str, float | None]: ...

    def lane_names(self) -> Sequence[str]: ...

    def place_words(self, place: str) -> str:
        """`place` as a reader knows it: "your tree", or what the flow called it."""
        ...

    def lane_place(self, lane: str) -> str:
        """The words for where `lane` works."""
        ...

    def handed(self, place: str) -> str:
        """What a lane's actors hand each other there: "the tree", "the copy", ..."""
        ...

    def last_actor(self, lane: str) -> str | None:
        """Who ended `lane`'s last turn (before the one under way)."""
        ...

    def last_place(self, lane: str) -> str | None:
        """Where `lane`'s last turn (before the one under way) worked; None before its first.
        Actors hand each other only what they work in: a turn in another place is handed
        nothing."""
        ...

    def report(self, report_id: str) -> ReportSeen | None: ...


# ---- words ------------------------------------------------------------------------------------


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def clip(text: object, limit: int = 240) -> str:
    """`text` on one line, at most `limit` characters (agents write some of what is shown)."""
    s = " ".join(str(text if text is not None else "").split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def and_(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def money(value: object) -> str:
    try:
        return f"${float(value):.4f}"  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "$0"


def secs(value: object) -> str:
    try:
        return f"{float(value):.1f} s"  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "? s"


def cell_text(value: Cell) -> str:
    """A panel's cell as every view writes it (the replay's script writes it the same way)."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def num(value: object) -> str:
    return f"{value:g}" if isinstance(value, int | float) and not isinstance(value, bool) else "—"
