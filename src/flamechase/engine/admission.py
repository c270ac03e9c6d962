"""Budgets and admission: what a run may spend, what it has spent, whether a turn may start.

Duration counts the time the run was active, summed over its resumes. Turns count recorded
valid and failed turns that count (each was paid for; planning sessions count toward cost and
tokens but not turns). A turn is admitted only while every limit has room, counting turns
under way *and* turns cut by a crash or a stop that are owed a retake: a cut turn's slot stays
reserved for it, so `budget.turns=N` ends with exactly N recorded turns, the cut one retaken
by the same role with the same number rather than replaced by another lane's new turn.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from flamechase.budgets import Budget
from flamechase.engine.clock import Clock


@dataclasses.dataclass(slots=True)
class Spend:
    turns: int = 0
    cost: float = 0.0
    output_tokens: int = 0
    input_tokens: int = 0


class BudgetTracker:
    def __init__(self, budget: Budget, spend: Spend, active_before: float, clock: Clock) -> None:
        self.budget = budget
        self.spend = spend
        self.active_before = active_before
        self.clock = clock
        self.session_start = clock.monotonic()
        # Slots (lane keys) of counted turns cut before they were recorded: owed a retake.
        self.reserved: set[str] = set()
        # Bytes under the run when a new copy was refused for budget.disk (None: never). Only
        # reported: a refused copy stops the turns that wait on it, not the others
        # (engine/diskgate).
        self.disk_over: int | None = None

    def active_seconds(self) -> float:
        return self.active_before + (self.clock.monotonic() - self.session_start)

    def duration_deadline(self) -> float | None:
        """Monotonic time at which budget.duration runs out, if set."""
        if self.budget.duration is None:
            return None
        return self.session_start + (self.budget.duration - self.active_before)

    def _limit_hit(self, *, turns_in_use: int | None) -> str | None:
        b = self.budget
        if b.duration is not None and self.active_seconds() >= b.duration:
            return "duration"
        if turns_in_use is not None and b.turns is not None and turns_in_use >= b.turns:
            return "turns"
        if b.cost is not None and self.spend.cost >= b.cost:
            return "cost"
        if b.output_tokens is not None and self.spend.output_tokens >= b.output_tokens:
            return "output_tokens"
        return None

    def spent(self, inflight: int = 0) -> str | None:
        """The first budget key that leaves no room for a new counted turn, or None."""
        return self._limit_hit(turns_in_use=self.spend.turns + inflight + len(self.reserved))

    def admits(self, *, slot: str, counted: bool, inflight: int) -> str | None:
        """None if a turn in `slot` may start now (`inflight`: counted turns under way), else
        the budget key that refuses it. A reserved retake was admitted once already: only the
        limits that spend since then (duration, cost, tokens) can refuse it."""
        if not counted or slot in self.reserved:
            return self._limit_hit(turns_in_use=None)
        return self.spent(inflight)

    def crossed(self) -> str | None:
        """A limit already exceeded by spend (not counting turns in flight): for hard stops."""
        return self._limit_hit(turns_in_use=None)

    def add(self, *, counted: bool, cost: float, output_tokens: int, input_tokens: int) -> None:
        if counted:
            self.spend.turns += 1
        self.spend.cost += cost
        self.spend.output_tokens += output_tokens
        self.spend.input_tokens += input_tokens

    def report(self) -> dict[str, dict[str, Any]]:
        """Per key: limit and used, as `status --json` shows it."""
        b = self.budget
        return {
            "duration": {"limit": b.duration, "used": round(self.active_seconds(), 3)},
            "cost": {"limit": b.cost, "used": round(self.spend.cost, 6)},
            "turns": {"limit": b.turns, "used": self.spend.turns},
            "output_tokens": {"limit": b.output_tokens, "used": self.spend.output_tokens},
            **({"disk": {"limit": b.disk, "used": self.disk_over}} if b.disk is not None else {}),
        }
