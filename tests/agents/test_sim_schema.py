"""What `sim` answers a result schema with when no actor does: a valid instance built from the
schema, the same for the same seed, and a wrong one that the schema refuses."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from flamechase.agents.sim_schema import broken, instance
from flamechase.flow import REPORT, ResultSpec


class Colour(StrEnum):
    red = "red"
    blue = "blue"


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")
    heading: str = Field(min_length=3, max_length=12)
    words: int = Field(ge=10, le=500)
    weight: float = Field(gt=0, lt=1)


class Draft(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(max_length=20)
    kind: Literal["essay", "memo"]
    colour: Colour
    sections: list[Section] = Field(min_length=2, max_length=4)
    tags: list[str] = Field(default_factory=list, max_length=2)
    scores: dict[str, int] = Field(default_factory=dict)
    code: str = Field(default="A1", pattern=r"^[A-Z][0-9]$")
    step: int = Field(default=5, multiple_of=5, ge=1)
    parent: Section | None = None
    pair: tuple[int, str] = (1, "x")


class Tree(BaseModel):
    """A recursive model: nesting has to end."""

    name: str
    children: list[Tree]
    leaf: Tree | None = None


class Endless(BaseModel):
    """Only an infinite value meets this schema."""

    inner: Endless


def test_a_nested_schema_with_bounds_enums_and_lists_gets_a_valid_instance() -> None:
    spec = ResultSpec(Draft, noun="draft")
    for seed in range(40):
        value, valid = instance(spec, seed, "sim author t1")
        assert valid, value
        draft = Draft.model_validate(value)
        assert 2 <= len(draft.sections) <= 4
        assert all(10 <= s.words <= 500 and 0 < s.weight < 1 for s in draft.sections)
        assert draft.kind in ("essay", "memo") and draft.colour in (Colour.red, Colour.blue)
        assert len(draft.title) <= 20 and draft.title.startswith("sim author t1")


def test_optional_keys_vary_with_the_seed_and_the_same_seed_gives_the_same_instance() -> None:
    spec = ResultSpec(Draft)
    seen = [instance(spec, seed, "x")[0] for seed in range(20)]
    assert seen == [instance(spec, seed, "x")[0] for seed in range(20)]
    # Normalised as the engine stores a result: a key left out holds its default.
    assert any(v["tags"] for v in seen) and any(not v["tags"] for v in seen)
    assert len({str(v) for v in seen}) > 10


def test_a_recursive_model_ends() -> None:
    depths = set()
    for seed in range(10):
        value, valid = instance(ResultSpec(Tree), seed, "t")
        assert valid
        depth, node = 0, value
        while node["children"]:
            depth, node = depth + 1, node["children"][0]
        depths.add(depth)
    assert max(depths) <= 8 and max(depths) >= 1
    value, valid = instance(ResultSpec(Endless), 1, "t")
    assert not valid


class Pick(BaseModel):
    """A rule the schema cannot state: the pick must be one of the context's solvers."""

    winner: str
    margin: int = Field(default=0, ge=0, le=3)

    @field_validator("winner")
    @classmethod
    def _known(cls, v: str, info: ValidationInfo) -> str:
        if v not in (info.context or {}).get("solvers", ()):
            raise ValueError(f"{v!r} is not a solver")
        return v


class Ordered(BaseModel):
    low: int = Field(ge=0, le=9)
    high: int = Field(ge=0, le=9)

    @model_validator(mode="after")
    def _ordered(self) -> Ordered:
        if self.low > self.high:
            raise ValueError("low must not exceed high")
        return self


def test_a_rule_the_schema_cannot_state_is_met_by_a_later_variant_or_reported() -> None:
    value, valid = instance(ResultSpec(Ordered), 3, "x")
    assert valid and value["low"] <= value["high"]
    spec = ResultSpec(Pick, noun="pick", context={"solvers": ["solver_1"]})
    value, valid = instance(spec, 3, "x")
    assert not valid  # a string the schema allows but the validator refuses
    with pytest.raises(ValueError, match="is not a solver"):
        spec.validate(value)


@pytest.mark.parametrize("model", [Draft, Ordered])
def test_a_broken_result_is_refused_by_its_schema(model: type[BaseModel]) -> None:
    spec = ResultSpec(model)
    good, _ = instance(spec, 1, "x")
    for seed in range(10):
        wrong: Any = broken(spec, good, seed)
        with pytest.raises(ValueError):
            spec.validate(wrong)


def test_a_broken_turn_report_is_refused() -> None:
    good = {"status": "progress", "summary": "did it"}
    kinds = set()
    for seed in range(12):
        wrong = broken(REPORT, good, seed)
        with pytest.raises(ValueError):
            REPORT.validate(wrong)
        kinds.add(str(sorted(wrong)))
    assert len(kinds) >= 2  # the seed picks among several mistakes
