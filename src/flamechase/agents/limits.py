"""Usage-limit windows and transient API errors, recognised from what agent CLIs print.

Owns two judgements on an error text and the retry policy that follows from the second:

- `find_usage_limit(text)`: the account's usage window is spent (claude "Weekly limit reached ∙
  resets 5am", "You've hit your session limit · resets 11:30am (Europe/Budapest)", the legacy
  "Claude AI usage limit reached|1755806400", codex "You've hit your usage limit … try again at
  12:16 PM", a Gemini daily quota). The answer becomes `status="limited"` with `resets_at`, so
  the lane pauses instead of burning its failure allowance. A reset given without a date is its
  next occurrence, in the named time zone or else local time.
- `is_transient(text)`: a rate limit or overload (429, 529, "overloaded") that the same
  session retries after a short back-off (`RetryPolicy`, sleep injectable for tests).

Only error texts are judged (an `is_error` result, an error event, stderr of a failed run),
never an agent's ordinary prose, which may well mention limits. Pure functions; must not touch
processes or run state.
"""

from __future__ import annotations

import asyncio
import calendar
import dataclasses
import os
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = [
    "DEFAULT_WAIT",
    "LimitHit",
    "RetryPolicy",
    "find_usage_limit",
    "from_epoch",
    "is_transient",
    "parse_reset",
]

# When a CLI says the window is spent but not when it reopens, look again after this long:
# long enough not to hammer the account, short enough to lose little of a 5-hour window.
DEFAULT_WAIT = timedelta(hours=1)
# Gemini's daily quotas roll over at midnight Pacific time.
_GEMINI_QUOTA_TZ = "America/Los_Angeles"
_MAX_TEXT = 20_000  # judge at most this much of an error text (they are short; output is not)


@dataclasses.dataclass(frozen=True, slots=True)
class LimitHit:
    """A usage limit: when it reopens (aware datetime) and whether the CLI said so."""

    resets_at: datetime
    reset_known: bool
    message: str


_LIMIT_PATTERNS = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"usage limit reached",  # claude (legacy and "Claude usage limit reached.")
        r"\blimit reached\s*[∙·•|-]",  # claude "Weekly limit reached ∙ resets 5am"
        r"(?:weekly|5-hour|five[- ]hour|session|daily|opus|sonnet) limit reached",
        r"you[’']?ve hit your (?:\w+ )?limit",  # claude 2.1 and codex (codex: ’)
        r"you have hit your (?:\w+ )?limit",
        r"usage limit has been reached",
        r"usage_limit_reached|usagelimitexceeded|usage_limit_exceeded",
        r"reached your (?:specified )?api usage limits",
        r"quota exceeded for quota metric[^\n]*per day",  # gemini daily quota (API wording)
        r"exhausted your daily quota",  # gemini 0.61's own wording of the same
    )
]

_TRANSIENT = re.compile(
    r"\b(?:429|529)\b|(?:api error|status|http)\D{0,12}(?:500|502|503|504)\b"
    r"|overloaded|rate[ _-]?limit(?:ed)?\b|too many requests|service unavailable"
    r"|resource[_ ]exhausted|resource has been exhausted|retry later|temporarily unavailable",
    re.IGNORECASE,
)


def find_usage_limit(text: str, *, now: datetime | None = None) -> LimitHit | None:
    """The usage limit `text` reports, or None. Never raises."""
    if not text:
        return None
    text = text[:_MAX_TEXT]
    if not any(p.search(text) for p in _LIMIT_PATTERNS):
        return None
    now = now or datetime.now(UTC)
    message = _first_line_with_limit(text)
    when = parse_reset(text, now=now)
    if when is None and re.search(r"per day|daily quota", text, re.IGNORECASE):
        when = _next_time(now, 0, 0, _zone(_GEMINI_QUOTA_TZ))
    if when is None:
        return LimitHit(now + DEFAULT_WAIT, False, message)
    return LimitHit(when, True, message)


def from_epoch(value: float | None) -> datetime | None:
    """An aware datetime from Unix seconds (or milliseconds), None when out of range."""
    if value is None:
        return None
    if value > 1e11:
        value /= 1000
    try:
        return datetime.fromtimestamp(value, UTC)
    except (ValueError, OverflowError, OSError):
        return None


def is_transient(text: str) -> bool:
    """Whether `text` reports a rate limit or overload worth retrying (not a usage limit)."""
    if not text:
        return False
    text = text[:_MAX_TEXT]
    return bool(_TRANSIENT.search(text)) and find_usage_limit(text) is None


def _first_line_with_limit(text: str) -> str:
    for line in text.splitlines():
        if any(p.search(line) for p in _LIMIT_PATTERNS):
            return line.strip()[:300]
    return " ".join(text.split())[:300]


# ---- reset times ---------------------------------------------------------------------------

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))

