"""Which of a role's alternatives takes its next turn: pure, from recorded turn ends + the clock.

A role may be given alternatives in order (`-a ROLE='claude@work/opus|claude@home/opus|codex/
gpt-5:high'`). An alternative is *closed* while the usage window its last turn ran into is
spent (a `lane_paused` end, until the reset it said), or for `START_RETRY` after its CLI could
not even start; any other end (valid, failed, cut) opens it again. The next turn runs on the
first alternative that is open, so a role goes back to its first as soon as that window
resets. Only when every alternative is closed does the lane pause, until the first reopens.

Nothing here touches the store or a process: the control loop folds each recorded end in
(`Book.turn_ended`), asks `choose` at every admission, and journals what changed (`AgentSwitched`).
A resumed engine folds the stored journal the same way (`ends_in`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from flamechase import events as ev
from flamechase.engine.clock import iso

__all__ = [
    "START_RETRY",
    "Book",
    "Choice",
    "Closed",
    "Ending",
    "choose",
    "closed_after",
    "ends_in",
    "fold",
    "seconds",
    "unstartable",
]

# After a CLI failed to start (not installed any more, a broken wrapper), try it again after
# this long: a fixed start failure is not worth a turn every rest, a passing one costs little.
START_RETRY = 600.0
# A usage window whose reset no CLI said: as agents/limits.DEFAULT_WAIT (an hour).
UNSAID_RESET = 3600.0
# How the backends word a CLI that never started (clisession, exec_backend).
_NOT_STARTED = "could not start "
_ENDS = frozenset({"turn_valid", "turn_failed", "turn_interrupted", "lane_paused"})


@dataclasses.dataclass(frozen=True, slots=True)
class Ending:
    """One recorded turn end, as failover needs it: on which agent, how, and when."""

    agent: str
    kind: str  # turn_valid | turn_failed | turn_interrupted | lane_paused
    at: float  # wall seconds of the end
    until: float | None = None  # lane_paused: when the window reopens, if said
    error: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Closed:
    """An alternative that may not take a turn before `until` (wall seconds), and why."""

    agent: str
    until: float
    why: str  # "usage window" | "did not start"


@dataclasses.dataclass(frozen=True, slots=True)
class Choice:
    """The alternative the next turn runs on (None: all closed, the lane waits `until`)."""

    agent: str | None
    index: int = 0
    until: float | None = None
    passed: tuple[Closed, ...] = ()  # the closed alternatives ahead of it, in order

    @property
    def reason(self) -> str:
        """Why it is not the first alternative (empty when it is)."""
        if not self.passed:
            return ""
        return "; ".join(f"{c.agent}: {c.why}" for c in self.passed)


def unstartable(error: str) -> bool:
    """Whether a failed turn's error says its CLI never started."""
    return error.startswith(_NOT_STARTED) or f": {_NOT_STARTED}" in error[:200]


def closed_after(closed: Mapping[str, Closed], end: Ending) -> dict[str, Closed]:
    """`closed` with what `end` says of its agent: closed by a window or a failed start,
    open again after any other end."""
    out = dict(closed)
    if end.kind == "lane_paused":
        until = end.until if end.until is not None else end.at + UNSAID_RESET
        out[end.agent] = Closed(end.agent, until, "usage window")
    elif end.kind == "turn_failed" and unstartable(end.error):
        out[end.agent] = Closed(end.agent, end.at + START_RETRY, "did not start")
    elif end.kind in ("turn_valid", "turn_failed"):
        out.pop(end.agent, None)
    # A cut turn (turn_interrupted) says nothing of its agent's window.
    return out


def fold(ends: Iterable[Ending], closed: Mapping[str, Closed] | None = None) -> dict[str, Closed]:
    out = dict(closed or {})
    for end in ends:
        out = closed_after(out, end)
    return out


def choose(alternatives: Sequence[str], closed: Mapping[str, Closed], now: float) -> Choice:
    """The first alternative open at `now`; with none open, when the first reopens."""
    passed: list[Closed] = []
    for i, agent in enumerate(alternatives):
        shut = closed.get(agent)
        if shut is None or shut.until <= now:
            return Choice(agent, i, None, tuple(passed))
        passed.append(shut)
    return Choice(None, 0, min((c.until for c in passed), default=now), tuple(passed))


