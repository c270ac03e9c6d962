"""Budgets: what a run may spend, what it has spent, and whether another turn may start.

Duration counts the time the run was active, summed over its resumes. Turns count recorded
valid and failed lane turns (each one was paid for); planning sessions count toward cost and
tokens but not turns. A turn is admitted only while every limit has room, counting turns
already under way, so `budget.turns=N` ends with exactly N recorded turns.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from flamechase.config import Budget


@dataclasses.dataclass(slots=True)
class Spend:
    turns: int = 0
    cost: float = 0.0
    output_tokens: int = 0
    input_tokens: int = 0


class BudgetTracker:
    def __init__(self, budget: Budget, spend: Spend, active_before: float) -> None:
        self.budget = budget
        self.spend = spend
        self.active_before = active_before
        self.session_start = time.monotonic()

    def active_seconds(self) -> float:
        return self.active_before + (time.monotonic() - self.session_start)

    def duration_deadline(self) -> float | None:
        """Monotonic time at which budget.duration runs out, if set."""
        if self.budget.duration is None:
            return None
        return self.session_start + (self.budget.duration - self.active_before)

    def spent(self, inflight: int = 0) -> str | None:
        """The first budget key that leaves no room for another turn, or None."""
        b = self.budget
        if b.duration is not None and self.active_seconds() >= b.duration:
            return "duration"
        if b.turns is not None and self.spend.turns + inflight >= b.turns:
            return "turns"
        if b.cost is not None and self.spend.cost >= b.cost:
            return "cost"
        if b.output_tokens is not None and self.spend.output_tokens >= b.output_tokens:
            return "output_tokens"
        return None

    def crossed(self) -> str | None:
        """A limit already exceeded by spend (not counting turns in flight): for hard stops."""
        b = self.budget
        if b.duration is not None and self.active_seconds() >= b.duration:
            return "duration"
        if b.cost is not None and self.spend.cost >= b.cost:
            return "cost"
        if b.output_tokens is not None and self.spend.output_tokens >= b.output_tokens:
            return "output_tokens"
        return None

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
        }
