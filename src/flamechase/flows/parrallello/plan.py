"""The plan: fronts with files of their own, gates, targets, waves, weights and ceilings.

Written by the user (`-p plan=PLAN.yaml`, YAML or JSON) or by the `planner` role. A plan is
refused, with one line naming the fronts and a sample path, when two writers of one wave own
a common file (globs are compared as globs, so files that do not exist yet count), when a
builder owns a file its wave freezes as a gate, when an id repeats, or when a front depends on
one that is not in an earlier wave.

    blocks: 3              # blocks per front (the ceiling is blocks x rounds_per_block)
    rounds_per_block: 3    # at most 3
    max_tickets: 3         # tickets a builder takes per round (most severe first)
    fronts:
      - id: P1
        goal: "solver under 500 steps, tests green"
        wave: 1
        depends_on: []
        weight: 2
        gate: "python3 gates/p1.py"      # run with --quick / --full (and --only, see `only`)
        freeze: ["gates/p1.py", "gates/metrics/**"]   # default: paths in `gate`
        targets: {"P1.steps": "<= 500"}
        owners: {core: ["solver.py"], tests: ["tests/**"]}   # 1 or 2 builders
"""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from flamechase.flows.parrallello.verdict import TicketIn
from flamechase.globs import GlobError, overlap, parse

__all__ = ["FrontSpec", "PlanSpec", "load_plan"]

ID = r"^[A-Za-z][A-Za-z0-9_-]{0,23}$"
MAX_OWNERS = 2  # the seed: at most two builders per front and round


class FrontSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=ID)
    title: str = Field(default="", max_length=200)
    goal: str = Field(default="", max_length=4000)
    wave: int = Field(default=1, ge=1, le=20)
    depends_on: tuple[str, ...] = ()
    weight: float = Field(default=1.0, gt=0, le=1000)
    gate: str = Field(min_length=1, max_length=1000)
    only: str | None = Field(default=None, min_length=1, max_length=200)
    freeze: tuple[str, ...] = ()
    targets: dict[str, str | float] = Field(default_factory=dict)
    owners: dict[str, tuple[str, ...]] = Field(min_length=1, max_length=MAX_OWNERS)
    tickets: tuple[TicketIn, ...] = Field(default=(), max_length=8)
    exclusive: bool = False  # the gate measures performance: run it under the lock
    gate_timeout: float = Field(default=1800.0, gt=0, le=86400)

    @field_validator("owners")
    @classmethod
    def _owners(cls, v: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        for name, globs in v.items():
            if not _is_id(name):
                raise ValueError(f"owner {name!r} must be a short name (letters, digits, _ -)")
            if not globs:
                raise ValueError(f"owner {name} owns no files")
            for g in globs:
                _glob(g)
        return v

    @model_validator(mode="after")
    def _freeze(self) -> FrontSpec:
        freeze = self.freeze or tuple(_paths_in(self.gate))
        if not freeze:
            raise ValueError(
                f"front {self.id}: say which files hold its gate and metric code "
                "(freeze: [...]); they are frozen while it runs"
            )
        for g in freeze:
            _glob(g)
        object.__setattr__(self, "freeze", freeze)
        return self

    @property
    def label(self) -> str:
        return self.title or self.id


def _is_id(name: str) -> bool:
    return re.fullmatch(ID, name) is not None


def _glob(text: str) -> None:
    try:
        parse(text)
    except GlobError as exc:
        raise ValueError(str(exc)) from None


def _paths_in(command: str) -> list[str]:
    """The files a gate command names (`python3 gates/p1.py` -> gates/p1.py)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    return [
        w
        for w in words[1:]
        if not w.startswith("-")
        and ("/" in w or w.endswith((".py", ".sh", ".js", ".mjs", ".rb", ".pl")))
    ]


class PlanSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    fronts: tuple[FrontSpec, ...] = Field(min_length=1, max_length=8)
    blocks: int = Field(default=3, ge=1, le=10)
    rounds_per_block: int = Field(default=3, ge=1, le=3)
    max_tickets: int = Field(default=3, ge=1, le=3)
    ignore: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _coherent(self, info: ValidationInfo) -> PlanSpec:
        limit = (info.context or {}).get("fronts_max")
        if isinstance(limit, int) and len(self.fronts) > limit:
            raise ValueError(
                f"the plan has {len(self.fronts)} fronts; this run has lanes "
                f"for {limit} (-p fronts=N)"
            )
        ids = [f.id for f in self.fronts]
        dup = next((i for i in ids if ids.count(i) > 1), None)
        if dup:
            raise ValueError(f"front id {dup} is used twice")
        wave = {f.id: f.wave for f in self.fronts}
        for f in self.fronts:
            for d in f.depends_on:
                if d not in wave:
                    raise ValueError(f"front {f.id} depends on {d}, which the plan lacks")
                if wave[d] >= f.wave:
                    raise ValueError(
                        f"front {f.id} (wave {f.wave}) depends on {d} (wave "
                        f"{wave[d]}): a dependency must be in an earlier wave"
                    )
        for g in self.ignore:
            _glob(g)
        for w in sorted(set(wave.values())):
            _disjoint([f for f in self.fronts if f.wave == w], w)
        return self

    def front(self, front_id: str) -> FrontSpec:
        return next(f for f in self.fronts if f.id == front_id)


def _disjoint(fronts: list[FrontSpec], wave: int) -> None:
    """No file owned twice in a wave, and no owned file frozen as a gate in it."""
    writers = [(f"{f.id}.{o}", g) for f in fronts for o, globs in f.owners.items() for g in globs]
    for (a, ga), (b, gb) in itertools.combinations(writers, 2):
        if a != b and (sample := overlap(ga, gb)) is not None:
            raise ValueError(
                f"wave {wave}: {a} ({ga}) and {b} ({gb}) both own {sample}; "
                "give each file one writer"
            )
    frozen = [(f.id, g) for f in fronts for g in f.freeze]
    for (a, ga), (b, gb) in itertools.combinations(frozen, 2):
        if a != b and (sample := overlap(ga, gb)) is not None:
            raise ValueError(
                f"wave {wave}: fronts {a} and {b} both freeze {sample} (their "
                "critics may add gate items to it); freeze a shared file in "
                "one front, or put the fronts in different waves"
            )
    for f in fronts:
        for g in f.freeze:
            for who, owned in writers:
                if (sample := overlap(owned, g)) is not None:
                    raise ValueError(
                        f"wave {wave}: {who} owns {sample}, which front {f.id} "
                        f"freezes as its gate ({g}); builders never edit gates"
                    )


def lane_names(
    plan: PlanSpec | None, slots: int, spare: bool = False
) -> list[tuple[str, list[str]]]:
    """(front lane, builder lanes) per front: named from a given plan, or numbered slots
    (`f1`, `f1.b1`, `f1.b2`) when a planner writes the plan after the lanes exist. `spare`:
    a front of one builder gets a second lane (`P1.split`) a lead's split may give work to."""
    if plan is not None:
        return [
            (
                f.id,
                [f"{f.id}.{o}" for o in f.owners]
                + ([f"{f.id}.split"] if spare and len(f.owners) < MAX_OWNERS else []),
            )
            for f in plan.fronts
        ]
    return [
        (f"f{i}", [f"f{i}.b{k}" for k in range(1, MAX_OWNERS + 1)]) for i in range(1, slots + 1)
    ]


def load_plan(path: str) -> tuple[str, PlanSpec]:
    """(absolute path, plan) of a plan file, or ValueError in one line (which does not repeat
    the path: the refusal's subject, `param plan=PATH`, names it)."""
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise ValueError(f"cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"not YAML or JSON: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ValueError("a plan must be a mapping with `fronts`")
    try:
        plan = PlanSpec.model_validate(data)
    except ValueError as exc:
        raise ValueError(_first_error(exc, data)) from None
    return str(p.resolve()), plan


def _first_error(exc: ValueError, data: object = None) -> str:
    """The first thing wrong with a plan, in the plan's own words (never pydantic's)."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc).splitlines()[0]
    err = errors()[0]
    loc = tuple(err.get("loc", ()))
    where = _where(loc, data)
    what = _said(err, loc, _at(data, loc))
    return f"{where}: {what}" if where else what


def _at(data: object, loc: tuple[Any, ...]) -> object:
    """What the plan file holds at `loc` (None where it holds nothing)."""
    for key in loc:
        if isinstance(data, dict):
            data = data.get(key)
        elif isinstance(data, list) and isinstance(key, int) and key < len(data):
            data = data[key]
        else:
            return None
    return data


def _where(loc: tuple[Any, ...], data: object) -> str:
    """`fronts.0.owners` as `front P1, owners` (the front by its id when it has one)."""
    if len(loc) >= 2 and loc[0] == "fronts" and isinstance(loc[1], int):
        fronts = data.get("fronts") if isinstance(data, dict) else None
        entry = fronts[loc[1]] if isinstance(fronts, list) and loc[1] < len(fronts) else None
        name = entry.get("id") if isinstance(entry, dict) else None
        if isinstance(name, str):
            front = f"front {name}" if _is_id(name) else f"front {name!r}"
        else:
            front = f"front {loc[1] + 1}"  # one-based, as a person counts the list
        rest = ".".join(str(x) for x in loc[2:])
        return f"{front}, {rest}" if rest else front
    return ".".join(str(x) for x in loc)


# An unknown key's depth: the plan's (1), or a front's (3: fronts, its index, the key).
_KEYS: dict[int, type[BaseModel]] = {1: PlanSpec, 3: FrontSpec}


def _said(err: Any, loc: tuple[Any, ...], given: object) -> str:
    kind, ctx = err.get("type", ""), err.get("ctx") or {}
    field = str(loc[-1]) if loc else ""
    if field == "owners" and kind == "too_long":
        names = [str(k) for k in given] if isinstance(given, dict) else []
        n = len(names) or ctx.get("actual_length")
        return (
            f"{n} builders ({', '.join(names)}); a front has at most "
            f"{MAX_OWNERS} (one per builder lane): give one builder's files to another, or "
            "make another front of them"
        )
    if field == "owners" and kind == "too_short":
        return "no builder; give at least one, as `owners: {NAME: [GLOB, ...]}`"
    if field == "fronts" and kind == "too_short":
        return "the plan has no front; give at least one"
    if kind == "too_long":
        return f"{ctx.get('actual_length')} given; at most {ctx.get('max_length')}"
    if kind == "too_short":
        return f"at least {ctx.get('min_length')} needed, none given"
    if kind == "extra_forbidden":
        model = _KEYS.get(len(loc))
        known = f"; known keys: {', '.join(model.model_fields)}" if model else ""
        return f"not a key of {'a front' if model is FrontSpec else 'the plan'}{known}"
    if kind == "missing":
        return "is required"
    if kind == "string_pattern_mismatch" and ctx.get("pattern") == ID:
        return "must be a short name: a letter, then letters, digits, _ or - (at most 24)"
    if kind in ("tuple_type", "list_type"):
        return "must be a list, e.g. [solver.py]"
    if kind in ("float_parsing", "int_parsing", "float_type", "int_type"):
        return "must be a number"
    bound = {"less_than_equal": ("at most", "le"), "greater_than_equal": ("at least", "ge")}
    if kind in bound and bound[kind][1] in ctx:
        return f"must be {bound[kind][0]} {ctx[bound[kind][1]]}"
    msg = str(err.get("msg", "")).removeprefix("Value error, ")
    return msg.replace("Input should be", "must be")