def seconds(text: object) -> float | None:
    """Wall seconds of an ISO time as the journal writes it; None for anything else."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def ends_in(rows: Iterable[Mapping[str, Any]]) -> list[Ending]:
    """The turn ends of stored event rows (oldest first), each with the agent its start named:
    a `turn_started` says the backend, the end of the same turn and attempt follows it."""
    started: dict[tuple[Any, ...], str] = {}
    out: list[Ending] = []
    for row in rows:
        kind, payload = row.get("kind"), row.get("payload") or {}
        key = (row.get("lane"), row.get("actor"), payload.get("turn"), payload.get("attempt"))
        if kind == "turn_started":
            started[key] = str(payload.get("backend") or "")
        elif kind in _ENDS:
            agent = started.pop(key, "")
            at = seconds(row.get("at"))
            if agent and at is not None:
                out.append(
                    Ending(
                        agent,
                        str(kind),
                        at,
                        seconds(payload.get("until")),
                        str(payload.get("error") or ""),
                    )
                )
    return out


class Book:
    """What the control loop knows for failover: each role's alternatives, which are closed
    (folded from turn ends), and the agent each role's last turn started on. In memory only;
    a resumed engine rebuilds it from the journal (`replay`)."""

    def __init__(self, choices: Mapping[str, Sequence[str]]) -> None:
        self.choices = {role: tuple(agents) for role, agents in choices.items()}
        self.closed: dict[str, Closed] = {}
        self.last: dict[str, str] = {}

    def replay(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Fold a stored journal's turn events (oldest first)."""
        rows = list(rows)
        for row in rows:
            actor = row.get("actor")
            if row.get("kind") == "turn_started" and actor in self.choices:
                self.last[str(actor)] = str((row.get("payload") or {}).get("backend") or "")
        self.closed = fold(ends_in(rows), self.closed)

    def ended(self, end: Ending) -> None:
        self.closed = closed_after(self.closed, end)

    def turn_ended(self, role: str, agent: str, event: ev.TurnEnded, now: float) -> ev.TurnEnded:
        """Fold a turn's end (on `agent`) in; the event the loop journals for it. A usage
        window of a role with alternatives says where its next turn goes (then the lane does
        not pause), or, all of them being in a window, when the first reopens."""
        until = seconds(event.until) if isinstance(event, ev.LanePaused) else None
        error = event.error if isinstance(event, ev.TurnFailed) else ""
        self.ended(Ending(agent, event.kind, now, until, error))
        if not isinstance(event, ev.LanePaused):
            return event
        event = dataclasses.replace(event, agent=agent)
        choice = self.choice(role, now)
        if choice is None:
            return event
        if choice.agent is not None:
            return dataclasses.replace(event, next_agent=choice.agent)
        if choice.until is not None and (until is None or choice.until < until):
            return dataclasses.replace(event, resumes=iso(choice.until))
        return event

    def choice(self, role: str, now: float) -> Choice | None:
        """The alternative `role`'s next turn runs on; None for a role without alternatives."""
        alternatives = self.choices.get(role)
        if alternatives is None:
            return None
        return choose(alternatives, self.closed, now)

    def started(self, role: str, agent: str) -> str | None:
        """Note that `role`'s turn starts on `agent`; the agent it moves from, if it moved (a
        first turn moves from the role's first alternative)."""
        alternatives = self.choices.get(role)
        if alternatives is None:
            return None
        before = self.last.get(role) or alternatives[0]
        self.last[role] = agent
        return before if before != agent else None

    def switch(
        self, lane: str | None, role: str, turn: int, agent: str, choice: Choice
    ) -> ev.AgentSwitched | None:
        """`started`, as the event the loop journals when the role moved; None if it did not."""
        moved_from = self.started(role, agent)
        if moved_from is None:
            return None
        return ev.AgentSwitched(
            lane=lane,
            actor=role,
            turn=turn,
            previous=moved_from,
            to=agent,
            index=choice.index,
            alternatives=list(self.choices[role]),
            reason=choice.reason,
        )
