"""`flamechase.testing` as a flow author uses it: the run goes to a state home of its own,
never the user's, and comes back readable (`EngineRun.record()`)."""

from __future__ import annotations

import gc
import shutil
from pathlib import Path
from typing import Any

import pytest

from flamechase import events
from flamechase.loader import load_flow
from flamechase.testing import (
    EngineRun,
    FakeClock,
    FakeTurn,
    ScriptedExecutor,
    read_run,
    run_engine,
)

OK = FakeTurn(report={"status": "progress", "summary": "did a turn"})


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    src = tmp_path / "ws"
    src.mkdir()
    (src / "README.md").write_text("sample\n")
    return src


def _flame_chase(ws: Path, turns: int = 3, **kwargs: Any) -> EngineRun:
    clock = FakeClock()
    return run_engine(
        "flame_chase",
        ws,
        executor=ScriptedExecutor(clock, lambda job: OK),
        clock=clock,
        settings={"budget.turns": str(turns)},
        **kwargs,
    )


def test_a_run_never_touches_the_users_state_home(
    ws: Path, state_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both homes a user may have: FLAMECHASE_HOME (set here by conftest), and the platform's
    # state directory when it is not set.
    platform = tmp_path / "xdg-state"
    monkeypatch.setenv("XDG_STATE_HOME", str(platform))
    run = _flame_chase(ws)
    assert not state_home.exists()
    monkeypatch.delenv("FLAMECHASE_HOME")
    other = _flame_chase(ws)
    assert not platform.exists()
    for r in (run, other):
        assert r.status == "finished"
        assert (r.run_dir / "run.db").is_file()
        assert not r.home.is_relative_to(tmp_path)


def test_the_temporary_home_goes_with_the_result_and_says_where(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _flame_chase(ws)
    home = run.home
    said = capsys.readouterr().err
    assert f"run {run.run_id} finished in {run.run_dir}" in said
    assert "keep=True" in said
    del run
    gc.collect()
    assert not home.exists()
    with _flame_chase(ws) as closing:
        home = closing.home
        assert home.is_dir()
    assert not home.exists()


def test_keep_leaves_the_temporary_home(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _flame_chase(ws, keep=True)
    home = run.home
    try:
        run.close()
        del run
        gc.collect()
        assert (home / "runs").is_dir()
        assert "(kept)" in capsys.readouterr().err
    finally:
        shutil.rmtree(home)


def test_a_resume_runs_in_the_home_it_is_given(ws: Path) -> None:
    first = _flame_chase(ws, turns=2)
    again = _flame_chase(ws, turns=4, home=first.home, resume=True)
    assert again.run_id == first.run_id
    assert not again.temporary
    turns = again.record().turns
    assert [t.number for t in turns] == [1, 2, 3, 4]


def test_the_record_gives_typed_events_state_and_turns(ws: Path) -> None:
    run = _flame_chase(ws, turns=3)
    record = run.record()
    assert (record.id, record.flow, record.status) == (run.run_id, "flame_chase", "finished")
    valid = record.of(events.TurnValid)
    assert [(e.actor, e.turn, e.summary) for e in valid] == [
        ("first_chaser", 1, "did a turn"),
        ("second_chaser", 2, "did a turn"),
        ("first_chaser", 3, "did a turn"),
    ]
    assert isinstance(record.events[0], events.RunCreated)
    assert isinstance(record.events[-1], events.RunFinished)
    assert record.kinds()[0] == "run_created"
    assert [(t.lane, t.role, t.status, t.counted) for t in record.turns] == [
        ("lane-1", "first_chaser", "valid", True),
        ("lane-1", "second_chaser", "valid", True),
        ("lane-1", "first_chaser", "valid", True),
    ]
    assert (record.turns[0].result or {})["summary"] == "did a turn"
    # Each valid turn's report is published into the lane's reports.
    assert [r.lane for r in record.reports] == ["lane-1"] * 3
    flow = load_flow("flame_chase")
    assert record.state is not None
    assert isinstance(record.state_as(flow), flow.State)
    assert read_run(run.run_dir).events == record.events
