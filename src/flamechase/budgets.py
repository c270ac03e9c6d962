"""Budgets: what makes an unattended run stop, and the forms a user may write them in.

`budget.duration` (`90s`, `1h30m`, `PT1H30M`, `HH:MM:SS`, seconds), `budget.cost` (USD),
`budget.turns`, `budget.output_tokens` (`200k`, `1.5m`), `budget.disk` (`500M`, `20G`: what
the run's directory may hold before it makes no new copy) and `budget.graceful`. Every refusal
is a ParamError whose message is one line naming the key, the value and the accepted form.
The forms are the published runtime's (hmz 0.2.2) minus `inf` for a cost: a budget is what
makes an unattended run stop, so it must bound something.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from flamechase.errors import ParamError

__all__ = [
    "NO_BUDGET",
    "Budget",
    "parse_bool",
    "parse_cost",
    "parse_count",
    "parse_disk",
    "parse_duration",
    "parse_tokens",
]

# Budget values are short; refusing long ones up front keeps every parser linear and bounded
# (Decimal and int would otherwise happily chew on a megabyte of digits).
_MAX_VALUE_LEN = 100
_SHOWN = 80


def _show(value: object) -> str:
    """A value as it should appear inside a one-line message."""
    text = value if isinstance(value, str) else str(value)
    text = text if len(text) <= _SHOWN else text[:_SHOWN] + "…"
    return text if text.isprintable() and text.strip() == text and text else repr(text)


# --- budget values --------------------------------------------------------------------------------


def _text(value: object, key: str, form: str) -> str | float:
    """The stripped text of a str value, or a number as a float; ParamError for anything else.

    bool is refused although it is an int: `budget.turns: true` is a mistake, not 1.
    """
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ParamError(f"{key}={_show(value)}: expected {form}")
    if not isinstance(value, str):
        try:
            return float(value)
        except OverflowError:  # a YAML int with hundreds of digits
            return math.inf
    text = value.strip()
    if not text or len(text) > _MAX_VALUE_LEN:
        raise ParamError(f"{key}={_show(value)}: expected {form}")
    if text.lstrip("$ ").startswith("-"):
        # The form's own words ("expected …") would not say what is wrong with `-5`.
        raise ParamError(f"{key}={_show(value)}: a budget must not be negative; give {form}")
    return text


_DURATION_FORM = "seconds, 90s, 1h30m, 2d, PT1H30M, HH:MM:SS or MM:SS"
_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_PLAIN_SECONDS = re.compile(rf"\+?{_NUMBER}(?:e[+-]?\d+)?", re.IGNORECASE)
# Units in descending order; an index into this list is what the "each unit once, largest first"
# rule compares.
_UNITS: list[tuple[str, float]] = [
    ("w|wk|wks|weeks?", 604800.0),
    ("d|days?", 86400.0),
    ("h|hrs?|hours?", 3600.0),
    ("m|mins?|minutes?", 60.0),
    ("s|secs?|seconds?", 1.0),
]
# One `<number><unit>` at a time (a scanner, not one big pattern) so a long bad value cannot
# trigger backtracking.
_UNIT_PART = re.compile(
    rf"\s*({_NUMBER})\s*(?:{'|'.join(f'({u})' for u, _ in _UNITS)})(?![a-z])", re.IGNORECASE
)
_ISO = re.compile(
    rf"P(?:({_NUMBER})W)?(?:({_NUMBER})D)?(?:T(?:({_NUMBER})H)?(?:({_NUMBER})M)?(?:({_NUMBER})S)?)?",
    re.IGNORECASE,
)
_CLOCK = re.compile(r"(?:(\d+):([0-5]\d)|(\d+)):([0-5]\d(?:\.\d+)?)")


def parse_duration(value: object, *, key: str = "budget.duration") -> float:
    """Seconds in `value`: a number, `90s`, `1h30m`, `1h 30m`, `2d`, `PT1H30M`, `P1DT2H`,
    `HH:MM:SS` or `MM:SS`. Must be positive and finite."""
    text = _text(value, key, _DURATION_FORM)
    seconds: float | None
    if isinstance(text, float):
        seconds = text
    elif _PLAIN_SECONDS.fullmatch(text):
        seconds = float(text)
    elif text[0] in "Pp":
        seconds = _iso_seconds(text)
    elif ":" in text:
        seconds = _clock_seconds(text)
    else:
        seconds = _unit_seconds(text)
    if seconds is None:
        raise ParamError(f"{key}={_show(value)}: expected {_DURATION_FORM}")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ParamError(f"{key}={_show(value)}: must be a positive, finite duration")
    return seconds


def _iso_seconds(text: str) -> float | None:
    m = _ISO.fullmatch(text)
    # `P`, `PT` and `P1DT` match the pattern but say nothing (or end on a dangling T).
    if m is None or not any(m.groups()) or text.upper().endswith("T"):
        return None
    weights = (604800.0, 86400.0, 3600.0, 60.0, 1.0)
    return sum(float(g) * w for g, w in zip(m.groups(), weights, strict=True) if g)


def _clock_seconds(text: str) -> float | None:
    m = _CLOCK.fullmatch(text)
    if m is None:
        return None
    hours, minutes, lone_minutes, secs = m.groups()
    if hours is not None:
        return float(hours) * 3600 + float(minutes) * 60 + float(secs)
    return float(lone_minutes) * 60 + float(secs)


def _unit_seconds(text: str) -> float | None:
    pos, total, last_unit = 0, 0.0, -1
    while pos < len(text):
        m = _UNIT_PART.match(text, pos)
        if m is None:
            return None
        unit = next(i for i, g in enumerate(m.groups()[1:]) if g is not None)
        if unit <= last_unit:
            return None  # `30m1h`, `1h1h`: most likely a typo, so refuse rather than guess
        total += float(m.group(1)) * _UNITS[unit][1]
        last_unit, pos = unit, m.end()
    return total if last_unit >= 0 else None


_COST_FORM = "US dollars such as 5, $5.50 or 0.02"
_COST = re.compile(rf"\$?\s*({_NUMBER})")


def parse_cost(value: object, *, key: str = "budget.cost") -> float:
    """USD in `value` (`5`, `$5.50`, `0.02`); positive and finite, so `inf` is refused."""
    text = _text(value, key, _COST_FORM)
    if isinstance(text, float):
        amount = text
    else:
        m = _COST.fullmatch(text)
        if m is None:
            if "inf" in text.lower():
                raise ParamError(
                    f"{key}={_show(value)}: a budget must bound the run; give a finite amount"
                )
            raise ParamError(f"{key}={_show(value)}: expected {_COST_FORM}")
        amount = float(m.group(1))
    if not math.isfinite(amount):
        raise ParamError(f"{key}={_show(value)}: a budget must bound the run; give a finite amount")
    if amount <= 0:
        raise ParamError(f"{key}={_show(value)}: must be more than $0")
    return amount


_TOKENS_FORM = "a whole number of tokens such as 200000, 200k, 1.5m or 2g"
_TOKENS = re.compile(r"(\d(?:_?\d)*(?:\.\d+)?|\.\d+)(e[+-]?\d+)?\s*([kmg]?)", re.IGNORECASE)
_TOKEN_SCALE = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}
# Far beyond any real budget; the cap keeps Decimal->int conversion cheap for `1e999999`.
_MAX_TOKENS = 10**15


def parse_tokens(value: object, *, key: str = "budget.output_tokens") -> int:
    """A positive token count: `200000`, `200_000`, `200k`, `1.5m`, `2G`, `1e6`."""
    text = _text(value, key, _TOKENS_FORM)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise ParamError(f"{key}={_show(value)}: expected {_TOKENS_FORM}")
        amount = Decimal(text)
    else:
        m = _TOKENS.fullmatch(text)
        if m is None:
            raise ParamError(f"{key}={_show(value)}: expected {_TOKENS_FORM}")
        digits, exponent, suffix = m.groups()
        try:
            amount = Decimal(digits.replace("_", "") + (exponent or ""))
        except InvalidOperation:  # pragma: no cover - the pattern admits only valid decimals
            raise ParamError(f"{key}={_show(value)}: expected {_TOKENS_FORM}") from None
        if amount <= _MAX_TOKENS:  # scaling a huge exponent would trap Decimal's Overflow
            amount *= _TOKEN_SCALE[suffix.lower()]
    return _whole(amount, value, key)


def parse_count(value: object, *, key: str = "budget.turns") -> int:
    """A positive whole number (`budget.turns`)."""
    form = "a positive whole number such as 20"
    text = _text(value, key, form)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise ParamError(f"{key}={_show(value)}: expected {form}")
        return _whole(Decimal(text), value, key)
    if not re.fullmatch(r"\+?\d(?:_?\d)*", text):
        raise ParamError(f"{key}={_show(value)}: expected {form}")
    return _whole(Decimal(text.replace("_", "")), value, key)


def _whole(amount: Decimal, value: object, key: str) -> int:
    if amount > _MAX_TOKENS:
        raise ParamError(f"{key}={_show(value)}: must be at most {_MAX_TOKENS:,}")
    if amount != amount.to_integral_value():
        raise ParamError(f"{key}={_show(value)}: must be a whole number")
    if amount <= 0:
        raise ParamError(f"{key}={_show(value)}: must be at least 1")
    return int(amount)


_DISK_FORM = "bytes or a size such as 500M, 20G or 1.5T"
_DISK = re.compile(rf"({_NUMBER})\s*([kmgt]?)i?b?", re.IGNORECASE)
_DISK_SCALE = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_disk(value: object, *, key: str = "budget.disk") -> int:
    """Bytes in `value` (`budget.disk`): a number, or with K, M, G or T (powers of 1024)."""
    text = _text(value, key, _DISK_FORM)
    if isinstance(text, float):
        amount = text
    else:
        m = _DISK.fullmatch(text)
        if m is None:
            raise ParamError(f"{key}={_show(value)}: expected {_DISK_FORM}")
        amount = float(m.group(1)) * _DISK_SCALE[m.group(2).lower()]
    if not math.isfinite(amount) or amount < 1:
        raise ParamError(f"{key}={_show(value)}: must be at least one byte")
    return int(amount)


_TRUE = frozenset({"true", "yes", "1", "on", "y"})
_FALSE = frozenset({"false", "no", "0", "off", "n"})


def parse_bool(value: object, *, key: str = "budget.graceful") -> bool:
    """true/false, yes/no, on/off, 1/0 (any case), or a YAML boolean."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    raise ParamError(f"{key}={_show(value)}: expected true or false (yes/no, on/off, 1/0)")


