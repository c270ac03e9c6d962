"""`-p KEY=VALUE` settings and `-c CONFIG.yaml`: budget keys and a flow's params.

Settings come from two places with one vocabulary: `-p` pairs (always strings) and a YAML file
(strings, numbers, booleans). Keys starting with `budget.` bound the run; every other key is a
param of the flow, validated by the flow's pydantic model. Every refusal is a ParamError whose
message is one line naming the key, the value and the accepted form: a pydantic dump or a YAML
traceback tells an operator less than one sentence does.

Budget values and their forms live in `budgets`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from flamechase.budgets import (
    Budget,
    parse_bool,
    parse_cost,
    parse_count,
    parse_disk,
    parse_duration,
    parse_tokens,
)
from flamechase.errors import ParamError
from flamechase.flow import FlowParams

__all__ = [
    "BUDGET_KEYS",
    "Budget",
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
    "budget.disk",
)

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_KV_COMMA = re.compile(r",(?=[A-Za-z_][A-Za-z0-9_.]*=)")
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


def _loader() -> type[Any]:
    """SafeLoader that keeps dates as text (yaml is imported only when a config is read).

    A param never wants a `datetime`, and PyYAML raises a bare ValueError for an impossible date
    such as `2024-13-45`; as a string the value reaches the param's own validation instead.
    """
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor(
        "tag:yaml.org,2002:timestamp",
        lambda loader, node: loader.construct_scalar(node),  # type: ignore[arg-type]
    )
    return Loader


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
    import yaml

    try:
        doc = yaml.load(data, Loader=_loader())  # noqa: S506 - a SafeLoader
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


# --- settings -------------------------------------------------------------------------------------

_BUDGET_PARSERS: dict[str, Callable[..., object]] = {
    "budget.duration": parse_duration,
    "budget.cost": parse_cost,
    "budget.turns": parse_count,
    "budget.output_tokens": parse_tokens,
    "budget.graceful": parse_bool,
    "budget.disk": parse_disk,
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


# pydantic's words for a value that is not a number ("unable to parse string as a number").
_NUMBERS = {
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "int_parsing": "must be a whole number",
    "int_type": "must be a whole number",
    "int_from_float": "must be a whole number",
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
        elif err["type"] in _NUMBERS:
            what = _NUMBERS[err["type"]]
        else:
            # A validator's own ValueError already says what is wrong, in words: pydantic's
            # "Value error, " prefix only adds noise to the one line a user reads.
            what = (
                _one_line(err["msg"])
                .removeprefix("Value error, ")
                .replace("Input should be", "must be")
            )
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
