"""parallel_flame_chase's lane refresh alone (events in, commands out): one refresh of a
lane at a time, under a key asked once, and each answer moves the lane forward — whatever
order the answers, lane 1's turns and the lanes' turns arrive in."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flamechase import events as ev
from flamechase.flow import Command, MakePlace, Run, RunSetup, StartTurn
from flamechase.flows.parallel_flame_chase import FLOW, ParallelParams, refresh
from tests.flows.test_parallel_decider import PLAN, made, settle


class Engine:
    """What the engine does with a flow's `Run`s: each key runs once (asked again while it
    runs, it is the same program), and a key answered is never asked again."""

    def __init__(self) -> None:
        self.running: dict[str, Run] = {}
        self.answered: set[str] = set()

    def take(self, commands: list[Command]) -> list[Command]:
        for c in commands:
            if isinstance(c, Run):
                assert c.key not in self.answered, f"{c.key} asked again once answered"
                self.running.setdefault(c.key, c)
        return commands

    def answer(self, key: str, base: str, conflicts: tuple[str, ...] = ()) -> ev.Ran:
        run = self.running.pop(key, None)
        self.answered.add(key)
        out: dict[str, Any] = {"base": base, "written": 1, "conflicts": list(conflicts)}
        if run is not None and "--at" in run.argv:  # the program says its count back
            out["at"] = int(run.argv[run.argv.index("--at") + 1])
        return ev.Ran(key=key, receipt={"output": json.dumps(out), "exit_code": 0})

    def refreshes(self) -> list[str]:
        return sorted(k for k in self.running if ":refresh:" in k)


def _started(engine: Engine) -> tuple[Any, Engine]:
    p = ParallelParams(lanes=2, lane_refresh="rebase")
    state = FLOW.start(
        RunSetup(run_id="r", objective="o", params=p, lanes=FLOW.lanes(p), source="/src")
    )
    state, _ = settle(made(state, "lanes/lane-2", "planning/1"))
    state, _ = settle(state, ev.TurnValid(actor="coordinator", turn=1, result=PLAN))
    state, cmds = settle(state, ev.PlaceDropped(place="planning/1"))
    [record] = [c for c in engine.take(cmds) if isinstance(c, Run)]
    state, cmds = settle(state, engine.answer(record.key, "base-0"))
    assert {c.lane for c in engine.take(cmds) if isinstance(c, StartTurn)} == {"lane-1", "lane-2"}
    return state, engine


def _turn(state: Any, engine: Engine, lane: str, turn: int) -> tuple[Any, list[Command]]:
    n = lane.split("-")[1]
    actor = f"lane_{n}_actor_{'a' if turn % 2 else 'b'}"
    state, _ = settle(state, ev.TurnStarted(lane=lane, actor=actor, turn=turn))
    state, cmds = settle(
        state,
        ev.TurnEnded(lane=lane, actor=actor, turn=turn),
        ev.TurnValid(lane=lane, actor=actor, turn=turn, result={}),
    )
    cmds = engine.take(list(cmds))
    snaps = [c for c in cmds if isinstance(c, Run) and ":snap:" in c.key]
    if lane == "lane-1":
        # Lane 1's tree is recorded before its next turn starts (never read mid-turn).
        [snap] = snaps
        assert "lane-1" not in {c.lane for c in cmds if isinstance(c, StartTurn)}
        state, more = settle(state, engine.answer(snap.key, f"snap-{turn}"))
        cmds = [*cmds, *engine.take(list(more))]
    return state, cmds


@pytest.mark.parametrize("order", ["asked", "reversed"])
def test_lane_1_moving_on_during_a_refresh_asks_no_second_refresh_and_no_key_twice(
    order: str,
) -> None:
    engine = Engine()
    state, _ = _started(engine)
    state, _ = _turn(state, engine, "lane-2", 1)  # lane 2 idle: waits for lane 1's tree
    state, _ = _turn(state, engine, "lane-1", 1)
    [first] = engine.refreshes()
    # Lane 1's turn 2 is valid while lane 2's refresh still runs: that refresh goes on (the
    # lane's copy is refreshed by one program at a time, each from the base the last left).
    state, cmds = _turn(state, engine, "lane-1", 2)
    assert engine.refreshes() == [first]
    assert "lane-2" not in {c.lane for c in cmds if isinstance(c, StartTurn)}
    if order == "reversed":  # lane 1 moves on again before the answer
        state, cmds = _turn(state, engine, "lane-1", 3)
        assert engine.refreshes() == [first]
    state, cmds = settle(state, engine.answer(first, "base-1", ("README.md",)))
    engine.take(list(cmds))
    # One refresh per lane turn: lane 2's turn starts (it does not wait on a lane 1 that keeps
    # moving), and its prompt names the file both changed and the lane-1 turns since.
    assert engine.refreshes() == []
    assert "lane-2" in {c.lane for c in cmds if isinstance(c, StartTurn)}
    fresh = state.fresh["lane-2"]
    assert fresh.base == "base-1"
    note = refresh.note(fresh, 2, state.lane1_turns)
    assert "reconcile them deliberately: README.md." in note and "its turn 1)" in note
    # After that turn, the next refresh: a new key, from the base the first one left.
    state, cmds = _turn(state, engine, "lane-2", 2)
    [second] = engine.refreshes()
    assert second != first
    run = next(c for c in cmds if isinstance(c, Run) and c.key == second)
    assert run.argv[run.argv.index("--base") + 1] == "base-1"
    state, cmds = settle(state, engine.answer(second, "base-2"))
    engine.take(list(cmds))
    assert engine.refreshes() == []
    assert state.fresh["lane-2"].on == state.lane1_valid
    assert "lane-2" in {c.lane for c in cmds if isinstance(c, StartTurn)}


def test_an_older_refresh_answered_after_a_newer_one_leaves_the_lane_where_the_newer_did() -> None:
    """A journal of a run whose refreshes of one lane overlapped (asked at lane-1 counts 1 and
    2, answered 2 then 1): the lane stays on the later tree and no answered key is asked."""
    engine = Engine()
    state, _ = _started(engine)
    state, _ = _turn(state, engine, "lane-2", 1)
    state, _ = _turn(state, engine, "lane-1", 1)
    state, _ = _turn(state, engine, "lane-1", 2)
    newer, older = "lanerefresh:lane-2:refresh:2:0", "lanerefresh:lane-2:refresh:1:0"
    state, cmds = settle(state, engine.answer(newer, "base-2"))
    engine.take(list(cmds))
    state, cmds = settle(state, engine.answer(older, "base-1"))
    engine.take(list(cmds))  # asks no key twice
    assert (state.fresh["lane-2"].base, state.fresh["lane-2"].on) == ("base-2", 2)
    assert engine.refreshes() == []
    assert "lane-2" in {c.lane for c in cmds if isinstance(c, StartTurn)}


def test_lanes_are_refreshed_onto_lane_1s_tree_as_recorded_between_its_turns() -> None:
    """Lane 1's tree is read only between its turns: recorded before its next turn starts,
    and the lanes are refreshed onto that commit, never onto the tree a turn is writing."""
    engine = Engine()
    state, _ = _started(engine)
    state, _ = _turn(state, engine, "lane-2", 1)
    state, cmds = _turn(state, engine, "lane-1", 1)  # recorded as snap-1, then lane 1 goes on
    assert "lane-1" in {c.lane for c in cmds if isinstance(c, StartTurn)}
    [key] = engine.refreshes()
    run = engine.running[key]
    assert run.argv[run.argv.index("--onto-commit") + 1] == "snap-1"
    assert "--onto" not in run.argv
    assert run.argv[run.argv.index("--at") + 1] == "1"
    [snap] = [k for k in engine.answered if ":snap:" in k]
    assert snap == "lanerefresh:lane-1:snap:1:0"


def test_a_lane_copy_remade_mid_run_waits_for_the_lane_1_turn_under_way() -> None:
    """A copy dropped mid-run (a mission's redirect) is made again between lane-1 turns,
    never of a tree a turn is writing; and no lane turn starts before it is."""
    engine = Engine()
    state, _ = _started(engine)
    state, _ = settle(state, ev.TurnStarted(lane="lane-1", actor="lane_1_actor_a", turn=1))
    state, cmds = settle(state, ev.PlaceDropped(place="lanes/lane-2"))
    assert not [c for c in cmds if isinstance(c, MakePlace | StartTurn)]
    state, cmds = settle(
        state,
        ev.TurnEnded(lane="lane-1", actor="lane_1_actor_a", turn=1),
        ev.TurnValid(lane="lane-1", actor="lane_1_actor_a", turn=1, result={}),
    )
    assert [c.name for c in cmds if isinstance(c, MakePlace)] == ["lanes/lane-2"]
    assert not [c for c in cmds if isinstance(c, StartTurn)]
