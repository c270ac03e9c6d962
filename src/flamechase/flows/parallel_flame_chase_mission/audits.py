"""Audits: what triggers one, how triggers coalesce into the one open audit, and when a
fresh coordinator session may be asked again after one gave no valid decision.

At most one audit is open. A trigger while it is open joins it (deduplicated by trigger id):
its targets widen, or it escalates to global; its revision bumps, so a decision written for
the earlier revision is discarded, and it waits again for its targets to be quiet. Only the
targets pause. Pure, as the flow: functions return the book after and the `Emit`s owed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from flamechase.flow import Command, Emit, FlowState
from flamechase.flows.parallel_flame_chase_mission import events as mev

__all__ = ["AUDIT_TURNS", "BACKOFF", "Audit", "Audits", "Trigger"]

# Coordinator turns numbered from here are audit decisions (those below are plan revisions).
AUDIT_TURNS = 1000
# Seconds before a fresh decision session, after the 1st, 2nd, ... session gave none.
BACKOFF = (5.0, 15.0, 60.0, 300.0)
# Fresh sessions for one revision before the run stops (failed): never a runtime decision,
# and never an unbounded spend on a coordinator that cannot decide.
MAX_SESSIONS = 8
KEEP_SEEN = 1000  # trigger ids remembered for deduplication
KEEP_DONE = 50  # completed audits kept in the state (all are in the run's events)

Scope = Literal["targeted", "global"]


class Trigger(FlowState):
    id: str
    kind: str  # mission_outcome, turn_stall, mission_deadline, failed_turns, ...
    scope: Scope = "targeted"
    lane: str | None = None
    why: str = ""
    at: str = ""


class Audit(FlowState):
    id: str
    scope: Scope
    targets: tuple[str, ...]
    revision: int = 1
    status: Literal["quiescing", "deciding", "completed"] = "quiescing"
    triggers: tuple[Trigger, ...] = ()
    turn: int = AUDIT_TURNS + 1  # the coordinator turn number deciding this revision
    sessions: int = 0  # decision sessions of this revision that gave nothing valid
    errors: tuple[str, ...] = ()
    retry_at: float = 0.0
    opened_at: str = ""
    decision: dict[str, Any] | None = None
    verdicts: tuple[dict[str, Any], ...] = ()

    @property
    def place(self) -> str:
        return f"audits/{self.id}-r{self.revision}"


class Audits(FlowState):
    seq: int = 0
    turns: int = 0  # audit decision turns numbered so far
    open: Audit | None = None
    done: tuple[Audit, ...] = ()
    seen: tuple[str, ...] = ()
    next_global_at: float = 0.0  # 0: not scheduled yet
    running: int | None = None  # the audit turn a coordinator session is in, if any

    def trigger(self, t: Trigger, lanes: Sequence[str]) -> tuple[Audits, list[Command]]:
        """Open an audit for `t`, or fold `t` into the open one."""
        if t.id in self.seen:
            return self, []
        book = self.replace(seen=(*self.seen, t.id)[-KEEP_SEEN:])
        targets = tuple(lanes) if t.scope == "global" else (t.lane or lanes[0],)
        a = self.open
        if a is None:
            a = Audit(
                id=f"A{self.seq + 1:06d}",
                scope=t.scope,
                targets=targets,
                triggers=(t,),
                turn=AUDIT_TURNS + self.turns + 1,
                opened_at=t.at,
            )
            book = book.replace(seq=self.seq + 1, turns=self.turns + 1, open=a)
        else:
            scope: Scope = "global" if "global" in (a.scope, t.scope) else "targeted"
            a = a.replace(
                scope=scope,
                targets=tuple(dict.fromkeys([*a.targets, *targets])),
                revision=a.revision + 1,
                status="quiescing",
                triggers=(*a.triggers, t),
                turn=AUDIT_TURNS + self.turns + 1,
                sessions=0,
                retry_at=0.0,
            )
            book = book.replace(turns=self.turns + 1, open=a)
        event = mev.AuditOpened(
            lane=t.lane,
            audit_id=a.id,
            scope=a.scope,
            targets=list(a.targets),
            revision=a.revision,
            trigger_kind=t.kind,
            why=t.why[:2000],
        )
        return book, [Emit(event)]

    def deciding(self) -> Audits:
        assert self.open is not None
        return self.replace(open=self.open.replace(status="deciding"))

    def refused(self, error: str, at: float) -> tuple[Audits, Audit]:
        """The open audit's decision session gave nothing valid: a fresh one after a backoff."""
        assert self.open is not None
        a = self.open
        wait = BACKOFF[min(a.sessions, len(BACKOFF) - 1)]
        a = a.replace(
            sessions=a.sessions + 1, errors=(*a.errors, error[:500])[-10:], retry_at=at + wait
        )
        return self.replace(open=a), a

    def retry(self) -> Audits:
        """Fresh sessions again, at once (a resumed run gives the coordinator another chance)."""
        assert self.open is not None
        return self.replace(open=self.open.replace(sessions=0, retry_at=0.0))

    def close(self, decision: dict[str, Any]) -> Audits:
        assert self.open is not None
        a = self.open.replace(
            status="completed", decision=decision, verdicts=tuple(decision.get("lanes", ()))
        )
        return self.replace(open=None, done=(*self.done, a)[-KEEP_DONE:])

    def paused(self, lane: str) -> bool:
        return self.open is not None and lane in self.open.targets
