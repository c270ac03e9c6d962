"""What parallel_flame_chase_mission refuses from its coordinator and its lanes, in one line:
plans whose missions are out of bounds, reports that end a mission without evidence, and
decisions that do not answer the open audit exactly (pure: no engine)."""

from __future__ import annotations

from typing import Any

import pytest

from flamechase.flow import ResultSpec
from flamechase.flows.parallel_flame_chase_mission.decisions import Decision, context
from flamechase.flows.parallel_flame_chase_mission.specs import MissionPlanResult, MissionReport
from tests.flows.mission.script import answer, integration, mission, plan, verdict

PLAN = ResultSpec(MissionPlanResult, noun="plan", context={"lanes": ["lane-1", "lane-2"]})


def test_a_plan_gets_the_default_bounds() -> None:
    [one, _] = PLAN.validate(
        {
            "lanes": [
                {"lane": "lane-2", "mission": mission("b")},
                {"lane": "lane-1", "mission": mission("a")},
            ]
        }
    )["lanes"]
    assert one["lane"] == "lane-1"
    assert (one["mission"]["deadline_hours"], one["mission"]["max_turns_without_outcome"]) == (6, 6)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"deadline_hours": 0.1}, "deadline_hours: Input should be greater than or equal to 0.25"),
        ({"deadline_hours": 200}, "deadline_hours: Input should be less than or equal to 168"),
        ({"max_turns_without_outcome": 0}, "max_turns_without_outcome: Input should be greater"),
        ({"max_turns_without_outcome": 51}, "max_turns_without_outcome: Input should be less"),
        ({"success_criteria": []}, "success_criteria: List should have at least 1 item"),
        ({"success_criteria": ["c"] * 13}, "success_criteria: List should have at most 12"),
        ({"title": ""}, "title: String should have at least 1 character"),
        ({"budget": 5}, "budget: Extra inputs are not permitted"),
    ],
)
def test_a_mission_out_of_bounds_is_refused_in_one_line(change: dict[str, Any], said: str) -> None:
    bad = plan()
    bad["lanes"][1]["mission"].update(change)
    with pytest.raises(ValueError) as err:
        PLAN.validate(bad)
    assert said in str(err.value)
    assert "\n" not in str(err.value)


def test_an_outcome_that_ends_the_mission_needs_evidence() -> None:
    spec = ResultSpec(MissionReport)
    with pytest.raises(ValueError, match="no_result ends the mission: give its evidence"):
        spec.validate({"status": "no_result", "summary": "nothing"})
    spec.validate({"status": "no_result", "summary": "nothing", "evidence": ["ran it: 3 > 2"]})
    spec.validate({"status": "progress", "summary": "some"})


def _ctx(**lanes: dict[str, Any]) -> dict[str, Any]:
    full = {
        name: {"outcome": None, "spec": mission("m"), "package": False, "lane1": name == "lane-1"}
        | given
        for name, given in lanes.items()
    }
    return context("A000003", 2, list(lanes), full)


def _check(ctx: dict[str, Any], decision: dict[str, Any]) -> dict[str, Any]:
    return ResultSpec(Decision, noun="decision", context=ctx).validate(decision)


READY = {"outcome": "deliverable_ready", "package": True}


@pytest.mark.parametrize(
    ("lanes", "verdicts", "said"),
    [
        (
            {"lane-2": {}},
            [verdict("lane-2", "accept", integration=integration())],
            "accept only a deliverable_ready outcome (it has no outcome)",
        ),
        ({"lane-2": READY}, [verdict("lane-2", "accept")], "needs `integration`"),
        (
            {"lane-2": READY | {"package": False}},
            [verdict("lane-2", "accept", integration=integration())],
            "no frozen artifact package",
        ),
        (
            {"lane-1": READY},
            [verdict("lane-1", "accept", integration=integration())],
            "lane 1's accept carries no integration directive",
        ),
        (
            {"lane-2": {}},
            [verdict("lane-2", "redirect", changes=["scale"], next_mission=mission("m"))],
            "the redirect says it changes the scale but the next mission keeps it",
        ),
        (
            {"lane-2": {}, "lane-3": {}},
            [verdict("lane-2", "continue")],
            "decide exactly the targets lane-2, lane-3 once each",
        ),
        (
            {"lane-2": {}},
            [verdict("lane-2", "continue"), verdict("lane-2", "continue")],
            "decide exactly the targets lane-2 once each",
        ),
        ({"lane-2": {}}, [verdict("lane-2", "stop")], "lanes.0: Input tag 'stop'"),
    ],
)
def test_a_decision_that_does_not_fit_the_audit_is_refused(
    lanes: dict[str, Any], verdicts: list[dict[str, Any]], said: str
) -> None:
    ctx = _ctx(**lanes)
    with pytest.raises(ValueError) as err:
        _check(ctx, answer(ctx, *verdicts))
    assert said in str(err.value)


def test_a_decision_for_another_audit_or_revision_is_refused() -> None:
    ctx = _ctx(**{"lane-2": {}})
    good = answer(ctx, verdict("lane-2", "continue"))
    assert _check(ctx, good)["lanes"][0]["verdict"] == "continue"
    for forged in ({**good, "revision": 1}, {**good, "audit_id": "A000002"}):
        with pytest.raises(ValueError, match="answers audit A000003 revision 2, not"):
            _check(ctx, forged)


def test_valid_verdicts_pass() -> None:
    ctx = _ctx(**{"lane-1": READY, "lane-2": READY, "lane-3": {}})
    decision = answer(
        ctx,
        verdict("lane-1", "accept"),
        verdict("lane-2", "accept", integration=integration(), next_mission=mission("next")),
        verdict(
            "lane-3",
            "redirect",
            changes=["method"],
            next_mission=mission("m", approach_class="another"),
        ),
    )
    assert [v["verdict"] for v in _check(ctx, decision)["lanes"]] == [
        "accept",
        "accept",
        "redirect",
    ]
