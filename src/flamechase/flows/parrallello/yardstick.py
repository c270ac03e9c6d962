"""Targets the runtime reads itself: whether an item's value meets its target, and whether a new
target is at least as strict as the one it replaces (the yardstick only tightens).

A target is a comparison: `<=N`, `<N`, `>=N`, `>N`, `==X` or `=X`, `N` (equal to N), `exit N`
(a command's exit code equal to N), `true`/`false`; a number may carry `_` or `,` separators
and a unit (`<= 20,000 steps`: the unit must match where targets are compared). Anything else
is a text the value must equal. A gate's own `pass` flag is never the verdict: the runtime
computes each item's pass from its value and target, and a flag that disagrees is a lie.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping

__all__ = ["Target", "meets", "parse", "same", "tighter_or_same"]

_NUM = r"[-+]?(?:\d[\d_,]*)?\.?\d+(?:[eE][-+]?\d+)?"
_CMP = re.compile(rf"^(<=|>=|==|<|>|=)?\s*({_NUM})\s*([A-Za-z%/µ]*)$")
_EXIT = re.compile(r"^exit\s+(-?\d+)$")
UPPER, LOWER = frozenset({"<=", "<"}), frozenset({">=", ">"})


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
    op: str  # <=, <, >=, >, == (numbers and booleans), "text" (equality of text)
    value: float | bool | str
    unit: str = ""


def parse(target: object) -> Target:
    if isinstance(target, bool):
        return Target("==", target)
    if isinstance(target, int | float):
        return Target("==", float(target))
    text = str(target).strip()
    if text.lower() in ("true", "false"):
        return Target("==", text.lower() == "true")
    if m := _EXIT.match(text):
        return Target("==", float(m.group(1)))
    if m := _CMP.match(text):
        op = "==" if m.group(1) in (None, "=") else m.group(1)
        number = _number(m.group(2))
        if number is not None:
            return Target(op, number, m.group(3))
    return Target("text", text)


def _number(text: str) -> float | None:
    try:
        value = float(text.replace("_", "").replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _value(value: object) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(float(value)) else None
    m = _CMP.match(str(value).strip())  # "123", "123 ms": a number with its unit
    return _number(m.group(2)) if m and m.group(1) is None else None


def meets(value: object, target: object) -> bool:
    """Whether `value` meets `target`, as the runtime reads it (never the gate's word)."""
    t = parse(target)
    if t.op == "text" or (t.op == "==" and isinstance(t.value, str)):
        return str(value).strip() == str(t.value)
    if isinstance(t.value, bool):
        return value is t.value
    assert isinstance(t.value, float)
    v = _value(value)
    if v is None:
        return str(value).strip() == str(target).strip()  # a text target written as a number
    bound = t.value
    return {
        "<=": v <= bound,
        "<": v < bound,
        ">=": v >= bound,
        ">": v > bound,
        "==": v == bound,
    }[t.op]


def same(a: object, b: object) -> bool:
    """The same target, however it is written (`<= 20,000` and `<=20000`)."""
    return parse(a) == parse(b)


def tighter_or_same(old: object, new: object) -> bool:
    """Whether `new` passes no value `old` fails: the yardstick did not loosen."""
    a, b = parse(old), parse(new)
    if a == b:
        return True
    if a.unit != b.unit or not isinstance(a.value, float) or not isinstance(b.value, float):
        return False
    if a.op in UPPER and b.op in UPPER:
        return b.value < a.value or (b.value == a.value and b.op == "<")
    if a.op in LOWER and b.op in LOWER:
        return b.value > a.value or (b.value == a.value and b.op == ">")
    if a.op == "==" or b.op != "==":
        return False
    # An exact value inside the old range is stricter than the range.
    return meets(b.value, f"{a.op}{a.value}")


def changes(
    contract: Mapping[str, object], printed: Mapping[str, object]
) -> tuple[list[str], list[str], list[str], list[str]]:
    """(missing, loosened, tightened, added) item ids of a gate's printed targets against the
    contract's."""
    missing = [i for i in contract if i not in printed]
    loosened: list[str] = []
    tightened: list[str] = []
    for i, old in contract.items():
        if i in printed and not same(old, printed[i]):
            (tightened if tighter_or_same(old, printed[i]) else loosened).append(i)
    added = [i for i in printed if i not in contract]
    return missing, loosened, tightened, added
