"""Where the Ray executor places a lane's next host, and which failures are its node's: no
cluster needed (the actor class is stood in for; Ray's exceptions are real)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("ray", reason="needs flamechase[ray]")

from ray.exceptions import ActorDiedError, ActorUnavailableError, RayTaskError

import flamechase
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


class _Handle:
    """An actor that comes up only where it was not kept from: the one node that can take
    the lane is the one avoided."""

    def __init__(self, avoided: bool) -> None:
        self.describe = self
        self.avoided = avoided

    async def remote(self) -> dict[str, Any]:
        if self.avoided:
            await asyncio.sleep(3600)
        return {"node": "aa" * 28, "host": "h", "version": flamechase.__version__}


class _OnlyNode(_Actor):
    def __init__(self) -> None:
        super().__init__()
        self.tries: list[bool] = []

    def remote(self, *args: Any) -> _Handle:
        avoided = "label_selector" in self.asked
        self.tries.append(avoided)
        return _Handle(avoided)


def test_avoiding_a_lost_node_never_costs_more_than_the_avoidance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A lane only the avoided node can take waits out the avoidance, then goes there
    (the node was alive after all), within its placement timeout."""
    monkeypatch.setattr(ray_executor, "AVOID_SECONDS", 0.5)
    only = _OnlyNode()
    monkeypatch.setattr(ray_executor, "LaneActor", only)
    ex = _executor()
    ex.placement_timeout = 600
    ex._lost_nodes = {"aa" * 28: time.monotonic()}
    job: Any = SimpleNamespace(
        request=SimpleNamespace(run_id="r", run_dir=Path("/r"), workspace=Path("/r/w"))
    )
    placed = asyncio.run(ex._place("lane-2", job, False))
    assert placed.info["node"] == "aa" * 28
    assert only.tries == [True, False]
