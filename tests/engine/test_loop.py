"""The control loop with scripted turns and a fake clock: no agent process, no real waiting.

Each test runs the real engine, store and flows; only the executor (turns answered from a
script after a simulated duration) and the clock (which jumps to the next thing due) are
fakes, so a twelve-hour budget takes milliseconds and nothing depends on machine load.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flamechase.engine.executor import TurnJob
from flamechase.engine.loop import Engine
from flamechase.engine.rerun import way_on
from flamechase.store.reader import Reader
from flamechase.testing import FakeClock, FakeTurn, ScriptedExecutor, run_engine


def ok(summary: str = "did a turn", status: str = "progress") -> FakeTurn:
    return FakeTurn(report={"status": status, "summary": summary})


def plan(job: TurnJob) -> FakeTurn:
    lanes = job.request.env["FLAMECHASE_LANES"].split(",")
    return FakeTurn(
        report={
            "lanes": [
                {
                    "lane": n,
                    "mission": {"title": f"m {n}", "objective": "o", "success_criteria": ["c"]},
                }
                for n in lanes
            ]
        },
        duration=30,
    )


def rows(home: Path, sql: str) -> list[dict[str, Any]]:
    db = next(home.glob("runs/*/run.db"))
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute(sql)]


def lane_turns(home: Path, lane: str) -> list[dict[str, Any]]:
    return rows(home, f"SELECT * FROM turns WHERE lane = '{lane}' ORDER BY id")


def copy_db(source: Path, dest: Path) -> None:
    """Everything committed in `source`, into `dest` (in place: the file keeps its identity,
    which the run's control-path guard checks)."""
    with sqlite3.connect(source) as src, sqlite3.connect(dest) as dst:
        src.backup(dst)


def kinds(home: Path) -> list[str]:
    return [r["kind"] for r in rows(home, "SELECT kind FROM events ORDER BY seq")]


def pfc(script: Callable[[TurnJob], FakeTurn]) -> Callable[[TurnJob], FakeTurn]:
    """parallel_flame_chase: the coordinator plans, lanes follow `script`."""
    return lambda job: plan(job) if job.request.role == "coordinator" else script(job)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    src = tmp_path / "ws"
    src.mkdir()
    (src / "README.md").write_text("sample\n")
    return src


# ---- flame_chase ------------------------------------------------------------------------------


def test_actors_alternate_and_number_their_turns(ws: Path, state_home: Path) -> None:
    clock = FakeClock()
    ex = ScriptedExecutor(clock, lambda job: ok(f"turn {job.request.turn}"))
    end = run_engine(
        "flame_chase", ws, executor=ex, clock=clock, settings={"budget.turns": "5"}, home=state_home
    )
    assert (end.status, end.exit_code) == ("finished", 0)
    assert [(j.request.role, j.request.turn, j.request.attempt) for j in ex.jobs] == [
        ("first_chaser", 1, 1),
        ("second_chaser", 2, 1),
        ("first_chaser", 3, 1),
        ("second_chaser", 4, 1),
        ("first_chaser", 5, 1),
    ]
    assert [r["status"] for r in lane_turns(state_home, "lane-1")] == ["valid"] * 5


def test_a_failed_turn_passes_the_baton_and_is_published(ws: Path, state_home: Path) -> None:
    clock = FakeClock()
    ex = ScriptedExecutor(
        clock, lambda job: FakeTurn(error="crashed") if job.request.turn == 2 else ok()
    )
    run_engine(
        "flame_chase", ws, executor=ex, clock=clock, settings={"budget.turns": "3"}, home=state_home
    )
    assert [j.request.role for j in ex.jobs] == ["first_chaser", "second_chaser", "first_chaser"]
    reports = rows(state_home, "SELECT kind FROM reports ORDER BY seq")
    assert [r["kind"] for r in reports] == ["report", "turn_failed", "report"]
    # The next prompt says what went wrong.
    assert "The previous turn failed: crashed" in ex.jobs[2].request.prompt


def test_a_twelve_hour_budget_runs_in_simulated_time(ws: Path, state_home: Path) -> None:
    clock = FakeClock()
    ex = ScriptedExecutor(
        clock, lambda job: FakeTurn(report={"status": "progress", "summary": "x"}, duration=600)
    )
    start = clock.time()
    end = run_engine(
        "flame_chase",
        ws,
        executor=ex,
        clock=clock,
        settings={"budget.duration": "12h"},
        home=state_home,
    )
    assert end.message.startswith("budget duration is spent")
    # 600 s turns back to back with a 0.05 s rest: the 72nd starts before 12 h, ends after.
    assert len(ex.jobs) == 72
    assert 12 * 3600 <= clock.time() - start < 12 * 3600 + 600


def test_a_cost_budget_stops_new_turns(ws: Path, state_home: Path) -> None:
    clock = FakeClock()
    ex = ScriptedExecutor(
        clock, lambda job: FakeTurn(report={"status": "progress", "summary": "x"}, cost=0.4)
    )
    end = run_engine(
        "flame_chase", ws, executor=ex, clock=clock, settings={"budget.cost": "1"}, home=state_home
    )
    assert end.message.startswith("budget cost is spent")
    assert len(ex.jobs) == 3  # 0.4 + 0.4 = 0.8 leaves room; 1.2 does not


def test_a_usage_limit_pauses_the_lane_and_the_same_actor_retakes_the_turn(
    ws: Path, state_home: Path
) -> None:
    clock = FakeClock()
    ex = ScriptedExecutor(
        clock,
        lambda job: (
            FakeTurn(limited_for=3600)
            if (job.request.turn, job.request.attempt) == (2, 1)
            else ok()
        ),
    )
    run_engine(
        "flame_chase", ws, executor=ex, clock=clock, settings={"budget.turns": "3"}, home=state_home
    )
    assert [(j.request.role, j.request.turn, j.request.attempt) for j in ex.jobs] == [
        ("first_chaser", 1, 1),
        ("second_chaser", 2, 1),
        ("second_chaser", 2, 2),
        ("first_chaser", 3, 1),
    ]
    # The retake waited for the usage window to reopen.
    limited, retake = lane_turns(state_home, "lane-1")[1:3]
    assert limited["status"] == "limited" and retake["status"] == "valid"
    assert retake["started"] >= limited["ended"]


def _stop_at(seconds: float, times: int = 1) -> Callable[[Engine], None]:
    def hook(engine: Engine) -> None:
        clock = engine.clock
        assert isinstance(clock, FakeClock)
        for n in range(times):
            clock.call_at(clock.time() + seconds + n, engine.stop)

    return hook


def test_a_stop_lets_the_turn_under_way_land(ws: Path, state_home: Path) -> None:
    clock = FakeClock()
    ex = ScriptedExecutor(
        clock, lambda job: FakeTurn(report={"status": "progress", "summary": "x"}, duration=100)
    )
    end = run_engine(
        "flame_chase",
        ws,
        executor=ex,
        clock=clock,
        settings={"budget.turns": "10"},
        engine_hook=_stop_at(150),
        home=state_home,
    )
    assert (end.status, end.exit_code) == ("stopped", 130)
    assert [r["status"] for r in lane_turns(state_home, "lane-1")] == ["valid", "valid"]


def test_a_second_stop_cuts_the_turn_and_a_resume_retakes_it(ws: Path, state_home: Path) -> None:
    clock = FakeClock()
    ex = ScriptedExecutor(
        clock, lambda job: FakeTurn(report={"status": "progress", "summary": "x"}, duration=100)
    )
    run_engine(
        "flame_chase",
        ws,
        executor=ex,
        clock=clock,
        settings={"budget.turns": "4"},
        engine_hook=_stop_at(150, times=2),
        home=state_home,
    )
    assert [r["status"] for r in lane_turns(state_home, "lane-1")] == ["valid", "interrupted"]
    again = ScriptedExecutor(clock, lambda job: ok())
    end = run_engine(
        "flame_chase",
        ws,
        executor=again,
        clock=clock,
        resume=True,
        settings={"budget.turns": "4"},
        home=state_home,
    )
    assert end.status == "finished"
    assert [(j.request.role, j.request.turn, j.request.attempt) for j in again.jobs] == [
        ("second_chaser", 2, 2),
        ("first_chaser", 3, 1),
        ("second_chaser", 4, 1),
    ]
    counted = [r for r in lane_turns(state_home, "lane-1") if r["status"] == "valid"]
    assert [r["number"] for r in counted] == [1, 2, 3, 4]


# ---- parallel_flame_chase ---------------------------------------------------------------------


def test_the_coordinator_plans_once_then_three_lanes_run(ws: Path, state_home: Path) -> None:
    clock = FakeClock()
    ex = ScriptedExecutor(clock, pfc(lambda job: ok()))
    end = run_engine(
        "parallel_flame_chase",
        ws,
        executor=ex,
        clock=clock,
        settings={"budget.turns": "6"},
        home=state_home,
    )
    assert end.status == "finished"
    roles = [j.request.role for j in ex.jobs]
    assert roles[0] == "coordinator" and roles.count("coordinator") == 1
    assert sorted(roles[1:]) == sorted(
        [
            "lane_1_actor_a",
            "lane_1_actor_b",
            "lane_2_actor_a",
            "lane_2_actor_b",
            "lane_3_actor_a",
            "lane_3_actor_b",
        ]
    )
    # The mission reached each lane's prompt.
    assert all("m lane-" in j.request.prompt for j in ex.jobs[1:])


def test_two_failures_hold_a_lane_and_all_held_ends_the_run(ws: Path, state_home: Path) -> None:
    clock = FakeClock()
    ex = ScriptedExecutor(clock, pfc(lambda job: FakeTurn(error="no luck")))
    end = run_engine(
        "parallel_flame_chase",
        ws,
        executor=ex,
        clock=clock,
        settings={"budget.turns": "50", "lanes": "2"},
        home=state_home,
    )
    assert (end.status, end.exit_code) == ("held", 3)
    assert "every lane is held" in end.message
    held = rows(state_home, "SELECT lane, held, held_reason FROM lanes ORDER BY lane")
    assert [(r["lane"], r["held"]) for r in held] == [("lane-1", 1), ("lane-2", 1)]
    assert all("2 failed turns in a row: no luck" in r["held_reason"] for r in held)
    assert len(ex.jobs) == 1 + 4  # planning, then two turns per lane


def test_a_blocked_report_holds_its_lane_at_once(ws: Path, state_home: Path) -> None:
    clock = FakeClock()
    ex = ScriptedExecutor(clock, pfc(lambda job: ok("need a key", "blocked")))
    end = run_engine(
        "parallel_flame_chase",
        ws,
        executor=ex,
        clock=clock,
        settings={"budget.turns": "50", "lanes": "1"},
        home=state_home,
    )
    assert end.status == "held"
    assert "lane-1: blocked" in end.message


def test_a_failed_turn_leaves_its_inbox_for_the_partner(ws: Path, state_home: Path) -> None:
    # lane-2 publishes early; lane-1's second turn receives it and fails, so its partner's
    # turn gets the same report again; the valid third turn acknowledges it.
    def lanes(job: TurnJob) -> FakeTurn:
        if job.request.lane == "lane-2":
            return FakeTurn(
                report={"status": "progress", "summary": "x"},
                duration=10 if job.request.turn == 1 else 10_000,
            )
        if job.request.turn == 2:
            return FakeTurn(error="broke", duration=100)
        return FakeTurn(report={"status": "progress", "summary": "x"}, duration=100)

    clock = FakeClock()
    ex = ScriptedExecutor(clock, pfc(lanes))
    run_engine(
        "parallel_flame_chase",
        ws,
        executor=ex,
        clock=clock,
        settings={"budget.turns": "5", "lanes": "2"},
        home=state_home,
    )
    first = rows(
        state_home, "SELECT report_id FROM reports WHERE lane = 'lane-2' ORDER BY seq LIMIT 1"
    )[0]["report_id"]
    inboxes = [
        Path(j.request.env["FLAMECHASE_INBOX"]).read_text()
        for j in ex.jobs
        if j.request.lane == "lane-1"
    ]
    assert [first in text for text in inboxes] == [False, True, True]
    acked = rows(
        state_home,
        "SELECT c.seq, r.report_id FROM cursors c JOIN reports r "
        "ON r.seq = c.seq WHERE c.consumer = 'lane-1'",
    )
    assert [a["report_id"] for a in acked] == [first]


def test_a_cut_turn_keeps_its_budget_slot_across_a_crash(
    ws: Path, state_home: Path, tmp_path: Path
) -> None:
    """budget.turns=6 over three lanes; the engine dies while the sixth turn runs; the
    resumed run retakes that turn (same role, same number) instead of starting another."""
    saved = tmp_path / "at-crash.db"
    clock = FakeClock()
    ex = ScriptedExecutor(
        clock,
        pfc(
            lambda job: FakeTurn(
                report={"status": "progress", "summary": "x"},
                duration={"lane-1": 100, "lane-2": 130, "lane-3": 170}[job.request.lane],
            )
        ),
    )

    def hook(engine: Engine) -> None:
        seen = {"started": 0}
        fault = engine.fault_hook

        def at(label: str) -> None:
            if fault is not None:
                fault(label)
            if label != "after-commit" or saved.exists():
                return
            started = rows(state_home, "SELECT count(*) AS n FROM inflight")[0]["n"]
            done = rows(
                state_home,
                "SELECT count(*) AS n FROM turns WHERE counted = 1 AND "
                "status IN ('valid', 'failed')",
            )[0]["n"]
            seen["started"] = started
            if done + started == 6 and started:
                copy_db(engine.ledger.writer.path, saved)  # what a SIGKILL here would leave

        engine.fault_hook = at

    run_engine(
        "parallel_flame_chase",
        ws,
        executor=ex,
        clock=clock,
        settings={"budget.turns": "6"},
        engine_hook=hook,
        home=state_home,
    )
    assert saved.exists()
    copy_db(saved, next(state_home.glob("runs/*/run.db")))
    cut = rows(state_home, "SELECT lane, number, role FROM inflight")
    again = ScriptedExecutor(clock, pfc(lambda job: ok()))
    end = run_engine(
        "parallel_flame_chase",
        ws,
        executor=again,
        clock=clock,
        resume=True,
        settings={"budget.turns": "6"},
        home=state_home,
    )
    assert end.message.startswith("budget turns is spent")
    assert [
        (j.request.lane, j.request.turn, j.request.role, j.request.attempt) for j in again.jobs
    ] == [(c["lane"], c["number"], c["role"], 2) for c in cut]
    counted = rows(
        state_home,
        "SELECT count(*) AS n FROM turns WHERE counted = 1 AND status IN ('valid', 'failed')",
    )[0]["n"]
    assert counted == 6
    assert "turn_interrupted" in kinds(state_home)


def test_without_a_budget_the_run_goes_on_until_stopped(ws: Path, state_home: Path) -> None:
    clock = FakeClock()
    ex = ScriptedExecutor(
        clock, lambda job: FakeTurn(report={"status": "progress", "summary": "x"}, duration=3600)
    )
    end = run_engine(
        "flame_chase",
        ws,
        executor=ex,
        clock=clock,
        engine_hook=_stop_at(30 * 3600),
        home=state_home,
    )
    assert (end.status, end.exit_code) == ("stopped", 130)
    assert len(ex.jobs) == 30  # a day and more of turns, then the stop
    notices = rows(state_home, "SELECT payload FROM events WHERE kind = 'notice'")
    assert any("no budget: this run goes on until you stop it" in n["payload"] for n in notices)


def test_a_stop_is_answered_at_once_with_what_happens_next(ws: Path, state_home: Path) -> None:
    clock = FakeClock()
    ex = ScriptedExecutor(
        clock, lambda job: FakeTurn(report={"status": "progress", "summary": "x"}, duration=100)
    )
    run_engine(
        "flame_chase",
        ws,
        executor=ex,
        clock=clock,
        settings={"budget.turns": "9"},
        engine_hook=_stop_at(150, times=2),
        home=state_home,
    )
    said = rows(state_home, "SELECT payload FROM events WHERE kind = 'stopping' ORDER BY seq")
    assert [json.loads(s["payload"]) for s in said] == [
        {"cut": False, "under_way": 1},
        {"cut": True, "under_way": 1},
    ]
    kinds_now = kinds(state_home)
    # Said before the turn under way ended.
    assert kinds_now.index("stopping") < kinds_now.index("turn_interrupted")


def test_a_run_whose_every_turn_failed_fails(ws: Path, state_home: Path) -> None:
    clock = FakeClock()
    ex = ScriptedExecutor(clock, lambda job: FakeTurn(error="no"))
    end = run_engine(
        "flame_chase", ws, executor=ex, clock=clock, settings={"budget.turns": "3"}, home=state_home
    )
    assert (end.status, end.exit_code) == ("failed", 1)
    assert end.message.endswith("none of its 3 turns was valid")
    # Journaled as such: the way on is read from the flag, not from the message's words.
    [ended] = rows(state_home, "SELECT payload FROM events WHERE kind = 'run_failed'")
    assert json.loads(ended["payload"])["all_turns_failed"] is True
    assert way_on(*_run(state_home)).startswith("see each lane's last error; once its agents")


GIVES_UP_FLOW = """
from pydantic import BaseModel, ConfigDict
from flamechase.flow import FinishRun, Flow, StartTurn, events


class S(BaseModel):
    model_config = ConfigDict(frozen=True)
    turns: int = 0


class GivesUp(Flow[S]):
    name = "gives_up"
    summary = "fails on its own after one invalid turn"
    State = S

    def roles(self, params): return ["agent"]
    def start(self, setup): return S()
    def evolve(self, state, event):
        return S(turns=state.turns + 1) if isinstance(event, events.TurnFailed) else state
    def decide(self, state, now):
        if state.turns:
            return [FinishRun("failed", "none of its gates was valid")]
        return [StartTurn(role="agent", lane=None, number=1)]
    def prompt(self, state, ctx): return "try"


FLOW = GivesUp()
"""


def test_a_flow_that_fails_in_the_words_of_an_all_failed_run_gets_its_own_way_on(
    ws: Path, tmp_path: Path, state_home: Path
) -> None:
    flow = tmp_path / "gives_up.py"
    flow.write_text(GIVES_UP_FLOW)
    clock = FakeClock()
    ex = ScriptedExecutor(clock, lambda job: FakeTurn(error="no"))
    end = run_engine(
        str(flow), ws, executor=ex, clock=clock, settings={"budget.turns": "3"}, home=state_home
    )
    assert end.status == "failed" and "none of its gates was valid" in end.message
    [ended] = rows(state_home, "SELECT payload FROM events WHERE kind = 'run_failed'")
    assert json.loads(ended["payload"])["all_turns_failed"] is False
    # The flow failed, not its agents: the advice is the flow's failure's, whatever its words.
    assert way_on(*_run(state_home)) == (
        "once the cause of its failure is fixed, start afresh with -p resume_mode=fresh"
    )


def _run(home: Path) -> tuple[Path, dict[str, Any]]:
    db = next(home.glob("runs/*/run.db"))
    with Reader(db) as r:
        return db.parent, r.run()


STRUCTURED_FLOW = """
from pydantic import BaseModel, ConfigDict
from flamechase.flow import (FinishRun, Flow, ResultSpec, StartTurn, events)


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    answer: int


class S(BaseModel):
    model_config = ConfigDict(frozen=True)
    done: bool = False


class Asks(Flow[S]):
    name = "asks"
    summary = "one turn with a structured answer"
    State = S

    def roles(self, params): return ["agent"]
    def start(self, setup): return S()
    def evolve(self, state, event):
        return S(done=True) if isinstance(event, events.TurnValid) else state
    def decide(self, state, now):
        if state.done:
            return [FinishRun("finished", "answered")]
        return [StartTurn(role="agent", lane=None, number=1,
                          result=ResultSpec(Answer, noun="answer", structured=True))]
    def prompt(self, state, ctx): return "answer"


FLOW = Asks()
"""


def test_a_structured_result_asks_the_cli_for_its_schema(
    ws: Path, tmp_path: Path, state_home: Path
) -> None:
    flow = tmp_path / "asks.py"
    flow.write_text(STRUCTURED_FLOW)
    clock = FakeClock()
    ex = ScriptedExecutor(clock, lambda job: FakeTurn(report={"answer": 42}))
    end = run_engine(
        str(flow), ws, executor=ex, clock=clock, settings={"budget.turns": "2"}, home=state_home
    )
    assert end.message.startswith("answered")
    [job] = ex.jobs
    schema = job.request.result_schema
    assert schema is not None and schema["properties"]["answer"]["type"] == "integer"


DROPPING_FLOW = """
from flamechase.flow import (DropPlace, FinishRun, Flow, FlowState, MakePlace, Measure,
                             StartTurn, events)


class S(FlowState):
    places: dict[str, str] = {}
    measured: bool = False


class Drops(Flow[S]):
    name = "drops"
    summary = "measures in one place while it drops another"

    def roles(self, params): return ["agent"]
    def start(self, setup): return S()
    def evolve(self, state, event):
        if isinstance(event, events.PlaceMade):
            return state.replace(places={**state.places, event.place: event.path})
        if isinstance(event, events.PlaceDropped):
            return state.replace(places={k: v for k, v in state.places.items() if k != event.place})
        if isinstance(event, events.Measured):
            return state.replace(measured=True)
        return state
    def decide(self, state, now):
        if not state.places and not state.measured:
            return [MakePlace("kept"), MakePlace("gone")]
        if state.measured:
            return [FinishRun("finished", "measured")]
        out = [Measure(key="m", place="kept", command="true", pattern="(x)")]
        return out + ([DropPlace("gone")] if "gone" in state.places else [])
    def prompt(self, state, ctx): return ""


FLOW = Drops()
"""


def test_a_place_dropped_in_the_same_round_is_not_in_a_new_jail(
    ws: Path, tmp_path: Path, state_home: Path
) -> None:
    # bubblewrap mounts over every place a jail hides: one removed as the jail is set up made
    # the measurement fail ("exited with code 1", nothing printed), now and then.
    flow = tmp_path / "drops.py"
    flow.write_text(DROPPING_FLOW)
    clock = FakeClock()
    ex = ScriptedExecutor(clock, lambda job: ok(), measure=lambda job: {"value": 1.0})
    end = run_engine(str(flow), ws, executor=ex, clock=clock, home=state_home)
    assert end.status == "finished", end.message
    [job] = ex.measured
    assert job.jail is not None
    gone = next(state_home.glob("runs/*/gone"))
    assert not any(h.is_relative_to(gone) for h in job.jail.hidden)
