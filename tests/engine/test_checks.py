"""Flows with mistakes in them, through `flamechase.testing`: each stops the run (or is refused
before it) with one line naming the flow and what it asked for; a run the flow's own code broke
keeps the flow's traceback in the run directory. The same flows run through `flamechase exec`
in tests/cli/test_exec_flow_mistakes.py."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from flamechase import errors
from flamechase.engine.executor import TurnJob
from flamechase.testing import FakeClock, FakeTurn, ScriptedExecutor, run_engine
from tests.engine.mistakes import BY_NAME, MISTAKES, REPORT, VERDICT, Mistake, flow_file


def answer(job: TurnJob) -> FakeTurn:
    """A turn report, or a verdict where the flow asks for its own result."""
    custom = job.result.model.__name__ != "TurnReport"
    return FakeTurn(report=VERDICT if custom else REPORT, duration=5)


def measured(job: object) -> dict[str, object]:
    return {"exit_code": 0, "value": 1.0, "error": None}


def run(tmp_path: Path, m: Mistake, **settings: str):  # type: ignore[no-untyped-def]
    """The flow `m` through `flamechase.testing`, stored in the test's state home."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "README.md").write_text("sample\n")
    clock = FakeClock()
    executor = ScriptedExecutor(clock, answer, measured)
    end = run_engine(
        str(flow_file(tmp_path, m)),
        ws,
        executor=executor,
        clock=clock,
        settings={"budget.turns": "6", **settings},
        home=tmp_path / "fc-home",
    )
    return end, executor


def last_error(home: Path) -> str:
    db = next(home.glob("runs/*/run.db"))
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return str(conn.execute("SELECT last_error FROM run").fetchone()[0])


@pytest.mark.parametrize("m", [m for m in MISTAKES if m.when == "run"], ids=lambda m: m.name)
def test_a_mistake_in_a_flow_fails_its_run_in_one_line(
    m: Mistake, tmp_path: Path, state_home: Path
) -> None:
    end, _ = run(tmp_path, m)
    assert (end.status, end.exit_code) == ("failed", 1), end.message
    line = end.message
    assert "\n" not in line
    for words in ("flow mistake", *m.words):
        assert words in line, line
    assert "internal error" not in line
    assert last_error(state_home) == line  # what `flamechase status` says
    kept = next(state_home.glob("runs/*")) / "flow-traceback.txt"
    if m.traceback:
        assert f"its traceback: {kept}" in line
        assert end.traceback and end.traceback == kept.read_text()
        assert "flamechase/engine" not in end.traceback  # the flow's own, not the engine's
    else:
        assert not kept.exists() and not end.traceback


@pytest.mark.parametrize("m", [m for m in MISTAKES if m.when != "run"], ids=lambda m: m.name)
def test_a_mistake_in_a_flows_declarations_is_refused_before_any_run(
    m: Mistake, tmp_path: Path, state_home: Path
) -> None:
    wanted = errors.FlowNotFound if m.when == "load" else errors.FlowRefused
    with pytest.raises(wanted) as caught:
        run(tmp_path, m)
    line = str(caught.value)
    assert "\n" not in line
    for words in m.words:
        assert words in line, line
    assert not list(state_home.glob("runs/*/run.db"))


def test_the_traceback_kept_is_where_the_flow_went_wrong(tmp_path: Path, state_home: Path) -> None:
    end, _ = run(tmp_path, BY_NAME["decide_raises"])
    assert "decide_raises.py" in end.traceback
    assert "number=1 // state.done" in end.traceback
    assert end.traceback.rstrip().endswith("ZeroDivisionError: integer division or modulo by zero")


def test_a_measurement_the_flow_never_records_runs_once(tmp_path: Path) -> None:
    # Before: asked again after every answer, 50-80 times a second, until SIGKILL.
    end, executor = run(tmp_path, BY_NAME["measure_never_recorded"])
    assert end.status == "failed"
    assert len(executor.measured) == 1


def test_a_turn_the_flow_never_records_is_not_taken_again(tmp_path: Path) -> None:
    # Before: taken again and again as attempts 2, 3, ... of turn 1 until the budget ran out.
    end, executor = run(tmp_path, BY_NAME["turn_asked_again_after_it_was_valid"])
    assert end.status == "failed"
    assert [(j.request.turn, j.request.attempt) for j in executor.jobs] == [(1, 1)]


def test_two_roles_on_one_turn_number_never_start(tmp_path: Path) -> None:
    # Before: the reviewer's turn became attempt 2 of the author's turn 1.
    end, executor = run(tmp_path, BY_NAME["two_roles_on_one_turn_number"])
    assert end.status == "failed"
    assert [j.request.role for j in executor.jobs] == ["author"]


@pytest.mark.parametrize(
    "name", ["inbox_outside_lanes", "unknown_role", "result_given_as_the_model_itself"]
)
def test_a_turn_that_cannot_be_started_never_reaches_an_agent(name: str, tmp_path: Path) -> None:
    end, executor = run(tmp_path, BY_NAME[name])
    assert end.status == "failed" and executor.jobs == []


def test_a_flow_that_waits_for_a_time_long_past_is_stopped_as_spinning(tmp_path: Path) -> None:
    end, _ = run(tmp_path, BY_NAME["spins_on_a_wait_in_the_past"])
    assert end.status == "failed" and "decide() was asked 10000 times in a row" in end.message


def test_a_flow_whose_result_model_breaks_records_the_turn_then_stops(
    tmp_path: Path, state_home: Path
) -> None:
    end, executor = run(tmp_path, BY_NAME["result_validator_raises"])
    assert len(executor.jobs) == 1
    db = next(state_home.glob("runs/*/run.db"))
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        [(status, error)] = conn.execute("SELECT status, error FROM turns").fetchall()
    assert status == "failed" and "result model Picky raised TypeError" in error
    assert 'c[:"80"]' in end.traceback


def test_the_errors_are_typed() -> None:
    assert issubclass(errors.FlowCommandError, errors.FlowError)
    assert issubclass(errors.FlowCodeError, errors.FlowError)
    assert issubclass(errors.FlowRefused, errors.UsageError)  # refused before a run: exit 2
