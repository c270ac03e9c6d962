"""parrallello's account-usage thresholds: the seed's "Weekly · all models ≥ 92 % → do not
launch new blocks; 5 h window ≥ 95 % → same; extra credit ≥ 90 % of the ceiling → pause at the
end of the round and tell the owner in one line".

Two sources, the freshest word on each share judged:

- what the CLIs report on their own: a turn's end carries the shares its CLI reported during
  the turn (claude's `rate_limit_event`, codex's `account/rateLimits/updated`, an exec
  agent's usage file: agents/account.py), as `TurnEnded.usage_shares`;
- the user's `-p usage_probe=CMD`: a command the runtime runs, jailed in a throw-away copy of
  the source (like a gate: nothing it writes stays), that prints one JSON object such as
  `{"weekly": 0.93, "window_5h": 0.4, "extra_credit": 0.1}` (fractions of 1; a missing key is
  not judged). It runs before the first front opens and again after every round that ends. A
  probe that fails or prints no such object is said in the log and judged as nothing: it never
  stops a run by itself.

A reading replaces the earlier one of the same share (events are folded in the order they
were recorded, so the last is the freshest); `status` and the live view show each share with
its source. The probe also runs every 2 hours while fronts remain (the seed's "get_usage runs
every 2 h and at every end of block").

The weekly and 5-hour thresholds are the seed's "wait mode until the reset": the blocks under
way finish, and then each front waits (in place, `usage_paused="reset"`) instead of starting
its next one, and fronts not yet open stay closed. With a probe the run stays up and asks it
again every 2 hours; once it reads below (the reset), the waiting fronts start their next
block. Without a probe (or when only a CLI read the share) there is nothing to ask: once
nothing runs the run ends `held`, and the same command picks it up after the reset.

The extra-credit pause ends the run `held` once no round is under way (the paused fronts keep
their place); the same command (or `exec --resume`) picks it up again: the probe is asked
first, and the paused fronts go on with their next round only if it reads below the
threshold; otherwise the run says so in one line and stays held. Without a probe, a resume
goes on as asked, and the CLIs' next reports judge again.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, ClassVar

from flamechase.events import FlowEvent, register
from flamechase.events.present import Seen, Shown
from flamechase.flow import FlowState, Run
from flamechase.flows.parrallello.words import front_row, week_said

__all__ = [
    "EVERY",
    "EXTRA",
    "GO_ON",
    "GO_ON_UNPROBED",
    "PROBE",
    "WEEKLY",
    "WINDOW",
    "BlockWeek",
    "UsageRead",
    "UsageState",
    "UsageWait",
    "answered",
    "due",
    "judge",
    "next_probe",
    "parse",
    "probe_reads",
    "reported",
    "resumed",
    "waits",
    "week_spent",
]

WEEKLY, WINDOW, EXTRA = 0.92, 0.95, 0.90
KEYS = ("weekly", "window_5h", "extra_credit")
PROBE = "the probe"
EVERY = 7200.0  # seconds between probes while fronts remain (the seed: "every 2 h")
# How a held run is picked up again (FinishRun(resumes=True) lets the same command resume it).
GO_ON = (
    "to go on, run the same command again once it is below: the probe is asked first, and "
    "the paused fronts go on with their next round"
)
GO_ON_UNPROBED = (
    "to go on, run the same command again once it is below (no probe to ask first: "
    "-p usage_probe=CMD): the paused fronts go on with their next round"
)
# How a front waiting on the weekly or 5-hour threshold goes on (wait mode until the reset).
WAIT_PROBED = "the probe is asked again every 2 h; the next block starts once it reads below"
WAIT_UNPROBED = (
    "no probe reads that share (-p usage_probe): the run is held once nothing runs; run the "
    "same command after the reset"
)
_TIMEOUT = 120.0


def parse(output: str) -> dict[str, float]:
    """The shares of the last line of `output` that is a JSON object (ValueError: none)."""
    for raw in reversed(output.strip().splitlines()):
        line = raw.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        out: dict[str, float] = {}
        for k in KEYS:
            v = data.get(k)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise ValueError(f"{k} is {v!r}, not a number (a fraction of 1, like 0.93)")
            out[k] = float(v)
        if not out:
            raise ValueError(f"the JSON names none of {', '.join(KEYS)}")
        return out
    raise ValueError('it printed no JSON object like {"weekly": 0.93, "window_5h": 0.4}')


def judge(
    shares: dict[str, float], sources: dict[str, str] | None = None
) -> tuple[str | None, str | None]:
    """(why no new block starts, why the run pauses at the end of the round), in words that
    name who read each share when `sources` says."""

    def at(k: str, limit: float, of: str = "") -> str:
        by = (sources or {}).get(k)
        return f"at {shares[k]:.0%}{of} (≥ {limit:.0%}{f', from {by}' if by else ''})"

    stop = None
    if shares.get("weekly", 0.0) >= WEEKLY:
        stop = f"weekly usage {at('weekly', WEEKLY)}: no new block starts"
    elif shares.get("window_5h", 0.0) >= WINDOW:
        stop = f"5 h window {at('window_5h', WINDOW)}: no new block starts"
    pause = None
    if shares.get("extra_credit", 0.0) >= EXTRA:
        pause = (
            f"extra credit {at('extra_credit', EXTRA, ' of its ceiling')}: "
            "the run pauses at the end of the round"
        )
    return stop, pause


class UsageState(FlowState):
    seen: int = 0  # probes answered (the next one's key is numbered seen + 1)
    extra: int = 0  # probes owed beyond one per round: one per resume of a held run
    shares: dict[str, float] = {}  # the freshest reading of each share
    sources: dict[str, str] = {}  # ... and who gave it ("the probe", "claude at a critic turn")
    stop: str | None = None
    pause: str | None = None
    held: str | None = None  # the pause (or stop) a resumed run asks the probe about again
    error: str | None = None
    probed_at: float = 0.0  # when the probe last answered (seconds since the epoch)

    @property
    def asking(self) -> bool:
        """Nothing starts until the probe answers: before the first front, and on a resume."""
        return self.seen == 0 or self.held is not None

    def line(self) -> str | None:
        """What `status` and the live view say of it (None: nothing worth a line yet)."""
        if self.stop or self.pause:
            return "usage: " + "; ".join(w for w in (self.stop, self.pause) if w)
        if self.held:
            return "usage: the run was held on its usage; asking the probe again"
        if self.error:
            return f"usage: the probe failed ({self.error})"
        if self.shares:
            return "usage: " + figures(self.shares, self.sources)
        return None


def figures(shares: dict[str, float], sources: dict[str, str]) -> str:
    """`weekly 88% (from claude at a builder turn), window_5h 34% (from the probe)`."""
    said = {k: f" (from {sources[k]})" if sources.get(k) else "" for k in shares}
    return ", ".join(f"{k} {v:.0%}{said[k]}" for k, v in shares.items())


def due(u: UsageState, rounds_ended: int, now: float = 0.0) -> bool:
    """A probe before the first front opens, then one after each round that ends, one on each
    resume, and one every 2 hours (asked again by every `decide` until answered: the engine
    runs a key once at a time)."""
    if rounds_ended + u.extra >= u.seen:
        return True
    return u.seen > 0 and u.probed_at > 0 and now >= u.probed_at + EVERY


def next_probe(u: UsageState) -> float | None:
    """When the timed probe is next due (None before the first answer)."""
    return u.probed_at + EVERY if u.probed_at > 0 else None


def key(n: int) -> str:
    return f"pll:-:usage:{n}:"


def probe(n: int, command: str, place: str) -> Run:
    # `frozen={}`: run like a gate, in a fresh copy of the place that is thrown away after.
    return Run(
        key=key(n),
        place=place,
        argv=("/bin/sh", "-c", command),
        timeout=_TIMEOUT,
        frozen={},
        label="the account-usage probe (-p usage_probe)",
    )


def _merged(u: UsageState, shares: dict[str, float], source: str) -> UsageState:
    return u.replace(
        shares={**u.shares, **shares}, sources={**u.sources, **dict.fromkeys(shares, source)}
    )


def answered(
    u: UsageState, receipt: dict[str, Any], at: float = 0.0, rounds_ended: int = 0
) -> tuple[UsageState, UsageRead]:
    """Fold a probe's receipt (answered at `at`, with `rounds_ended` rounds ended): the
    freshest shares judged, or why it told nothing. A reading below the weekly and 5-hour
    thresholds lifts their stop (the reset came). On a resume (`held`), its word alone decides
    whether the paused fronts go on."""
    error = None
    shares: dict[str, float] = {}
    if receipt.get("exit_code") != 0 or receipt.get("error"):
        error = str(receipt.get("error") or f"exit code {receipt.get('exit_code')}")[:200]
    else:
        try:
            shares = parse(str(receipt.get("output") or ""))
        except ValueError as e:
            error = str(e)[:200]
    seen = u.seen + 1
    # A timed probe (one owed by no round or resume) moves the count of the owed ones on.
    u = u.replace(seen=seen, error=error, extra=max(u.extra, seen - 1 - rounds_ended))
    u = _merged(u.replace(probed_at=at or u.probed_at), shares, PROBE)
    stop, pause = judge(u.shares, u.sources)
    if error is not None:
        stop = u.stop  # no word: a stop in force stays
    if u.held is None:
        lifted = bool(u.stop) and not stop
        u = u.replace(stop=stop, pause=u.pause or pause)
        return u, UsageRead(shares=shares, stop=stop, pause=pause, error=error, lifted=lifted)
    if error is not None:  # no word: what held the run still holds it
        if u.held.endswith(": no new block starts"):
            stop = stop or u.held
        else:
            pause = f"{u.held} (the probe told nothing on the resume: {error})"
    again = "still" if pause or stop else "below"
    u = u.replace(stop=stop, pause=pause, held=None)
    return u, UsageRead(shares=shares, stop=stop, pause=pause, error=error, again=again)


def reported(
    u: UsageState, shares: dict[str, float], source: str
) -> tuple[UsageState, UsageRead | None]:
    """Fold what a CLI reported at a turn's end; an event only when a threshold is crossed,
    or when its reading lifts the weekly or 5-hour stop."""
    u = _merged(u, shares, source)
    stop, pause = judge(u.shares, u.sources)
    new_stop, new_pause = (stop if not u.stop else None), (pause if not u.pause else None)
    lifted = bool(u.stop) and not stop
    u = u.replace(stop=stop, pause=u.pause or pause)
    if not (new_stop or new_pause or lifted):
        return u, None
    return u, UsageRead(shares=shares, stop=new_stop, pause=new_pause, source=source, lifted=lifted)


def resumed(u: UsageState, probing: bool) -> tuple[UsageState, UsageRead | None]:
    """A held (or stopped) run resumed: the pause or stop is asked about again (the CLIs'
    readings are from before the hold), or, with no probe to ask, lifted as the user asked."""
    why = u.pause or u.stop
    if not why:
        return u, None
    if probing:
        kept = {k: v for k, v in u.sources.items() if v == PROBE}
        return u.replace(
            held=why,
            pause=None,
            stop=None,
            extra=u.extra + 1,
            shares={k: u.shares[k] for k in kept},
            sources=kept,
        ), None
    said = UsageRead(
        again="below", note="no probe to ask again (-p usage_probe): going on as asked"
    )
    return u.replace(pause=None, stop=None, shares={}, sources={}), said


def week_spent(start: float | None, now: float | None) -> float | None:
    """The share of the week a block spent: the weekly share now less at its start (None when
    either is unread, or the week was reset meanwhile)."""
    if start is None or now is None or now < start:
        return None
    return round(now - start, 4)


def probe_reads(stop: str | None) -> bool:
    """Whether the probe read the share a stop is about, so asking it again can lift the stop
    (a share only a CLI reported is read again only by a turn, and none starts meanwhile)."""
    return bool(stop) and f"from {PROBE})" in str(stop)


def waits(front: str, lane: str, block: int, stop: str, probing: bool) -> UsageWait:
    """The line a front says when its block ended under the weekly or 5-hour threshold."""
    return UsageWait(
        lane=lane,
        front=front,
        block=block,
        why=stop,
        then=WAIT_PROBED if probing and probe_reads(stop) else WAIT_UNPROBED,
    )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class UsageRead(FlowEvent):
    kind: ClassVar[str] = "usage_read"
    shares: dict[str, float] = dataclasses.field(default_factory=dict)
    stop: str | None = None
    pause: str | None = None
    error: str | None = None
    source: str = PROBE  # who read the shares: the probe, or a CLI at a turn's end
    again: str | None = None  # on a resume of a held run: "still" above, or "below" again
    note: str = ""
    lifted: bool = False  # the reading lifts the weekly or 5-hour stop: the reset came

    def describe(self) -> str:
        if self.again == "below":
            figures = ", ".join(f"{k} {v:.0%}" for k, v in self.shares.items())
            why = self.note or f"{self.source} reads {figures or 'nothing over a threshold'}"
            return f"usage on the resume: {why}; the paused fronts go on with their next round"
        if self.again == "still" and self.pause:
            return f"usage on the resume: still held: {self.pause}"
        if self.again == "still":
            return f"usage on the resume: still over: {self.stop}; {WAIT_PROBED}"
        if self.error:
            return f"usage probe told nothing: {self.error}"
        said = "; ".join(w for w in (self.stop, self.pause) if w)
        figures = ", ".join(f"{k} {v:.0%}" for k, v in self.shares.items())
        by = "" if self.source == PROBE else f" (from {self.source})"
        if self.lifted and not said:
            said = (
                "below the weekly and 5 h thresholds again: waiting fronts start their next block"
            )
        return f"usage {figures}{by}" + (f": {said}" if said else "")

    def show(self, seen: Seen) -> Shown:
        text = self.describe()
        if self.stop or self.pause:
            return Shown(text[0].upper() + text[1:] + ".", "warn", alert=text)
        return Shown(text[0].upper() + text[1:] + ".", "warn" if self.error else "info")


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class UsageWait(FlowEvent):
    """A front's block ended under the weekly or 5-hour threshold: it waits for the reset."""

    kind: ClassVar[str] = "usage_wait"
    front: str = ""
    block: int = 0
    why: str = ""
    then: str = ""

    def describe(self) -> str:
        return f"front {self.front} waits after block {self.block}: {self.why}; {self.then}"

    def show(self, seen: Seen) -> Shown:
        text = self.describe()
        row = front_row(self.front, state="waits for the usage reset", block=self.block)
        return Shown(text[0].upper() + text[1:] + ".", "warn", alert=text, rows=(row,))


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class BlockWeek(FlowEvent):
    """The share of the week a block spent, read by the probe after it (the seed's
    `cost_mark.py "<F> b<k>" <weekly%>`); over the pacing share, the seed's "if a block spends
    > 9 % of the week, the next one goes with ≤ 4 tickets and a ceiling of 40 calls"."""

    kind: ClassVar[str] = "block_week"
    front: str = ""
    block: int = 0
    week: float = 0.0
    paced: bool = False
    limit: float = 0.09
    tickets: int = 4
    ceiling: int = 40
    # Its front had ended with it: the share of the week all its blocks spent (`weeks`).
    total: float | None = None
    whole: bool = True

    def describe(self) -> str:
        said = f"front {self.front}'s block {self.block} spent {self.week:.1%} of the week"
        if self.total is not None:
            said += f"; the front spent {week_said(self.total, self.whole)} in all"
        if not self.paced:
            return said
        return (
            f"{said} (> {self.limit:.0%}): the next block goes with at most {self.tickets} "
            f"tickets a round and a ceiling of {self.ceiling} calls"
        )

    def show(self, seen: Seen) -> Shown:
        text = self.describe()
        return Shown(text[0].upper() + text[1:] + ".", "warn" if self.paced else "info")
