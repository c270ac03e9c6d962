"""Turns: started, valid, failed, interrupted, paused; a role moved to another agent."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from flamechase.events.base import Event, register
from flamechase.events.present import Seen, Shown, and_, clip, money, plural, secs


def _who(e: Event, turn: int, attempt: int = 1) -> str:
    """`actor — turn N of lane`, or `actor's turn N` for a turn outside lanes; its attempt
    when it is taken again (after a failure, a cut or a usage limit)."""
    again = f", attempt {attempt}" if attempt > 1 else ""
    if e.lane:
        return f"{e.actor} — turn {turn}{again} of {e.lane}"
    return f"{e.actor or 'an actor'}'s turn {turn}{again} (outside lanes)"


def _source(lane: str) -> str:
    """Who a delivered report is from: a lane, or the runtime (reports to `system:LANE`)."""
    return "the runtime" if lane == "system" or lane.startswith("system:") else lane


def _on(host: str | None) -> str:
    """Where a turn ran, when that was another machine (a Ray node)."""
    return f", on {clip(host, 80)}" if host else ""


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TurnStarted(Event):
    """A turn of `actor` (its role) in `lane` (None: a turn outside lanes, e.g. planning)."""

    kind: ClassVar[str] = "turn_started"
    turn: int = 0
    attempt: int = 1
    backend: str = ""
    place: str = ""
    delivered: list[str] = dataclasses.field(default_factory=list)
    # The lanes whose reports this turn reads (`StartTurn.inbox_from`); None in journals
    # written before flamechase 0.2 said so.
    reads: list[str] | None = None

    def describe(self) -> str:
        text = f"turn {self.turn} starts ({self.backend})"
        if self.delivered:
            text += f" · with {len(self.delivered)} report(s) in its inbox"
        return text

    def show(self, seen: Seen) -> Shown:
        place = self.place or "source"
        before = seen.last_actor(self.lane) if self.lane else None
        if before and before != self.actor and seen.last_place(self.lane or "") == place:
            # The seeds' words: the actors of a lane hand each other the tree (or the copy),
            # when the turn works where the last one did.
            where = f"{before} hands {self.actor} {seen.handed(place)}"
        else:
            where = f"in {seen.place_words(place)}"
        head = f"{_who(self, self.turn, self.attempt)} starts, {where} ({self.backend})"
        if not self.delivered:
            return Shown(head + ".", "turn")
        by_lane: dict[str, list[str]] = {}
        artifacts = 0
        for rid in self.delivered:
            rep = seen.report(rid)
            by_lane.setdefault(_source(rep.lane if rep else rid.split(".", 1)[0]), []).append(rid)
            artifacts += rep.artifacts if rep else 0
        parts = [f"{src} ({', '.join(ids)})" for src, ids in by_lane.items()]
        carried = f" carrying {plural(artifacts, 'artifact')}" if artifacts else ""
        return Shown(
            f"{head}; receives {plural(len(self.delivered), 'report')}{carried} "
            f"from {and_(parts)}.",
            "receive",
        )


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TurnEnded(Event):
    """How a turn ended; each subclass is one outcome. Spend is per turn, never a total."""

    turn: int = 0
    attempt: int = 1
    duration: float = 0.0
    cost_usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    transcript: str | None = None
    repairs: int = 0
    exit_code: int | None = None
    counted: bool = True  # counts toward budget.turns (planning sessions do not)
    # What the agent asked the runtime for ($FLAMECHASE_REQUESTS), and lines refused.
    requests: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    requests_refused: list[str] = dataclasses.field(default_factory=list)
    # Where the turn ran when not on the machine that runs the run (a Ray node), else None.
    host: str | None = None
    # The account's usage shares its CLI reported during the turn (`weekly`, `window_5h`,
    # `extra_credit`, fractions of 1: agents/account.py), and which CLI said them; a fact of
    # the account, not a spend of the turn.
    usage_shares: dict[str, float] = dataclasses.field(default_factory=dict)
    usage_source: str = ""

    @property
    def status(self) -> str:
        return {"lane_paused": "limited"}.get(self.kind, self.kind.removeprefix("turn_"))

    def payload(self) -> dict[str, Any]:
        # The outcome in one word as well as in the kind (readers of the JSON lines use it).
        return {**Event.payload(self), "status": self.status}


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TurnValid(TurnEnded):
    """The turn's result validated. `result` is the validated JSON object."""

    kind: ClassVar[str] = "turn_valid"
    result: dict[str, Any] = dataclasses.field(default_factory=dict)
    report_status: str | None = None
    summary: str = ""
    artifacts: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    acknowledged: dict[str, int] = dataclasses.field(default_factory=dict)
    recovered_from_checkpoint: bool = False
    report_id: str | None = None  # set by flamechase 0.1, which published with the turn

    def describe(self) -> str:
        text = f"turn {self.turn} {self.report_status or 'valid'}"
        if self.summary:
            text += f": {self.summary[:120]}"
        if self.cost_usd:
            text += f" · ${self.cost_usd:.4f}"
        return text + f" · {self.duration:.1f}s" + (f" · on {self.host}" if self.host else "")

    def show(self, seen: Seen) -> Shown:
        said = f": “{clip(self.summary)}”" if self.summary else ""
        return Shown(
            f"{_who(self, self.turn, self.attempt)} ends {self.report_status or 'valid'} "
            f"({secs(self.duration)}, {money(self.cost_usd)}{_on(self.host)}){said}.",
            "end",
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TurnFailed(TurnEnded):
    kind: ClassVar[str] = "turn_failed"
    error: str = ""
    # The machine the turn ran on was lost under it (a Ray node): the turn failed, but not
    # through anything the lane did, so it never counts toward holding the lane.
    node_lost: bool = False
    report_id: str | None = None  # set by flamechase 0.1, which published with the turn

    def describe(self) -> str:
        where = f" (on {self.host})" if self.host else ""
        return f"turn {self.turn} FAILED{where}: {self.error[:160]}"

    def show(self, seen: Seen) -> Shown:
        who = _who(self, self.turn, self.attempt)
        return Shown(
            f"{who} FAILED ({secs(self.duration)}{_on(self.host)}): {clip(self.error, 200)}.",
            "fail",
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TurnInterrupted(TurnEnded):
    """Cut by a stop or a crash: the same role takes the same turn again."""

    kind: ClassVar[str] = "turn_interrupted"
    reason: str = ""
    counted: bool = False
    # Recorded by a resumed engine for a turn a dead one left under way.
    recovered: bool = False

    def describe(self) -> str:
        return f"turn {self.turn} cut: {self.reason}"

    def show(self, seen: Seen) -> Shown:
        who = _who(self, self.turn, self.attempt)
        return Shown(
            f"{who} was cut ({clip(self.reason, 160)}); the same actor takes it again.",
            "fail",
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LanePaused(TurnEnded):
    """A usage window closed: the lane waits until `until`, then retakes the turn."""

    kind: ClassVar[str] = "lane_paused"
    until: str | None = None  # when the window of the agent the turn ran on reopens
    reason: str = ""
    counted: bool = False
    # A role given alternatives (engine/failover): the one its next turn moves to (the lane
    # does not wait), or, none being open, when the first of them reopens if before `until`.
    agent: str = ""
    next_agent: str | None = None
    resumes: str | None = None

    @property
    def lane_until(self) -> str | None:
        """When the lane may go on: never paused when the role moves to another agent."""
        return None if self.next_agent else (self.resumes or self.until)

    def describe(self) -> str:
        if self.next_agent:
            return f"{self.agent} in a usage window until {self.until}: {self.reason}"
        return f"paused until {self.lane_until}: {self.reason}"

    def show(self, seen: Seen) -> Shown:
        where = self.lane or f"{self.actor}'s turns"
        on = f" on {clip(self.agent, 80)}" if self.agent else ""
        if self.next_agent:
            return Shown(
                f"A usage window closed for {self.actor}{on} until {self.until}: "
                f"{clip(self.reason, 160)}; turn {self.turn} is taken again on "
                f"{clip(self.next_agent, 80)}.",
                "warn",
            )
        return Shown(
            f"{where} pauses until {self.lane_until}: {clip(self.reason, 160)} (a usage window "
            f"closed for {self.actor}{on}); the same actor takes turn {self.turn} again then.",
            "warn",
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AgentSwitched(Event):
    """A role given alternatives takes its next turn on another of them (engine/failover):
    `to` is open where `previous` is in a usage window or did not start, or `to` is its first
    again, its window reset."""

    kind: ClassVar[str] = "agent_switched"
    turn: int = 0
    previous: str = ""
    to: str = ""
    index: int = 0  # of `to` among the role's alternatives (0: its first)
    alternatives: list[str] = dataclasses.field(default_factory=list)
    reason: str = ""  # why the ones before `to` are passed over (empty: back to the first)

    def describe(self) -> str:
        return f"{self.actor} moves from {self.previous} to {self.to}"

    def show(self, seen: Seen) -> Shown:
        where = f" in {self.lane}" if self.lane else ""
        if self.index == 0:
            why = "its window reset"
            head = f"{self.actor}{where} goes back to {clip(self.to, 80)}, its first agent,"
        else:
            why = clip(self.reason, 200) or "the agents before it are closed"
            head = (
                f"{self.actor}{where} moves to {clip(self.to, 80)} (alternative "
                f"{self.index + 1} of {len(self.alternatives) or self.index + 1})"
            )
        return Shown(f"{head} from {clip(self.previous, 80)} for turn {self.turn}: {why}.", "warn")
