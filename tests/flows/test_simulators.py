"""Every built-in flow ships a simulated actor that crosses to another process with its turn."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from flamechase.flow.sim import SimActor
from flamechase.flows import builtin_names, load_flow
from tests.sim_turns import make_request


@pytest.mark.parametrize("name", builtin_names())
def test_a_builtin_flows_actor_travels_with_the_turn(name: str, tmp_path: Path) -> None:
    actor = load_flow(name).simulator()
    assert isinstance(actor, SimActor)
    request = make_request(tmp_path, tmp_path, actor=actor)
    back = pickle.loads(pickle.dumps(request))
    assert type(back.actor) is type(actor)
    assert back.result == request.result
