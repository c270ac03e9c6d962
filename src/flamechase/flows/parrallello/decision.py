"""A decision for a front's next block, in the schema a lead returns and a user may give
(`-p lead_decision=FILE`): item calls, at most 8 tickets, a `lead_note`, a split by files.
Validated alone here, and against the front (its open tickets, owners, files) in `lead`."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from flamechase.flows.parrallello.plan import ID
from flamechase.flows.parrallello.verdict import TicketIn
from flamechase.globs import any_match, overlap

__all__ = ["EVERY", "ItemCall", "LeadDecision", "digest", "first_error", "load_decisions"]

NOTE_CHARS = 1500
EVERY = "*"  # a user's decision with no `front`: for every front at its next block end


class ItemCall(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=1, max_length=80)
    call: Literal["recurring", "regression", "miscalibrated", "too_big"]
    method: str = Field(default="", max_length=600)  # recurring: the change of method

    @model_validator(mode="after")
    def _method(self) -> ItemCall:
        if self.call == "recurring" and len(self.method.strip()) < 10:
            raise ValueError(f"item {self.id} is recurring: state the change of method")
        return self


class LeadDecision(BaseModel):
    """A lead's decision for a front's next block (validated against the front)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    items: tuple[ItemCall, ...] = Field(default=(), max_length=16)
    tickets: tuple[TicketIn, ...] = Field(default=(), max_length=8)
    lead_note: str = Field(min_length=1, max_length=NOTE_CHARS)
    # The front's files split between (at most two) builders from the next block on: each
    # entry one of its globs or a path (no wildcard) inside them, no file for both.
    split: dict[str, tuple[str, ...]] | None = Field(default=None, min_length=1, max_length=2)

    @model_validator(mode="after")
    def _known(self, info: ValidationInfo) -> LeadDecision:
        ctx = info.context or {}
        if self.split is not None and "files" in ctx:
            _check_split(self.split, ctx["files"], bool(ctx.get("spare")))
        open_ids, owners = ctx.get("open"), ctx.get("owners")
        if isinstance(open_ids, list | tuple):
            stray = [c.id for c in self.items if c.id not in open_ids]
            if stray:
                raise ValueError(f"item {stray[0]} is not an open ticket of this front")
        if isinstance(owners, list | tuple):
            owners = list(self.split) if self.split else owners  # the builders of next block
            bad = [t.id for t in self.tickets if t.owner is not None and t.owner not in owners]
            if bad:
                raise ValueError(f"ticket {bad[0]}'s owner is not a builder of this front")
        return self


def _check_split(
    split: Mapping[str, tuple[str, ...]], files: Mapping[str, Sequence[str]], spare: bool
) -> None:
    owned = [g for globs in files.values() for g in globs]
    new = [o for o in split if o not in files]
    if any(not re.fullmatch(ID, o) for o in split):
        raise ValueError("split: an owner is a short name (letters, digits, _ -)")
    if len(new) > (1 if spare else 0):  # the split's owners replace the front's
        raise ValueError(
            "split: this front has no builder lane for another owner"
            if not spare
            else "split: at most one new owner (the front's spare builder lane)"
        )
    for o, globs in split.items():
        if not globs:
            raise ValueError(f"split: owner {o} gets no files")
        for g in globs:
            inside = g in owned or (not any(c in g for c in "*?[") and any_match(owned, g))
            if not inside:
                raise ValueError(f"split: {g} is not one of the front's files")
    pairs = [(o, g) for o, globs in split.items() for g in globs]
    for (a, ga), (b, gb) in itertools.combinations(pairs, 2):
        if a != b and (sample := overlap(ga, gb)) is not None:
            raise ValueError(f"split: {a} ({ga}) and {b} ({gb}) would both own {sample}")


def first_error(exc: ValueError) -> str:
    """A validation error in one line: where, and what."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        err = errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ()))
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        return f"{where}: {msg}" if where else msg
    return str(exc).splitlines()[0]


def load_decisions(value: object) -> dict[str, dict[str, Any]]:
    """A user's decision file (or the stored form of one): front id (or `*`) -> decision,
    each valid alone; a ValueError in one line otherwise. The file holds one decision (with
    an optional `front`) or a mapping of front ids to decisions."""
    data: Any = value
    if isinstance(value, str):
        try:
            data = yaml.safe_load(Path(value).expanduser().read_text(encoding="utf-8"))
        except (OSError, UnicodeError) as exc:
            raise ValueError(f"cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
        except yaml.YAMLError as exc:
            raise ValueError(f"not YAML or JSON: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, Mapping) or not data:
        raise ValueError("a lead decision is a mapping with `lead_note` (or front id -> one)")
    if "lead_note" in data:
        one = dict(data)
        data = {str(one.pop("front", EVERY)): one}
    out: dict[str, dict[str, Any]] = {}
    for fid, d in data.items():
        if fid != EVERY and not re.fullmatch(ID, str(fid)):
            raise ValueError(f"{fid!r} is not a front id")
        if not isinstance(d, Mapping):
            raise ValueError(f"front {fid}: a lead decision is a mapping with `lead_note`")
        try:
            out[str(fid)] = LeadDecision.model_validate(d).model_dump(
                mode="json", exclude_defaults=True
            )
        except ValueError as exc:
            raise ValueError(f"front {fid}: {first_error(exc)}") from None
    return out


def digest(decision: Mapping[str, Any]) -> str:
    """Which decision this is (a user's decision is taken once per front)."""
    text = json.dumps(decision, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
