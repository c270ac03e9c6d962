"""Where the Ray executor places a lane's next host, and which failures are its node's: no
cluster needed (the actor class is stood in for; Ray's exceptions are real)."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytest.importorskip("ray", reason="needs flamechase[ray]")

from ray.exceptions import ActorDiedError, ActorUnavailableError, RayTaskError

from flamechase.engine.executor import LocalExecutor
from flamechase.engine.remote import ray_executor
from flamechase.engine.remote.options import LaneResources


class _Actor:
    def __init__(self) -> None:
        self.asked: dict[str, Any] = {}

    def options(self, **kw: Any) -> _Actor:
        self.asked = kw
        return self


def _executor() -> ray_executor.RayExecutor:
    return ray_executor.RayExecutor(
        LaneResources(cpus=0.5, custom=(("lane_slot", 1),)), LocalExecutor()
    )


def test_a_new_host_never_goes_to_a_node_a_host_was_lost_on_lately() -> None:
    ex, actor = _executor(), _Actor()
    ex._options(actor)
    assert actor.asked == {"num_cpus": 0.5, "resources": {"lane_slot": 1}}
    ex._lost_nodes = {"bb" * 28: time.monotonic(), "aa" * 28: time.monotonic()}
    ex._options(actor)
    assert actor.asked["label_selector"] == {"ray.io/node-id": f"!in({'aa' * 28},{'bb' * 28})"}
    assert actor.asked["num_cpus"] == 0.5


def test_a_lost_node_is_avoided_for_a_while_only() -> None:
    ex, actor = _executor(), _Actor()
    ex._lost_nodes = {"aa" * 28: time.monotonic() - ray_executor.AVOID_SECONDS - 1}
    ex._options(actor)
    assert "label_selector" not in actor.asked and not ex._lost_nodes


def test_only_a_host_that_went_is_its_nodes_loss() -> None:
    assert ray_executor._host_lost(ActorUnavailableError("gone", None))
    assert ray_executor._host_lost(ActorDiedError())
    assert ray_executor._host_lost(TimeoutError())  # no answer past every timeout
    assert not ray_executor._host_lost(RayTaskError("run", "Traceback", OSError("bug")))
    assert not ray_executor._host_lost(ray_executor._Lost("could not be placed"))
