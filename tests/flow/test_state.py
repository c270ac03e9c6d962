"""Typed flow state: `FlowState.replace` refuses what `model_copy(update=...)` let through, and
`Flow[State, Params]` hands every declaration the flow's own params."""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field, field_validator

from flamechase import events as ev
from flamechase.flow import (
    Command,
    Flow,
    FlowParams,
    FlowState,
    FlowStateError,
    RunSetup,
    TurnContext,
)
from flamechase.flows import builtin_names
from flamechase.loader import load_flow
from flamechase.testing import FakeClock, FakeTurn, ScriptedExecutor, run_engine

SRC = Path(__file__).resolve().parents[2] / "src" / "flamechase"


class Item(FlowState):
    name: str


class Tally(FlowState):
    count: int = Field(default=0, ge=0)
    seen: tuple[str, ...] = ()
    items: dict[str, Item] = Field(default_factory=dict)
    note: str | None = None
    ratio: float = 0.0


class Even(FlowState):
    n: int = 0

    @field_validator("n")
    @classmethod
    def _even(cls, n: int) -> int:
        if n % 2:
            raise ValueError("must be even")
        return n


# ---- replace ------------------------------------------------------------------------------------


def test_replace_returns_a_copy_with_the_changes_and_leaves_the_state_as_it_was() -> None:
    before = Tally(count=1)
    after = before.replace(count=2, seen=("a",), note="n", ratio=1)
    assert after == Tally(count=2, seen=("a",), note="n", ratio=1.0)
    assert before == Tally(count=1)


def test_a_misspelled_field_is_refused_with_the_field_it_meant() -> None:
    with pytest.raises(
        FlowStateError, match=r"Tally has no field 'cuont' \(did you mean 'count'\?\)"
    ):
        Tally().replace(cuont=1)
    with pytest.raises(FlowStateError, match="its fields: count, seen, items, note, ratio"):
        Tally().replace(zzz=1)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"count": "3"}, r"Tally.count refuses str '3': Input should be a valid integer"),
        ({"count": -1}, "greater than or equal to 0"),
        ({"seen": ["a"]}, r"Tally.seen refuses list \['a'\]: Input should be a valid tuple"),
        ({"items": {"a": Item(name="a"), "b": 3}}, r"Tally.items\[b\] refuses dict"),
        ({"note": 3}, "Tally.note refuses int 3: Input should be a valid string"),
    ],
)
def test_a_value_its_field_does_not_hold_is_refused(change: dict[str, Any], said: str) -> None:
    with pytest.raises(FlowStateError, match=said):
        Tally().replace(**change)


def test_an_appended_item_is_checked_like_any_other() -> None:
    state = Tally().replace(seen=("a", "b"))
    assert state.replace(seen=(*state.seen, "c")).seen == ("a", "b", "c")
    with pytest.raises(FlowStateError, match=r"Tally.seen\[2\]"):
        state.replace(seen=(*state.seen, 3))


def test_the_models_own_validators_run_on_replace() -> None:
    assert Even().replace(n=2).n == 2
    with pytest.raises(FlowStateError, match=r"Even\.n refuses int 3: Value error, must be even"):
        Even().replace(n=3)
    with pytest.raises(FlowStateError, match="Even has no field 'm'"):
        Even().replace(m=2)


def test_a_state_is_frozen_and_refuses_unknown_fields_when_made() -> None:
    with pytest.raises(ValueError, match="cuont"):
        Tally(cuont=1)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="frozen"):
        Tally().count = 2  # type: ignore[misc]


def test_built_in_flows_states_refuse_a_misspelled_update() -> None:
    flow = load_flow("parallel_flame_chase")
    params = flow.Params(lanes=2)  # type: ignore[call-arg]
    state = flow.start(RunSetup(run_id="r", objective="o", params=params, lanes=flow.lanes(params)))
    with pytest.raises(FlowStateError, match="PfcState has no field 'candiates'"):
        state.replace(candiates=())
    with pytest.raises(FlowStateError, match=r"Lane\.busy refuses str 'yes'"):
        state.book.get("lane-1").replace(busy="yes")


def test_no_state_update_in_the_flow_api_or_a_built_in_flow_goes_unchecked() -> None:
    unchecked = []
    for path in [*(SRC / "flow").rglob("*.py"), *(SRC / "flows").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "model_copy"
                and any(k.arg == "update" for k in node.keywords)
                and path.name != "state.py"  # FlowState.replace itself, with validated values
            ):
                unchecked.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert not unchecked, unchecked


