"""parallel_flame_chase's simulated actor: the coordinator's plan, and the sample's lanes.

The coordinator writes one mission per lane, lane 1's being integration, the others
exploring in leaps of the ladder (`sample_lanes.ladder.stride`); the lanes are the shared
sample-lane actor (`flows.sample_lanes.actor`). Used by the git_pr variant too, for its plan.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from flamechase.flow.sim import SimTurn
from flamechase.flows.parallel_flame_chase.plans import PlanResult
from flamechase.flows.sample_lanes import is_sample
from flamechase.flows.sample_lanes.actor import INTEGRATOR, LaneActor
from flamechase.flows.sample_lanes.ladder import stride

__all__ = ["ACTOR", "PfcActor", "plan"]

_LANE_NAME = re.compile(r"\blane-(\d+)\b")


class PfcActor(LaneActor):
    async def act(self, turn: SimTurn) -> dict[str, Any] | None:
        if turn.result.model is PlanResult:
            return plan(turn)
        return await super().act(turn)

    def invalid(self, turn: SimTurn, good: Mapping[str, Any]) -> Any:
        if turn.result.model is not PlanResult:
            return None
        lanes = good["lanes"]
        # A plan missing its last lane (or a mission with no title, for one lane).
        if len(lanes) > 1:
            return {"lanes": lanes[:-1]}
        return {"lanes": [{"lane": lanes[0]["lane"], "mission": {"objective": "?"}}]}


ACTOR = PfcActor()


def plan(turn: SimTurn) -> dict[str, Any]:
    """One mission per lane, lane 1's being integration."""
    measurable = is_sample(turn.workspace)
    objective = (
        "Lower the STEPS that `python bench.py` prints while `python -m unittest` stays green."
        if measurable
        else "Make small, verifiable progress on the task and record it."
    )
    entries = []
    for lane in _lane_names(turn):
        leap = stride(lane)
        if lane == INTEGRATOR:
            mission = {
                "title": "Integrate the best measured results",
                "objective": objective + " Integrate other lanes' artifact packages "
                "that measure better than the tree; otherwise improve it directly.",
                "success_criteria": [
                    "every integrated package verified against its sha256",
                    "tests green after each change",
                    "STEPS never goes up",
                ],
                "kind": "integration",
                "approach_class": "integration",
                "change_scale": "integration",
            }
        else:
            pace = f"in leaps of {leap} rungs"
            mission = {
                "title": f"Explore {pace}",
                "objective": objective + f" Work in the private copy, {pace}, and publish "
                "every measured improvement as an artifact package with a submission.",
                "success_criteria": [
                    "each package measured with python bench.py before it is published",
                    "tests green on every published solver.py",
                ],
                "kind": "implementation",
                "approach_class": f"leap-{leap}",
                "change_scale": "component",
            }
        entries.append({"lane": lane, "mission": mission})
    return {"lanes": entries}


def _lane_names(turn: SimTurn) -> list[str]:
    given = turn.env.get("FLAMECHASE_LANES", "")
    names = [n.strip() for n in given.split(",") if n.strip()]
    if not names:
        # An agent without the list reads its prompt, as a real one would.
        numbers = sorted({int(m) for m in _LANE_NAME.findall(turn.prompt)})
        names = [f"lane-{n}" for n in numbers] or ["lane-1", "lane-2", "lane-3"]
    return list(dict.fromkeys(names))
