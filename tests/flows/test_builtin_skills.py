"""Every session a built-in flow (or variant) opens carries the flow's skill for its role: the
lanes' protocol for the lane actors and for the coordinator that plans for them (the mission
variant's and git_pr's as they apply there), each parrallello role its own rules. Checked
through the engine's own check of what `skill()` returns."""

from __future__ import annotations

from typing import Any

import pytest

from flamechase.engine.flowcode import FlowCode
from flamechase.flows import builtin_names
from flamechase.loader.official import builtin

# Params that give every role a flow can have (git_pr's evaluator is required).
PARAMS: dict[str, dict[str, Any]] = {
    "parallel_flame_chase:git_pr": {"evaluator": "python3 bench.py"},
    "parrallello": {"prep": True, "lead": True},
}
# The skill each role gets: one per flow, or (parrallello) one per role.
EXPECTED = {
    "flame_chase": "flame-chase",
    "parallel_flame_chase": "parallel-flame-chase",
    "parallel_flame_chase:git_pr": "parallel-flame-chase-git-pr",
    "parallel_flame_chase_mission": "parallel-flame-chase-mission",
    "parrallello": "parrallello-{role}",
}


@pytest.mark.parametrize("name", builtin_names())
def test_every_role_of_every_builtin_flow_carries_its_skill(name: str) -> None:
    flow = builtin(name)
    params = flow.Params.model_validate(PARAMS.get(name, {}))
    roles = flow.roles(params)
    code = FlowCode(flow)
    try:
        found = {role: code.skill(role) for role in roles}
    finally:
        code.close()
    assert set(EXPECTED) == set(builtin_names())  # a new built-in flow is listed here too
    assert {role: s.name if s else None for role, s in found.items()} == {
        role: EXPECTED[name].format(role=role) for role in roles
    }
    if name.startswith("parallel_flame_chase"):
        assert "coordinator" in roles
        for s in found.values():
            assert s is not None and "## Who follows it" in s.body and "## Checkpoint" in s.body