# ---- Flow[State, Params] ---------------------------------------------------------------------


class CountParams(FlowParams):
    workers: int = Field(default=2, ge=1, le=9)


class Counting(Flow[Tally, CountParams]):
    name = "counting"
    summary = "workers count"

    def roles(self, params: CountParams) -> list[str]:
        return [f"worker_{i}" for i in range(1, params.workers + 1)]

    def start(self, setup: RunSetup[CountParams]) -> Tally:
        return Tally(count=setup.params.workers)

    def evolve(self, state: Tally, event: ev.Event) -> Tally:
        return state

    def decide(self, state: Tally, now: float) -> Sequence[Command]:
        return []

    def prompt(self, state: Tally, ctx: TurnContext) -> str:
        return ""


def test_state_and_params_come_from_the_flows_type_arguments() -> None:
    assert Counting.State is Tally and Counting.Params is CountParams
    flow = Counting()
    params = CountParams(workers=3)
    assert flow.roles(params) == ["worker_1", "worker_2", "worker_3"]
    setup = RunSetup(run_id="r", objective="o", params=params, lanes=[])
    assert flow.start(setup).count == 3


def test_params_that_are_not_of_the_type_argument_are_refused_when_the_flow_is_defined() -> None:
    with pytest.raises(TypeError, match="Params = FlowParams is not a CountParams"):

        class Wrong(Flow[Tally, CountParams]):
            Params = FlowParams


def test_a_flow_of_one_type_argument_takes_plain_params() -> None:
    class Plain(Flow[Tally]):
        name = "plain"
        summary = "s"

        def roles(self, params: FlowParams) -> list[str]:
            return ["a"]

        def start(self, setup: RunSetup) -> Tally:
            return Tally()

        def evolve(self, state: Tally, event: ev.Event) -> Tally:
            return state

        def decide(self, state: Tally, now: float) -> Sequence[Command]:
            return []

        def prompt(self, state: Tally, ctx: TurnContext) -> str:
            return ""

    assert Plain.State is Tally and Plain.Params is FlowParams


def test_built_in_flows_declare_the_params_they_are_typed_with() -> None:
    for name in builtin_names():
        flow = load_flow(name)
        base = next(b for b in type(flow).__orig_bases__ if getattr(b, "__origin__", None) is Flow)
        assert base.__args__ == (flow.State, flow.Params), name


# ---- through the engine ------------------------------------------------------------------------

BUGGY = """
from flamechase.flow import FinishRun, Flow, FlowParams, FlowState, StartTurn, events


class TallyState(FlowState):
    count: int = 0


class Tally(Flow[TallyState]):
    name = "tally"
    summary = "counts valid turns, twice"

    def roles(self, params: FlowParams) -> list[str]:
        return ["worker"]

    def start(self, setup):
        return TallyState()

    def evolve(self, state, event):
        if isinstance(event, events.TurnValid):
            return state.replace(cuont=state.count + 1)  # the bug
        return state

    def decide(self, state, now):
        if state.count >= 2:
            return [FinishRun("finished", "counted twice")]
        return [StartTurn(role="worker", lane=None, number=state.count + 1)]

    def prompt(self, state, ctx):
        return "count"


FLOW = Tally()
"""


def test_a_misspelled_update_in_a_flow_stops_its_run_at_once(
    tmp_path: Path, state_home: Path
) -> None:
    # With `model_copy(update={"cuont": ...})` the count never moved: the same turn was asked
    # for again and again until a budget ran out, and the run said it had finished.
    flow = tmp_path / "tally_flow.py"
    flow.write_text(textwrap.dedent(BUGGY))
    ws = tmp_path / "ws"
    ws.mkdir()
    clock = FakeClock()
    executor = ScriptedExecutor(
        clock, lambda job: FakeTurn(report={"status": "progress", "summary": "s"})
    )
    end = run_engine(
        str(flow),
        ws,
        executor=executor,
        clock=clock,
        settings={"budget.turns": "10"},
        home=state_home,
    )
    assert end.status == "failed"
    assert "evolve() of turn_valid raised FlowStateError: TallyState has no field 'cuont'" in (
        end.message
    )
    assert f'File "{flow}", line' in end.traceback  # its own line, kept in the run
    assert len(executor.jobs) == 1  # the first valid turn, and nothing after it
