"""parrallello's account-usage thresholds: the seed's "Weekly · all models ≥ 92 % → do not
launch new blocks; 5 h window ≥ 95 % → same; extra credit ≥ 90 % of the ceiling → pause at the
end of the round and tell the owner in one line".

No agent CLI reports these shares in what flamechase reads (they only say, in an error, that
a window is spent: `agents/limits.py`, which pauses the lane), so they come from the user's
`-p usage_probe=CMD`: a command the runtime runs, jailed in a throw-away copy of the source
(like a gate: nothing it writes stays), that prints one JSON object such as
`{"weekly": 0.93, "window_5h": 0.4, "extra_credit": 0.1}` (fractions of 1; a missing key is
not judged). It runs before the first front opens and again after every round that ends. A
probe that fails or prints no such object is said in the log and judged as nothing: it never
stops a run by itself. Once crossed, a threshold holds for the rest of the run.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, ClassVar

from flamechase.events import FlowEvent, register
from flamechase.events.present import Seen, Shown
from flamechase.flow import FlowState, Run

__all__ = ["EXTRA", "WEEKLY", "WINDOW", "UsageRead", "UsageState", "due", "judge", "parse"]

WEEKLY, WINDOW, EXTRA = 0.92, 0.95, 0.90
KEYS = ("weekly", "window_5h", "extra_credit")
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


def judge(shares: dict[str, float]) -> tuple[str | None, str | None]:
    """(why no new block starts, why the run pauses at the end of the round), in words."""
    stop = None
    if shares.get("weekly", 0.0) >= WEEKLY:
        stop = f"weekly usage at {shares['weekly']:.0%} (≥ {WEEKLY:.0%}): no new block starts"
    elif shares.get("window_5h", 0.0) >= WINDOW:
        stop = f"5 h window at {shares['window_5h']:.0%} (≥ {WINDOW:.0%}): no new block starts"
    pause = None
    if shares.get("extra_credit", 0.0) >= EXTRA:
        pause = (
            f"extra credit at {shares['extra_credit']:.0%} of its ceiling (≥ {EXTRA:.0%}): "
            "the run pauses at the end of the round"
        )
    return stop, pause


class UsageState(FlowState):
    seen: int = 0  # probes answered (the next one's key is numbered seen + 1)
    shares: dict[str, float] = {}
    stop: str | None = None
    pause: str | None = None
    error: str | None = None

    def line(self) -> str | None:
        """What `status` and the live view say of it (None: nothing worth a line yet)."""
        if self.stop or self.pause:
            return "usage: " + "; ".join(w for w in (self.stop, self.pause) if w)
        if self.error:
            return f"usage: the probe failed ({self.error})"
        if self.shares:
            return "usage: " + ", ".join(f"{k} {v:.0%}" for k, v in self.shares.items())
        return None


def due(u: UsageState, rounds_ended: int) -> bool:
    """A probe before the first front opens, then one after each round that ends (asked
    again by every `decide` until answered: the engine runs a key once at a time)."""
    return rounds_ended >= u.seen


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


def answered(u: UsageState, receipt: dict[str, Any]) -> tuple[UsageState, UsageRead]:
    """Fold a probe's receipt: its shares judged, or why it told nothing."""
    error = None
    shares: dict[str, float] = {}
    if receipt.get("exit_code") != 0 or receipt.get("error"):
        error = str(receipt.get("error") or f"exit code {receipt.get('exit_code')}")[:200]
    else:
        try:
            shares = parse(str(receipt.get("output") or ""))
        except ValueError as e:
            error = str(e)[:200]
    stop, pause = judge(shares)
    u = u.replace(
        seen=u.seen + 1,
        shares=shares or u.shares,
        stop=u.stop or stop,
        pause=u.pause or pause,
        error=error,
    )
    return u, UsageRead(shares=shares, stop=stop, pause=pause, error=error)


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class UsageRead(FlowEvent):
    kind: ClassVar[str] = "usage_read"
    shares: dict[str, float] = dataclasses.field(default_factory=dict)
    stop: str | None = None
    pause: str | None = None
    error: str | None = None

    def describe(self) -> str:
        if self.error:
            return f"usage probe told nothing: {self.error}"
        said = "; ".join(w for w in (self.stop, self.pause) if w)
        figures = ", ".join(f"{k} {v:.0%}" for k, v in self.shares.items())
        return f"usage {figures}" + (f": {said}" if said else "")

    def show(self, seen: Seen) -> Shown:
        text = self.describe()
        if self.stop or self.pause:
            return Shown(text[0].upper() + text[1:] + ".", "warn", alert=text)
        return Shown(text[0].upper() + text[1:] + ".", "warn" if self.error else "info")
