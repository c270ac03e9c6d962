"""parallel_flame_chase's simulated actor: the coordinator's plan (its lanes are the shared
sample-lane actor, tested in tests/flows/sample_lanes)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from flamechase.agents.sim import SimBackend, fate_of
from flamechase.agents.spec import parse_spec
from flamechase.flow import ResultSpec
from flamechase.flows.parallel_flame_chase.plans import PlanResult, validate_plan
from flamechase.flows.sample_lanes.ladder import RUNGS
from flamechase.loader import load_flow
from tests.sim_turns import copy_sample, make_request, one_turn, read_report


def plan_spec(names: list[str]) -> ResultSpec:
    return ResultSpec(PlanResult, noun="plan", context={"lanes": names})


@pytest.mark.parametrize("lanes", [3, 5])
def test_coordinator_writes_a_valid_plan(tmp_path: Path, lanes: int) -> None:
    ws = copy_sample(tmp_path / "ws")
    names = [f"lane-{i}" for i in range(1, lanes + 1)]
    request = make_request(
        tmp_path,
        ws,
        lane="",
        turn=1,
        env={"FLAMECHASE_LANES": ",".join(names)},
        result=plan_spec(names),
        actor=load_flow("parallel_flame_chase").simulator(),
    )
    answer, plan = asyncio.run(one_turn("steady", request))
    assert answer.status == "finished"
    assert answer.usage.cost_usd > 0
    assert answer.usage.self_reported
    assert set(plan) == {"lanes"}
    # The plan passes the flow's own plan validation, as the engine will run it.
    assert [e["lane"] for e in validate_plan(plan, names)["lanes"]] == names
    assert [entry["lane"] for entry in plan["lanes"]] == names
    for entry in plan["lanes"]:
        mission = entry["mission"]
        assert mission["title"].strip()
        assert mission["objective"].strip()
        assert mission["success_criteria"]
        assert all(isinstance(c, str) and c for c in mission["success_criteria"])
        assert mission["approach_class"]
    assert plan["lanes"][0]["mission"]["kind"] == "integration"
    assert "ntegrat" in plan["lanes"][0]["mission"]["objective"]
    # The lanes diverge: no two exploring lanes share an approach.
    classes = [e["mission"]["approach_class"] for e in plan["lanes"]]
    assert len(set(classes)) == len(classes)
    # The coordinator never touches the tree it plans in.
    assert (ws / "solver.py").read_text() == RUNGS[0].source


def test_coordinator_without_lane_list_reads_the_prompt(tmp_path: Path) -> None:
    names = ["lane-1", "lane-2", "lane-3", "lane-4"]
    request = make_request(
        tmp_path,
        tmp_path,
        lane="",
        result=plan_spec(names),
        actor=load_flow("parallel_flame_chase").simulator(),
    )
    request = dataclasses.replace(request, prompt="Plan lane-1, lane-2, lane-3 and lane-4.")
    _, plan = asyncio.run(one_turn("steady", request))
    assert [e["lane"] for e in plan["lanes"]] == names


def test_a_flaky_coordinator_first_writes_a_plan_missing_a_lane(tmp_path: Path) -> None:
    names = ["lane-1", "lane-2", "lane-3"]
    request = make_request(
        tmp_path,
        tmp_path,
        lane="",
        env={"FLAMECHASE_LANES": ",".join(names)},
        result=plan_spec(names),
        actor=load_flow("parallel_flame_chase:git_pr").simulator(),
    )
    for attempt in range(1, 60):
        request = dataclasses.replace(request, attempt=attempt)
        if fate_of("flaky", request) == "invalid_first":
            break

    async def go() -> tuple[object, object]:
        session = SimBackend(parse_spec("sim/flaky")).open(request, lambda p, t: None)
        await session.ask(request.prompt)
        bad = read_report(request)
        await session.ask("fix it", repair="lanes: lane-3 has no mission")
        await session.close()
        return bad, read_report(request)

    bad, good = asyncio.run(go())
    with pytest.raises(ValueError, match="lane-3"):
        plan_spec(names).validate(bad)
    assert [e["lane"] for e in plan_spec(names).validate(good)["lanes"]] == names
