"""The plan a simulated planner writes: one mission per lane, lane 1's being integration,
the others exploring in leaps of the ladder (`sim_ladder.stride`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from flamechase.agents.backend import TurnRequest
from flamechase.agents.sim_ladder import stride

__all__ = ["is_sample", "plan"]

_LANE_NAME = re.compile(r"\blane-(\d+)\b")


def is_sample(ws: Path) -> bool:
    """`ws` is (a copy of) the bundled sample: the tree the simulated actor really works on."""
    return (ws / "bench.py").is_file() and (ws / "solver.py").is_file()


def plan(request: TurnRequest) -> dict[str, Any]:
    """One mission per lane, lane 1's being integration."""
    lanes = _lane_names(request)
    measurable = is_sample(request.workspace)
    objective = (
        "Lower the STEPS that `python bench.py` prints while `python -m unittest` stays green."
        if measurable
        else "Make small, verifiable progress on the task and record it."
    )
    entries = []
    for lane in lanes:
        leap = stride(lane)
        if lane == "lane-1":
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


def _lane_names(request: TurnRequest) -> list[str]:
    given = request.env.get("FLAMECHASE_LANES", "")
    names = [n.strip() for n in given.split(",") if n.strip()]
    if not names:
        # An agent without the list reads its prompt, as a real one would.
        numbers = sorted({int(m) for m in _LANE_NAME.findall(request.prompt)})
        names = [f"lane-{n}" for n in numbers] or ["lane-1", "lane-2", "lane-3"]
    return list(dict.fromkeys(names))
