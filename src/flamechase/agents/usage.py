"""What a turn cost: the dated price table, token pricing, and running-total differences.

Owns `prices.json` (bundled, dated, USD per million tokens) and its `FLAMECHASE_PRICES=FILE`
override, the lookup of a model's price under the names CLIs report (`claude-sonnet-4-5-
20250929`, `anthropic/claude-sonnet-4-5`, `models/gemini-2.5-pro`), and `RunningTotals`,
which turns the per-session running totals some CLIs report (claude `total_cost_usd` and
`modelUsage`, codex `tokenUsage.total`) into per-turn figures.

The rule every backend follows: a CLI's own reported cost wins; otherwise tokens × price.
A model the table does not list (a model newer than the table) is priced at an upper bound:
the highest rates the table lists for its vendor (recognised by the model's name, per the
table's `vendors`), or for any vendor when the name says none. So a cost budget stops early
rather than never; `unpriced_notice` is the one line that says so at start. Only a table with
no models at all leaves tokens unpriced, and `Backend.can_bound_cost()` says so before the run
starts. Must not touch run state or budgets: it only computes numbers.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import os
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from flamechase.agents.backend import Usage
from flamechase.errors import BackendUnavailable

__all__ = [
    "PRICES_VAR",
    "Bound",
    "Price",
    "PriceTable",
    "RunningTotals",
    "TokenCounts",
    "cost_bound",
    "load_prices",
    "price_for",
    "priced",
    "unpriced_notice",
]

PRICES_VAR = "FLAMECHASE_PRICES"
_PRICE_FIELDS = ("input", "output", "cache_read", "cache_write")
_MAX_PRICE_FILE = 8 * 1024 * 1024
_SHAPE = '{"date": "YYYY-MM-DD", "models": {"<model>": {"input": …, "output": …}}}'


@dataclasses.dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens of each kind."""

    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0

    def cost(self, tokens: TokenCounts) -> float:
        return (
            tokens.input * self.input
            + tokens.output * self.output
            + tokens.cache_read * self.cache_read
            + tokens.cache_write * self.cache_write
        ) / 1_000_000


@dataclasses.dataclass(frozen=True, slots=True)
class TokenCounts:
    """Tokens of one answer by kind. `input` excludes cached tokens (read or written)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    def __add__(self, other: TokenCounts) -> TokenCounts:
        return TokenCounts(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
        )

    def usage(self, cost_usd: float = 0.0, *, self_reported: bool = False) -> Usage:
        return Usage(
            cost_usd=cost_usd,
            input_tokens=self.input,
            output_tokens=self.output,
            cache_read_tokens=self.cache_read,
            cache_write_tokens=self.cache_write,
            self_reported=self_reported,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class Bound:
    """What a model the table does not list is counted at: an upper bound, not its price."""

    price: Price
    vendor: str  # "" when the model's name names no vendor the table knows
    models: tuple[str, ...]  # the listed models whose rates set it
    date: str  # the table's date


@dataclasses.dataclass(frozen=True, slots=True)
class PriceTable:
    date: str
    models: Mapping[str, Price]
    source: str  # "bundled" or the override file's path, for messages
    # vendor -> the starts of its models' names (`claude`, `gpt`), for pricing unlisted models
    vendors: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)

    def lookup(self, model: str) -> Price | None:
        """The price of `model` under any of the names a CLI may report for it."""
        for name in _candidates(model):
            price = self.models.get(name)
            if price is not None:
                return price
        return None

    def vendor_of(self, model: str) -> str:
        name = _candidates(model)[-1]
        return next((v for v, starts in self.vendors.items() if name.startswith(starts)), "")

    def bound(self, model: str) -> Bound | None:
        """The highest rates listed for `model`'s vendor (any vendor's when its name names
        none, or the table lists none of its vendor's models); None for an empty table."""
        vendor = self.vendor_of(model)
        listed: dict[str, Price] = {}
        for name, price in self.models.items():
            listed.setdefault(_candidates(name)[-1], price)  # each model once
        own = {n: p for n, p in listed.items() if vendor and self.vendor_of(n) == vendor}
        if not own:
            vendor, own = "", listed
        if not own:
            return None
        top = Price(*(max(getattr(p, f) for p in own.values()) for f in _PRICE_FIELDS))
        setters = [
            next(n for n, p in own.items() if getattr(p, f) == getattr(top, f))
            for f in ("input", "output")
        ]
        return Bound(top, vendor, tuple(dict.fromkeys(setters)), self.date)


# A date or "latest" suffix (`-20250929`, `@20250929`, `-2025-08-07`, `-latest`) and a
# context-window tag (`[1m]`) name the same priced model.
_SUFFIXES = re.compile(r"(\[[^\]]*\]|[-@](\d{8}|\d{4}-\d{2}-\d{2})|-latest)$")


def _candidates(model: str) -> list[str]:
    out = [model]
    name = model.strip().lower()
    # Provider prefixes: `anthropic/claude-…` (opencode), `models/gemini-…` (Gemini API).
    name = name.rsplit("/", 1)[-1]
    out.append(name)
    while True:
        shorter = _SUFFIXES.sub("", name)
        if shorter == name or not shorter:
            break
        name = shorter
        out.append(name)
    return out


_cache: dict[tuple[str, float, int], PriceTable] = {}


def _bundled() -> PriceTable:
    key = ("", 0.0, 0)
    table = _cache.get(key)
    if table is None:
        raw = resources.files("flamechase.agents").joinpath("prices.json").read_bytes()
        table = _parse(raw, "bundled")
        _cache[key] = table
    return table


