"""The account's usage shares a CLI reports on its own: how much of each window is used.

Three shares, each a fraction of 1, named as a flow's usage thresholds name them
(and as `-p usage_probe=CMD` prints them):
`weekly` (the account's 7-day window, all models), `window_5h` (the 5-hour window) and
`extra_credit` (extra usage past the plan, as a share of its ceiling).

- Claude Code: `rate_limit_event.rate_limit_info` names one window (`rateLimitType`
  five_hour, seven_day, overage; seven_day_opus and seven_day_sonnet are one model's, not
  all models') and, when it knows it, its `utilization` (a fraction); from 2.1.2xx
  `unifiedWindows.five_hour|seven_day.utilization` gives both windows at once.
- Codex: `account/rateLimits/updated.rateLimits` (app-server `RateLimitSnapshot`) has a
  `primary` and a `secondary` window, each `usedPercent` (0-100) over `windowDurationMins`;
  which is which is told by the window's length, not its slot. Only the account's own limit
  (`limitId` "codex", or none) is read: other limit ids are one model's.
- exec agents: `"account"` in their usage file, the same three names (agents/exec_backend).

Pure; never raises for what a CLI printed (a share it cannot read is left out).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["KEYS", "checked", "from_claude", "from_codex"]

KEYS = ("weekly", "window_5h", "extra_credit")

_CLAUDE_TYPES = {"five_hour": "window_5h", "seven_day": "weekly", "overage": "extra_credit"}
_FIVE_HOURS = (240, 360)  # window lengths (minutes) taken for the 5-hour window
_ONE_WEEK = (6 * 1440, 8 * 1440)  # ... and for the weekly one
_ACCOUNT_LIMITS = (None, "", "codex")  # codex's own limit id; others are per model


def _fraction(value: Any, scale: float = 1.0) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    share = float(value) / scale
    if not math.isfinite(share) or share < 0:
        return None
    return round(share, 4)


def from_claude(info: Mapping[str, Any]) -> dict[str, float]:
    """The shares of one `rate_limit_info` (empty when it gives no utilization)."""
    out: dict[str, float] = {}
    windows = info.get("unifiedWindows")
    if isinstance(windows, Mapping):
        for kind in ("five_hour", "seven_day"):
            window = windows.get(kind)
            share = _fraction(window.get("utilization")) if isinstance(window, Mapping) else None
            if share is not None:
                out[_CLAUDE_TYPES[kind]] = share
    key = _CLAUDE_TYPES.get(str(info.get("rateLimitType") or ""))
    share = _fraction(info.get("utilization"))
    if key is not None and share is not None:
        out[key] = share  # the window this event is about: its own figure wins
    return out


def _codex_key(minutes: Any) -> str | None:
    if isinstance(minutes, bool) or not isinstance(minutes, int | float):
        return None
    if _FIVE_HOURS[0] <= minutes <= _FIVE_HOURS[1]:
        return "window_5h"
    if _ONE_WEEK[0] <= minutes <= _ONE_WEEK[1]:
        return "weekly"
    return None


def from_codex(limits: Mapping[str, Any]) -> dict[str, float]:
    """The shares of one `RateLimitSnapshot` (empty for another limit id than the account's)."""
    if limits.get("limitId") not in _ACCOUNT_LIMITS:
        return {}
    out: dict[str, float] = {}
    for slot in ("primary", "secondary"):
        window = limits.get(slot)
        if not isinstance(window, Mapping):
            continue
        key = _codex_key(window.get("windowDurationMins"))
        share = _fraction(window.get("usedPercent"), 100.0)
        if key is not None and share is not None:
            out[key] = share
    return out


def checked(data: Any) -> dict[str, float]:
    """An agent's own `account` object, or ValueError saying what is wrong with it."""
    if not isinstance(data, Mapping):
        raise ValueError(f"account must be an object of {', '.join(KEYS)}")
    out: dict[str, float] = {}
    for key, value in data.items():
        if key not in KEYS:
            raise ValueError(f"account.{str(key)[:40]} is not one of {', '.join(KEYS)}")
        share = _fraction(value)
        if share is None:
            raise ValueError(f"account.{key} must be a fraction of 1 (like 0.93)")
        out[key] = share
    return out
