"""A plan is refused, in one line naming the writers and a sample path, when two writers of a
wave could write one file, a builder owns a gate file, or a dependency is not earlier."""

from __future__ import annotations

from pathlib import Path

import pytest

from flamechase.flows.parrallello.plan import PlanSpec, lane_names, load_plan


def front(fid: str, owners: dict[str, list[str]], wave: int = 1, **kw: object) -> dict:
    return {"id": fid, "gate": f"python3 gates/{fid}.py", "owners": owners, "wave": wave, **kw}


def test_a_valid_plan_defaults_its_ceilings_and_freezes_the_gate_script() -> None:
    plan = PlanSpec.model_validate({"fronts": [front("P1", {"core": ["src/**"]})]})
    assert (plan.blocks, plan.rounds_per_block, plan.max_tickets) == (3, 3, 3)
    assert plan.fronts[0].freeze == ("gates/P1.py",)


def test_two_writers_of_one_wave_owning_a_file_are_refused_with_a_sample() -> None:
    with pytest.raises(
        ValueError,
        match=r"P1.core \(src/\*\*\) and P2.ui \(\*\*/\*.js\) "
        r"both own src/.js",
    ):
        PlanSpec.model_validate(
            {"fronts": [front("P1", {"core": ["src/**"]}), front("P2", {"ui": ["**/*.js"]})]}
        )


def test_the_same_file_in_two_waves_is_fine() -> None:
    PlanSpec.model_validate(
        {"fronts": [front("P1", {"core": ["src/**"]}), front("P2", {"ui": ["src/**"]}, wave=2)]}
    )


def test_a_builder_owning_a_gate_file_is_refused() -> None:
    with pytest.raises(ValueError, match="freezes as its gate"):
        PlanSpec.model_validate({"fronts": [front("P1", {"core": ["gates/**", "src/**"]})]})


def test_a_dependency_must_be_in_an_earlier_wave() -> None:
    with pytest.raises(ValueError, match="must be in an earlier wave"):
        PlanSpec.model_validate(
            {
                "fronts": [
                    front("P1", {"a": ["a/**"]}),
                    front("P2", {"b": ["b/**"]}, depends_on=["P1"]),
                ]
            }
        )


def test_more_than_two_builders_or_three_rounds_are_refused() -> None:
    with pytest.raises(ValueError):
        PlanSpec.model_validate({"fronts": [front("P1", {"a": ["a"], "b": ["b"], "c": ["c"]})]})
    with pytest.raises(ValueError):
        PlanSpec.model_validate({"fronts": [front("P1", {"a": ["a"]})], "rounds_per_block": 4})


def test_lanes_are_named_after_fronts_and_owners_or_numbered_for_a_planner() -> None:
    plan = PlanSpec.model_validate({"fronts": [front("P1", {"core": ["a"], "ui": ["b"]})]})
    assert lane_names(plan, 3) == [("P1", ["P1.core", "P1.ui"])]
    assert lane_names(None, 2) == [("f1", ["f1.b1", "f1.b2"]), ("f2", ["f2.b1", "f2.b2"])]


def test_a_plan_file_loads_from_yaml_and_says_where_it_is_wrong(tmp_path: Path) -> None:
    good = tmp_path / "PLAN.yaml"
    good.write_text("fronts:\n  - id: P1\n    gate: python3 g.py\n    owners: {a: [src/**]}\n")
    path, plan = load_plan(str(good))
    assert path == str(good.resolve()) and plan.fronts[0].id == "P1"
    bad = tmp_path / "BAD.yaml"
    bad.write_text("fronts:\n  - id: P1\n    owners: {a: [src/**]}\n")
    with pytest.raises(ValueError, match=r"^front P1, gate: is required$"):
        load_plan(str(bad))


def test_two_fronts_of_a_wave_freezing_one_gate_file_are_refused() -> None:
    with pytest.raises(ValueError, match=r"both freeze gates/common\.py"):
        PlanSpec.model_validate(
            {
                "fronts": [
                    front("P1", {"a": ["a/**"]}, freeze=["gates/common.py"]),
                    front("P2", {"b": ["b/**"]}, freeze=["gates/common.py"]),
                ]
            }
        )
