"""Tolerant JSON access for parsers of agent output: any shape in, a value or a default out.

A CLI may print garbage, arrays, deep nesting or wrong field types; every accessor here turns
that into an empty or zero value instead of an exception, so one odd line never fails a turn.
Pure functions.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["as_dict", "as_float", "as_int", "as_list", "as_str", "clip", "loads"]

_ERROR_CHARS = 1500


def loads(line: bytes | str) -> dict[str, Any] | None:
    """The JSON object on `line`, or None for anything else (garbage, arrays, deep nesting)."""
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: object) -> str:
    return value if isinstance(value, str) else ""


def as_int(value: object) -> int:
    """A non-negative token count, 0 for anything that is not one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if not math.isfinite(value) or value < 0 or value > 10**15:
        return 0
    return int(value)


def as_float(value: object) -> float | None:
    """A finite non-negative number, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0 or value > 1e12:
        return None
    return float(value)


def clip(text: str, limit: int = _ERROR_CHARS) -> str:
    """`text` on one line, cut to `limit` characters."""
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"
