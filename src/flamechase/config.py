"""`-p KEY=VALUE` settings, `-c CONFIG.yaml`, and budgets.

Settings come from two places with one vocabulary: `-p` pairs (always strings) and a YAML file
(strings, numbers, booleans). Keys starting with `budget.` bound the run; every other key is a
param of the flow, validated by the flow's pydantic model. Every refusal is a ParamError whose
message is one line naming the key, the value and the accepted form: a pydantic dump or a YAML
traceback tells an operator less than one sentence does.

Budget values accept the forms the published runtime (hmz 0.2.2) accepts, minus `inf` for a cost:
the budget is what makes an unattended run stop, so it must bound something.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from flamechase.errors import ParamError
from flamechase.flow import FlowParams

__all__ = [
    "BUDGET_KEYS",
    "Budget",
    "budget_required_message",
    "load_config",
    "parse_bool",
    "parse_cost",
    "parse_count",
    "parse_duration",
    "parse_settings",
    "parse_tokens",
    "split_kv",
]

BUDGET_KEYS = (
    "budget.duration",
    "budget.cost",
    "budget.turns",
    "budget.output_tokens",
    "budget.graceful",
)

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_KV_COMMA = re.compile(r",(?=[A-Za-z_][A-Za-z0-9_.]*=)")
# Budget values are short; refusing long ones up front keeps every parser linear and bounded
# (Decimal and int would otherwise happily chew on a megabyte of digits).
_MAX_VALUE_LEN = 100
# A config file is a handful of keys. The caps stop a hostile or corrupt file (YAML aliases can
# make a small file describe an exponentially large tree) from hanging `flamechase exec`.
_MAX_CONFIG_BYTES = 1 << 20
_MAX_CONFIG_KEYS = 1000
_MAX_CONFIG_DEPTH = 8
_SHOWN = 80


def _show(value: object) -> str:
    """A value as it should appear inside a one-line message."""
    text = _clip(value if isinstance(value, str) else str(value))
    return text if text.isprintable() and text.strip() == text and text else repr(text)


def _clip(text: str) -> str:
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --- -p -------------------------------------------------------------------------------------------


def split_kv(values: list[str]) -> list[tuple[str, str]]:
    """Split `-p k=v[,k2=v2]` values into pairs; a later duplicate key wins.

    A comma separates pairs only where `KEY=` follows it, so a value such as
    `evaluator=python bench.py --a,b` keeps its comma.
    """
    out: dict[str, str] = {}
    for value in values:
        for item in _KV_COMMA.split(value):
            key, eq, val = item.partition("=")
            if not eq or not _KEY.fullmatch(key):
                raise ParamError(f"-p {_show(item)}: expected KEY=VALUE[,KEY=VALUE...]")
            out[key] = val
    return list(out.items())


# --- -c -------------------------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """SafeLoader that keeps dates as text.

    A param never wants a `datetime`, and PyYAML raises a bare ValueError for an impossible date
    such as `2024-13-45`; as a string the value reaches the param's own validation instead.
    """


_Loader.add_constructor(
    "tag:yaml.org,2002:timestamp",
    lambda loader, node: loader.construct_scalar(node),  # type: ignore[arg-type]
)


def load_config(path: Path) -> dict[str, object]:
    """Read a YAML config into flat dotted keys (`budget: {cost: 5}` gives `budget.cost`).

    Leaf values stay YAML scalars (str, int, float, bool); the parsers take them as they are.
    An empty file is an empty config. Anything else wrong is a one-line ParamError.
    """
    where = f"config {_show(str(path))}"
    try:
        with path.open("rb") as fh:
            data = fh.read(_MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ParamError(f"{where}: no such file") from None
    except OSError as exc:
        raise ParamError(
            f"{where}: cannot read it: {_one_line(exc.strerror or str(exc))}"
        ) from None
    if len(data) > _MAX_CONFIG_BYTES:
        raise ParamError(f"{where}: larger than {_MAX_CONFIG_BYTES} bytes; is it a config file?")
    try:
        doc = yaml.load(data, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at = f" at line {mark.line + 1}" if mark is not None else ""
        problem = _one_line(exc.problem or exc.context or "malformed")
        raise ParamError(f"{where}: invalid YAML{at}: {problem}") from None
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as exc:
        # ReaderError (bad encoding) has no mark; ValueError/OverflowError come from scalars
        # PyYAML resolves but cannot build (a 5000-digit int); RecursionError from deep nesting.
        reason = _clip(_one_line(str(exc))) or type(exc).__name__
        raise ParamError(f"{where}: invalid YAML: {reason}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ParamError(
            f"{where}: expected a mapping of KEY: VALUE at the top, got {_yaml_kind(doc)}"
        )
    return _Flattener(where).walk(doc)


def _yaml_kind(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"the {type(value).__name__} {_show(value)}"


class _Flattener:
    """Copies a parsed YAML mapping into dotted keys, refusing what no param can take.

    `seen` counts every entry visited, not just leaves: aliases to empty mappings add no leaves
    but can still make the walk exponential.
    """

    def __init__(self, where: str) -> None:
        self.where = where
        self.out: dict[str, object] = {}
        self.seen = 0

    def walk(self, node: dict[Any, Any], prefix: str = "", depth: int = 1) -> dict[str, object]:
        where = self.where
        if depth > _MAX_CONFIG_DEPTH:
            raise ParamError(
                f"{where}: nested deeper than {_MAX_CONFIG_DEPTH} levels at {_clip(prefix[:-1])!r}"
            )
        for raw_key, value in node.items():
            self.seen += 1
            if self.seen > _MAX_CONFIG_KEYS:
                raise ParamError(f"{where}: more than {_MAX_CONFIG_KEYS} keys")
            if not isinstance(raw_key, str):
                raise ParamError(
                    f"{where}: key {_show(raw_key)} under {prefix or 'the top'} is not text"
                )
            key = f"{prefix}{raw_key}"
            if not _KEY.fullmatch(key):
                raise ParamError(
                    f"{where}: key {_show(key)} is not a valid KEY (letters, digits, _ .)"
                )
            if isinstance(value, dict):
                self.walk(value, key + ".", depth + 1)
                continue
            if key in self.out:
                raise ParamError(f"{where}: key {key!r} is given twice (flat and nested)")
            if value is None:
                raise ParamError(f"{where}: key {key!r} has no value")
            if not isinstance(value, str | int | float):
                raise ParamError(
                    f"{where}: key {key!r} must be text, a number or true/false, "
                    f"got {_yaml_kind(value)}"
                )
            self.out[key] = value
        return self.out


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


def budget_required_message(flow: str) -> str:
    """Why an unbounded run is refused: unattended agents need something that stops them."""
    return (
        f"{flow} needs a budget so it stops: give at least one of -p budget.duration=…, "
        "budget.cost=…, budget.turns=…, budget.output_tokens=…"
    )


# --- settings -------------------------------------------------------------------------------------

_BUDGET_PARSERS: dict[str, Callable[..., object]] = {
    "budget.duration": parse_duration,
    "budget.cost": parse_cost,
    "budget.turns": parse_count,
    "budget.output_tokens": parse_tokens,
    "budget.graceful": parse_bool,
}


def parse_settings(
    pairs: Mapping[str, object], params_model: type[FlowParams], flow: str
) -> tuple[dict[str, object], FlowParams]:
    """Split settings into parsed budget values (short keys, only those given) and the flow's
    validated params. A ParamError names the first bad budget key or unknown key, or every
    invalid param value at once (so one round of fixes suffices), always in one line."""
    budget: dict[str, object] = {}
    raw: dict[str, object] = {}
    fields = params_model.model_fields
    for key, value in pairs.items():
        if key.startswith("budget."):
            parser = _BUDGET_PARSERS.get(key)
            if parser is None:
                raise ParamError(
                    f"{flow} has no budget key {key!r}; budget keys are {', '.join(BUDGET_KEYS)}"
                )
            budget[key.removeprefix("budget.")] = parser(value, key=key)
        elif key in fields:
            raw[key] = value
        else:
            valid = ", ".join(sorted([*BUDGET_KEYS, *fields]))
            raise ParamError(f"{flow} has no param {key!r}; valid params are {valid}")
    return budget, _validate_params(raw, params_model)


def _validate_params(raw: dict[str, object], model: type[FlowParams]) -> FlowParams:
    """Validate with pydantic, retrying each failed value once in its other natural form.

    `-p` gives only strings, so a list/dict param is written as JSON (as hmz accepts); YAML gives
    numbers and booleans, which a str param wants as text. Pydantic's lax mode covers the rest
    ("1.5" -> float, "true" -> bool).
    """
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc
    retry = dict(raw)
    for err in first.errors():
        name = err["loc"][0] if err["loc"] else None
        if isinstance(name, str) and name in raw:
            alt = _alternative(raw[name])
            if alt is not None:
                retry[name] = alt
    if retry != raw:
        try:
            return model.model_validate(retry)
        except ValidationError:
            pass  # report against what the user wrote, not our reinterpretation
    raise ParamError(_describe(first, raw, model)) from None


def _alternative(value: object) -> object | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        try:
            decoded: object = json.loads(value)
        except (ValueError, RecursionError):
            return None
        return decoded if not isinstance(decoded, str) else None
    return None


_COMPARE = {
    "greater_than": ("gt", ">"),
    "greater_than_equal": ("ge", ">="),
    "less_than": ("lt", "<"),
    "less_than_equal": ("le", "<="),
}


def _describe(exc: ValidationError, raw: dict[str, object], model: type[FlowParams]) -> str:
    parts = []
    for err in exc.errors():
        loc = err["loc"]
        name = str(loc[0]) if loc else ""
        if name in raw:
            subject = f"param {name}={_show(raw[name])}"
        else:
            subject = f"param {name}" if name else "params"
        compare = _COMPARE.get(err["type"])
        if compare is not None and compare[0] in err.get("ctx", {}):
            what = f"must be {compare[1]} {_num(err['ctx'][compare[0]])}"
        else:
            what = _one_line(err["msg"]).replace("Input should be", "must be")
        bounds = _bounds(model, name)
        parts.append(f"{subject}: {what}{f' ({bounds})' if bounds else ''}")
    return "; ".join(parts)


def _bounds(model: type[FlowParams], name: str) -> str:
    """The field's declared numeric constraints, e.g. `range 0.05–60`."""
    field = model.model_fields.get(name)
    if field is None:
        return ""
    found: dict[str, object] = {}
    for item in field.metadata:
        for attr in ("gt", "ge", "lt", "le"):
            bound = getattr(item, attr, None)
            if bound is not None:
                found[attr] = bound
    if "ge" in found and "le" in found:
        return f"range {_num(found['ge'])}–{_num(found['le'])}"
    symbols = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
    allowed = " and ".join(f"{symbols[a]} {_num(found[a])}" for a in symbols if a in found)
    return f"allowed: {allowed}" if allowed else ""


def _num(value: object) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return str(value)