_TIME = (
    r"(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ampm>[ap])\.?\s*m\b\.?"
    r"|(?P<h24>\d{1,2}):(?P<m24>\d{2})"
)
_DATE = (
    rf"(?:(?P<iso>\d{{4}}-\d{{2}}-\d{{2}})|(?P<mon>{_MONTH_RE})\.?\s+(?P<day>\d{{1,2}})"
    r"(?:st|nd|rd|th)?(?:,?\s+(?P<year>\d{4}))?)"
)
_ZONE = r"\(?\s*(?P<tz>UTC|GMT|Z|[A-Za-z_]+(?:/[A-Za-z0-9_+\-]+)+)\s*\)?"
# "resets 5am", "resets Nov 14, 5am (Europe/Berlin)", "reset at 5pm (Europe/Warsaw)",
# "try again at 12:16 PM", "try again at May 11th, 2026 1:36 PM",
# "regain access on 2026-04-01 at 00:00 UTC".
_AT = re.compile(
    rf"(?:resets?|try again|regain access|available again|reopens?)\s+(?:at\s+|on\s+)?"
    rf"(?:{_DATE}(?:,?\s*(?:at\s+)?))?(?:{_TIME})(?:\s*{_ZONE})?",
    re.IGNORECASE,
)
_AT_DATE_ONLY = re.compile(
    rf"(?:resets?|try again|regain access)\s+(?:at\s+|on\s+)?{_DATE}(?:\s*{_ZONE})?",
    re.IGNORECASE,
)
_IN = re.compile(
    r"(?:try again|resets?|retry|available again)\s+in\s+(?P<span>(?:\d+\s*"
    r"(?:days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b[\s,and]*)+)",
    re.IGNORECASE,
)
_SPAN_PART = re.compile(
    r"(\d+)\s*(days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b", re.IGNORECASE
)
_EPOCH = re.compile(r"limit reached\|(\d{9,11})\b", re.IGNORECASE)
_JSON_RESETS_AT = re.compile(r'"resets?_?at"\s*:\s*(\d{9,13})', re.IGNORECASE)
_JSON_RESETS_IN = re.compile(r'"resets_in_seconds"\s*:\s*(\d{1,9})', re.IGNORECASE)


def parse_reset(text: str, *, now: datetime | None = None) -> datetime | None:
    """When the limit in `text` reopens (aware datetime), or None. Never raises."""
    now = now or datetime.now(UTC)
    try:
        return _parse_reset(text[:_MAX_TEXT], now)
    except (ValueError, OverflowError, OSError):
        return None


def _parse_reset(text: str, now: datetime) -> datetime | None:
    m = _EPOCH.search(text) or _JSON_RESETS_AT.search(text)
    if m:
        value = int(m.group(1))
        if value > 10**11:  # milliseconds
            value //= 1000
        return datetime.fromtimestamp(value, UTC)
    m = _JSON_RESETS_IN.search(text)
    if m:
        return now + timedelta(seconds=int(m.group(1)))
    m = _IN.search(text)
    if m:
        span = _span(m.group("span"))
        if span is not None:
            return now + span
    m = _AT.search(text)
    if m:
        return _at(m, now)
    m = _AT_DATE_ONLY.search(text)
    if m:
        zone = _zone(m.group("tz"))
        day = _date(m, now.astimezone(zone))
        if day is not None:
            return datetime(day.year, day.month, day.day, tzinfo=zone)
    return None


def _span(text: str) -> timedelta | None:
    total = timedelta()
    found = False
    for number, unit in _SPAN_PART.findall(text):
        found = True
        n = int(number)
        u = unit.lower()
        if u.startswith("d"):
            total += timedelta(days=n)
        elif u.startswith("h"):
            total += timedelta(hours=n)
        elif u.startswith("m"):
            total += timedelta(minutes=n)
        else:
            total += timedelta(seconds=n)
    return total if found else None


def _zone(name: str | None) -> tzinfo:
    """The named zone; UTC for UTC/GMT/Z; local time when absent or unknown."""
    if name:
        if name.upper() in ("UTC", "GMT", "Z"):
            return UTC
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    local = datetime.now().astimezone().tzinfo
    return local if local is not None else UTC


def _at(m: re.Match[str], now: datetime) -> datetime | None:
    zone = _zone(m.group("tz"))
    if m.group("h") is not None:
        hour = int(m.group("h")) % 12 + (12 if m.group("ampm").lower() == "p" else 0)
        minute = int(m.group("m") or 0)
        if int(m.group("h")) > 12:
            return None
    else:
        hour, minute = int(m.group("h24")), int(m.group("m24"))
    if hour > 23 or minute > 59:
        return None
    local_now = now.astimezone(zone)
    day = _date(m, local_now)
    if day is None:
        return _next_time(now, hour, minute, zone)
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone)


def _date(m: re.Match[str], local_now: datetime) -> datetime | None:
    if m.group("iso"):
        return datetime.fromisoformat(m.group("iso"))
    if not m.group("mon"):
        return None
    month = _MONTHS[m.group("mon").lower().rstrip(".")]
    day = int(m.group("day"))
    if m.group("year"):
        return datetime(int(m.group("year")), month, day)
    candidate = datetime(local_now.year, month, day)
    # A date without a year that already passed (by more than a day) means next year.
    if candidate.date() < local_now.date() - timedelta(days=1):
        candidate = datetime(local_now.year + 1, month, day)
    return candidate


def _next_time(now: datetime, hour: int, minute: int, zone: tzinfo) -> datetime:
    """The next moment after `now` when the clock in `zone` shows hour:minute."""
    local_now = now.astimezone(zone)
    candidate = local_now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if candidate <= local_now:
        candidate += timedelta(days=1)
    return candidate


# ---- retries -------------------------------------------------------------------------------

RETRY_VAR = "FLAMECHASE_RETRY_DELAYS"
Sleep = Callable[[float], Awaitable[None]]


@dataclasses.dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Back-off for transient errors: one retry per delay (seconds), then the answer fails.

    `FLAMECHASE_RETRY_DELAYS=0,0` (comma-separated seconds) replaces the delays, so end-to-end
    tests through the real command line do not wait.
    """

    delays: tuple[float, ...] = (2.0, 4.0, 8.0)
    sleep: Sleep = asyncio.sleep

    @classmethod
    def from_env(cls) -> RetryPolicy:
        raw = os.environ.get(RETRY_VAR, "").strip()
        if not raw:
            return cls()
        try:
            delays = tuple(max(0.0, float(x)) for x in raw.split(",") if x.strip())
        except ValueError:
            return cls()
        return cls(delays=delays[:10])
