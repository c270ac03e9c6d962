"""Every built-in flow ships a simulated actor that crosses to another process with its turn."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from flamechase.flow.sim import SimActor
from flamechase.flows import builtin_names
from flamechase.loader import load_flow
from tests.sim_turns import make_request


@pytest.mark.parametrize("name", builtin_names())
def test_a_builtin_flows_actor_travels_with_the_turn(name: str, tmp_path: Path) -> None:
    actor = load_flow(name).simulator()
    assert isinstance(actor, SimActor)
    request = make_request(tmp_path, tmp_path, actor=actor)
    back = pickle.loads(pickle.dumps(request))
    assert type(back.actor) is type(actor)
    assert back.result == request.result


HASHES = """
import json, sys
from flamechase.flows import builtin_names
from flamechase.loader import load_flow
from flamechase.loader.identity import code_hash
first, names = sys.argv[1], sys.argv[2:]
if first == "every-actor":  # as a long process would have: every flow and its actor loaded
    for name in builtin_names():
        load_flow(name).simulator()
print(json.dumps({name: code_hash(load_flow(name)) for name in names}))
"""


def _hashes(first: str, names: list[str]) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", HASHES, first, *names], capture_output=True, text=True, check=True
    )
    found: dict[str, str] = json.loads(done.stdout)
    return found


def test_a_builtin_flows_code_hash_does_not_depend_on_what_was_imported_before() -> None:
    # A resume compares the flow's code hash with the run's: a process that had loaded other
    # flows' actors first must hash a flow as a fresh one does.
    alone = {name: _hashes("nothing", [name])[name] for name in builtin_names()}
    assert alone == _hashes("every-actor", builtin_names())