def load_prices() -> PriceTable:
    """The bundled table, or the `FLAMECHASE_PRICES` file; BackendUnavailable when that is bad."""
    override = os.environ.get(PRICES_VAR, "").strip()
    if not override:
        return _bundled()
    path = Path(override).expanduser()
    try:
        st = path.stat()
        key = (str(path), st.st_mtime, st.st_size)
        table = _cache.get(key)
        if table is not None:
            return table
        if st.st_size > _MAX_PRICE_FILE:
            raise _bad(override, f"larger than {_MAX_PRICE_FILE // (1024 * 1024)} MiB")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise _bad(override, "no such file") from None
    except OSError as exc:
        raise _bad(override, exc.strerror or type(exc).__name__) from None
    table = _parse(raw, str(path))
    if not table.vendors:
        # Which names belong to which vendor is not a price: an override need not repeat it.
        table = dataclasses.replace(table, vendors=_bundled().vendors)
    _cache[key] = table
    return table


def _bad(where: str, why: str) -> BackendUnavailable:
    return BackendUnavailable(f"{PRICES_VAR}={where}: {why}; expected a JSON file {_SHAPE}")


def _parse(raw: bytes, source: str) -> PriceTable:
    try:
        data: Any = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _bad(source, f"not JSON ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise _bad(source, "the top level is not an object")
    date = data.get("date")
    if not isinstance(date, str):
        raise _bad(source, "'date' is missing or not a string")
    try:
        dt.date.fromisoformat(date)
    except ValueError:
        raise _bad(source, f"'date' {date[:40]!r} is not YYYY-MM-DD") from None
    models = data.get("models")
    if not isinstance(models, dict):
        raise _bad(source, "'models' is missing or not an object")
    table: dict[str, Price] = {}
    for name, entry in models.items():
        if not isinstance(entry, dict):
            raise _bad(source, f"model {name[:60]!r} is not an object")
        values: dict[str, float] = {}
        for field in _PRICE_FIELDS:
            value = entry.get(field, 0.0)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value < 0
            ):
                raise _bad(source, f"model {name[:60]!r}: {field!r} is not a price >= 0")
            values[field] = float(value)
        if "input" not in entry or "output" not in entry:
            raise _bad(source, f"model {name[:60]!r} needs at least 'input' and 'output'")
        table[name] = Price(**values)
        # Also index the normalised name, so a file may say `Claude-Opus-4-5` or a dated id.
        table.setdefault(_candidates(name)[-1], table[name])
    return PriceTable(
        date=date, models=table, source=source, vendors=_vendors(data.get("vendors", {}), source)
    )


def _vendors(raw: Any, source: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(raw, dict):
        raise _bad(source, "'vendors' is not an object")
    out: dict[str, tuple[str, ...]] = {}
    for vendor, starts in raw.items():
        if not (
            isinstance(starts, list)
            and starts
            and all(isinstance(x, str) and x.strip() for x in starts)
        ):
            raise _bad(source, f"vendor {vendor[:60]!r}: expected a list of model-name starts")
        out[vendor] = tuple(x.strip().lower() for x in starts)
    return out


def price_for(model: str) -> Price | None:
    """The price of `model` from the active table (BackendUnavailable on a bad override)."""
    if not model:
        return None
    return load_prices().lookup(model)


def cost_bound(model: str) -> Bound | None:
    """The upper bound `model` is counted at, or None when it has a price (or the table is
    empty). BackendUnavailable on a bad override."""
    table = load_prices()
    if not model or table.lookup(model) is not None:
        return None
    return table.bound(model)


def unpriced_notice(model: str) -> str | None:
    """One line for the start of a run when `model` is counted at an upper bound."""
    bound = cost_bound(model)
    if bound is None:
        return None
    who = f"{bound.vendor} " if bound.vendor else ""
    return (
        f"{model} has no price; counting it at {'/'.join(bound.models)} rates "
        f"(${bound.price.input:g}/M tokens in, ${bound.price.output:g}/M out: the highest "
        f"{who}rates in the price table of {bound.date}), an upper bound: set "
        f"{PRICES_VAR} to correct"
    )


def priced(model: str, tokens: TokenCounts) -> float | None:
    """tokens × price of `model` (an unlisted model at its upper bound), or None when the
    table has nothing to price it with (never raises)."""
    if not model:
        return None
    try:
        table = load_prices()
    except BackendUnavailable:
        # A bad override is refused before the run by Backend.check(); mid-run it means the
        # file changed under us, and a turn must not fail for that.
        return None
    price = table.lookup(model)
    if price is None:
        bound = table.bound(model)
        price = bound.price if bound is not None else None
    return None if price is None else price.cost(tokens)


class RunningTotals:
    """Per-turn differences of numbers a CLI reports as running totals for its session.

    `step(key, total)` returns how much `total` grew since the last call for `key`. A total
    that shrinks means the CLI started counting again (a restarted process); the new total is
    then all new. `reset()` forgets everything, for when we start a new process ourselves.
    """

    def __init__(self) -> None:
        self._seen: dict[str, float] = {}

    def step(self, key: str, total: float) -> float:
        if not math.isfinite(total) or total < 0:
            return 0.0
        previous = self._seen.get(key, 0.0)
        self._seen[key] = total
        return total - previous if total >= previous else total

    def step_int(self, key: str, total: int) -> int:
        return round(self.step(key, float(total)))

    def reset(self) -> None:
        self._seen.clear()
