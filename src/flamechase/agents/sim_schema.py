"""A valid instance of any result schema, and a wrong one: what `sim` answers without an actor.

Built from the result model's JSON schema: required keys always, optional ones by the seed;
enums and constants, numeric bounds (inclusive, exclusive, multiples), string lengths and
simple patterns, lists within their item counts (unique where asked), nested models through
`$ref`, unions (`anyOf`/`oneOf`, never null when another choice exists), maps. Strings read as
what they are ("sim reviewer t2: comments[0]"), so a replay shows where each value came from.
A schema can say less than its validators check (a cross-field rule, a validation context),
so every candidate is validated with the turn's own `ResultSpec` and the next variant is
tried when it is refused. Everything is drawn from the seed: the same seed, the same instance.

Hand-rolled rather than a data factory: factories build model objects without the
`ResultSpec`'s validation context, fill strings with random letters, and take longer to
import than a whole simulated turn.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping
from typing import Any

from flamechase.flow.commands import ResultSpec

__all__ = ["broken", "instance"]

_VARIANTS = 12  # candidates tried before giving up on a schema
_DEPTH = 6  # nesting past this takes the smallest choice (recursive models end)


def instance(spec: ResultSpec, seed: int, label: str) -> tuple[Any, bool]:
    """A result for `spec` and whether it is valid: the first candidate its validation
    accepts (normalised as the engine stores it), else the last one tried, so that the
    engine's refusal names what the schema could not say. `label` starts every string
    ("sim reviewer t2")."""
    schema = spec.json_schema()
    value: Any = None
    for variant in range(_VARIANTS):
        # Variant 1 is the smallest object (required keys only): the likeliest to satisfy
        # rules the schema does not state; the others take optional keys by the seed.
        build = _Builder(schema, random.Random(f"{seed}/{variant}"), label, minimal=variant == 1)
        value = build.node(schema, "", 0)
        try:
            return spec.validate(value), True
        except ValueError:
            continue
    return value, False


def broken(spec: ResultSpec, good: Mapping[str, Any], seed: int) -> Any:
    """A wrong version of `good` that `spec` refuses, chosen by the seed: a key dropped, a
    value outside its enum, an unknown key; a JSON list when the schema refuses none of those."""
    schema = spec.json_schema()
    props: Mapping[str, Any] = schema.get("properties") or {}
    candidates: list[Any] = []
    for key in schema.get("required") or ():
        candidates.append({k: v for k, v in good.items() if k != key})
    for key, node in props.items():
        if key in good and "enum" in _resolved(schema, node):
            candidates.append({**good, key: "not-one-of-its-choices"})
    candidates.append({**good, "confidence": "high"})
    refused = [c for c in candidates if not _accepts(spec, c)]
    if not refused:
        return [dict(good)]
    return refused[random.Random(seed).randrange(len(refused))]


def _accepts(spec: ResultSpec, data: Any) -> bool:
    try:
        spec.validate(data)
    except ValueError:
        return False
    return True


def _resolved(root: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    """`node` with its `$ref` (or a lone `allOf`) followed, as pydantic writes them."""
    for _ in range(_DEPTH):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            target: Any = root
            for part in ref[2:].split("/"):
                target = target.get(part, {}) if isinstance(target, Mapping) else {}
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            continue
        all_of = node.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], Mapping):
            node = {**all_of[0], **{k: v for k, v in node.items() if k != "allOf"}}
            continue
        break
    return node


class _Builder:
    def __init__(self, root: Mapping[str, Any], rng: random.Random, label: str, *, minimal: bool):
        self.root = root
        self.rng = rng
        self.label = label
        self.minimal = minimal

    def node(self, raw: Mapping[str, Any], path: str, depth: int) -> Any:
        if depth > 4 * _DEPTH:
            return None  # a schema that only an infinite value meets: validation says so
        node = _resolved(self.root, raw)
        if "const" in node:
            return node["const"]
        enum = node.get("enum")
        if isinstance(enum, list) and enum:
            return self.rng.choice(enum)
        options = node.get("anyOf") or node.get("oneOf")
        if isinstance(options, list) and options:
            return self.node(self._choose(options, depth), path, depth)
        kind = node.get("type")
        if isinstance(kind, list):
            kinds = [k for k in kind if k != "null"] or ["null"]
            kind = kinds[0] if depth >= _DEPTH else self.rng.choice(kinds)
        if kind == "object" or (kind is None and "properties" in node):
            return self._object(node, path, depth)
        if kind == "array":
            return self._array(node, path, depth)
        if kind == "string":
            return self._string(node, path)
        if kind == "integer":
            return self._number(node, integer=True)
        if kind == "number":
            return self._number(node, integer=False)
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "null":
            return None
        return self._text(path)  # no type: any JSON value; a string is one

    def _choose(self, options: list[Any], depth: int) -> Mapping[str, Any]:
        real = [o for o in options if isinstance(o, Mapping) and o.get("type") != "null"]
        if not real:
            return {"type": "null"}
        return real[0] if depth >= _DEPTH else self.rng.choice(real)

    def _object(self, node: Mapping[str, Any], path: str, depth: int) -> dict[str, Any]:
        props: Mapping[str, Any] = node.get("properties") or {}
        needed = set(node.get("required") or ())
        out: dict[str, Any] = {}
        for key, sub in props.items():
            wanted = key in needed or (
                not self.minimal and depth < _DEPTH and self.rng.random() < 0.5
            )
            if wanted:
                out[key] = self.node(sub, f"{path}.{key}" if path else key, depth + 1)
        extra = node.get("additionalProperties")
        if not props and isinstance(extra, Mapping):
            # A map: as many entries as it needs, at least one unless minimal.
            count = max(int(node.get("minProperties") or 0), 0 if self.minimal else 1)
            for i in range(count):
                key = f"key-{i + 1}"
                out[key] = self.node(extra, f"{path}[{key}]", depth + 1)
        return out

    def _array(self, node: Mapping[str, Any], path: str, depth: int) -> list[Any]:
        prefix = node.get("prefixItems")
        if isinstance(prefix, list):  # a tuple
            return [self.node(p, f"{path}[{i}]", depth + 1) for i, p in enumerate(prefix)]
        low = int(node.get("minItems") or 0)
        high = node.get("maxItems")
        top = low if self.minimal or depth >= _DEPTH else max(low, min(3, int(high or 3)))
        if high is not None:
            top = min(top, int(high))
        count = self.rng.randint(low, max(low, top))
        items = node.get("items")
        item = items if isinstance(items, Mapping) else {}
        out: list[Any] = []
        for i in range(count):
            value = self.node(item, f"{path}[{i}]", depth + 1)
            if node.get("uniqueItems") and value in out:
                continue  # the count may fall short of minItems: validation then says so
            out.append(value)
        return out

    def _string(self, node: Mapping[str, Any], path: str) -> str:
        fmt = node.get("format")
        if fmt == "date-time":
            text = "2026-01-01T00:00:00Z"
        elif fmt == "date":
            text = "2026-01-01"
        elif fmt == "email":
            text = "sim@example.com"
        elif fmt in ("uri", "url"):
            text = "https://example.com/sim"
        else:
            text = self._text(path)
        low = int(node.get("minLength") or 0)
        high = node.get("maxLength")
        if len(text) < low:
            text = text + "." * (low - len(text))
        if high is not None:
            text = text[: int(high)]
        pattern = node.get("pattern")
        if isinstance(pattern, str) and not _matches(pattern, text):
            text = next((t for t in _pattern_tries(low) if _matches(pattern, t)), text)
        return text

    def _text(self, path: str) -> str:
        return f"{self.label}: {path or 'value'}"

    def _number(self, node: Mapping[str, Any], *, integer: bool) -> int | float:
        low, high = _bounds(node, integer)
        step = node.get("multipleOf")
        if integer:
            value: int | float = self.rng.randint(int(low), int(high)) if low <= high else low
        else:
            value = round(self.rng.uniform(low, high), 3) if low <= high else low
            if not (low <= value <= high):
                value = low
        if isinstance(step, int | float) and step > 0:
            value = math.ceil(low / step) * step
            if integer:
                value = int(value)
        return value


def _bounds(node: Mapping[str, Any], integer: bool) -> tuple[float, float]:
    low: float = node.get("minimum", -math.inf)
    high: float = node.get("maximum", math.inf)
    tiny = 1 if integer else 1e-6
    if "exclusiveMinimum" in node:
        low = max(low, node["exclusiveMinimum"] + tiny)
    if "exclusiveMaximum" in node:
        high = min(high, node["exclusiveMaximum"] - tiny)
    if low == -math.inf and high == math.inf:
        low, high = 0, 10
    elif low == -math.inf:
        low = min(0, high - 10)
    elif high == math.inf:
        high = low + 10
    if integer:
        low, high = math.ceil(low), math.floor(high)
    return low, high


def _matches(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return False


def _pattern_tries(low: int) -> list[str]:
    size = max(low, 1)
    return ["a" * size, "1" * size, "sim", "sim-1", "a1", "A", "x_1", "2026-01-01", "v1.0.0"]