# --- Budget ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Budget:
    """What makes a run stop. None means "no bound of this kind".

    `graceful`: when a bound is reached, let running turns finish (True) or cut them (False).
    """

    duration: float | None = None
    cost: float | None = None
    turns: int | None = None
    output_tokens: int | None = None
    graceful: bool = True
    disk: int | None = None  # bytes the run's directory may hold before a new copy is refused

    def is_empty(self) -> bool:
        """True when nothing bounds the run (`graceful` alone stops nothing)."""
        return (
            self.duration is None
            and self.cost is None
            and self.turns is None
            and self.output_tokens is None
        )

    def merged(self, newer: Mapping[str, object]) -> Budget:
        """A copy where the keys given in `newer` (short names, as parse_settings returns them)
        replace ours; so a resumed run can change one bound and keep the others."""
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(newer) - names)
        if unknown:
            raise ValueError(f"Budget has no field {', '.join(unknown)}")
        return dataclasses.replace(self, **newer)  # type: ignore[arg-type]

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Budget:
        """Inverse of to_json; keys written by other versions are ignored, missing ones default."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


# An unbounded run is allowed (the seeds: a run ends "when the budget runs out, or you stop
# it"); it is said out loud at start and in `status`.
NO_BUDGET = (
    "no budget: this run goes on until you stop it (Ctrl-C); bound it with -p "
    "budget.duration=…, budget.cost=…, budget.turns=… or budget.output_tokens=…"
)
