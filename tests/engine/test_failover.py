"""Failover across a role's alternatives: the pure choice (engine/failover), then the real
engine with scripted turns on a fake clock: a usage window on the first agent moves the role to
the second, it comes back after the reset, and the spend of both is counted."""

from __future__ import annotations

from pathlib import Path

from flamechase import events as ev
from flamechase.engine import failover as fo
from flamechase.engine.executor import TurnJob
from flamechase.testing import FakeClock, FakeTurn, ScriptedExecutor, read_run, run_engine

A, B, C = "claude@work/opus", "claude@home/opus", "codex/gpt-5:high"


# ---- the pure choice ---------------------------------------------------------------------


def test_the_first_open_alternative_is_chosen() -> None:
    closed = fo.closed_after({}, fo.Ending(A, "lane_paused", 100.0, until=500.0))
    choice = fo.choose([A, B, C], closed, 200.0)
    assert (choice.agent, choice.index) == (B, 1)
    assert choice.reason == f"{A}: usage window"


def test_the_first_comes_back_once_its_window_reset() -> None:
    closed = fo.closed_after({}, fo.Ending(A, "lane_paused", 100.0, until=500.0))
    choice = fo.choose([A, B, C], closed, 500.0)
    assert (choice.agent, choice.index, choice.passed) == (A, 0, ())


def test_with_every_alternative_in_a_window_the_lane_waits_for_the_first_to_reopen() -> None:
    closed = fo.fold(
        [
            fo.Ending(A, "lane_paused", 100.0, until=900.0),
            fo.Ending(B, "lane_paused", 110.0, until=400.0),
        ]
    )
    choice = fo.choose([A, B], closed, 200.0)
    assert choice.agent is None and choice.until == 400.0


def test_a_cli_that_did_not_start_is_passed_over_for_a_while() -> None:
    failed = fo.Ending(A, "turn_failed", 100.0, error="could not start claude: [Errno 2] ...")
    closed = fo.closed_after({}, failed)
    assert fo.choose([A, B], closed, 101.0).agent == B
    assert fo.choose([A, B], closed, 100.0 + fo.START_RETRY).agent == A
    assert fo.choose([A, B], closed, 101.0).reason == f"{A}: did not start"


def test_an_ordinary_failure_or_a_cut_keeps_the_agent_as_it_was() -> None:
    open_ = fo.closed_after({}, fo.Ending(A, "turn_failed", 1.0, error="no report was written"))
    assert open_ == {}
    closed = fo.closed_after({}, fo.Ending(A, "lane_paused", 1.0, until=99.0))
    assert fo.closed_after(closed, fo.Ending(A, "turn_interrupted", 2.0)) == closed
    # A valid turn on it says its window is open again, whatever the reset said.
    assert fo.closed_after(closed, fo.Ending(A, "turn_valid", 3.0)) == {}


def test_a_window_without_a_reset_is_looked_at_again_after_an_hour() -> None:
    closed = fo.closed_after({}, fo.Ending(A, "lane_paused", 100.0))
    assert closed[A].until == 100.0 + fo.UNSAID_RESET


def test_stored_turn_ends_are_paired_with_the_agent_their_start_named() -> None:
    rows = [
        {
            "kind": "turn_started",
            "lane": "l",
            "actor": "r",
            "payload": {"turn": 1, "attempt": 1, "backend": A},
        },
        {
            "kind": "lane_paused",
            "lane": "l",
            "actor": "r",
            "at": "2027-01-15T08:00:00.000Z",
            "payload": {"turn": 1, "attempt": 1, "until": "2027-01-15T09:00:00.000Z"},
        },
    ]
    [end] = fo.ends_in(rows)
    assert (end.agent, end.kind, end.until - end.at) == (A, "lane_paused", 3600.0)


def test_the_book_says_when_a_role_moved() -> None:
    book = fo.Book({"r": [A, B]})
    assert book.started("r", A) is None  # its first: no move
    assert book.started("r", B) == A
    assert book.started("r", A) == B
    assert book.choice("other", 0.0) is None  # a role without alternatives


# ---- the engine --------------------------------------------------------------------------


def test_a_usage_window_moves_the_role_to_its_next_agent_and_back_after_the_reset(
    tmp_path: Path, state_home: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("sample\n")
    clock = FakeClock()
    reset = clock.time() + 2 * 3600  # A's window: two hours from the start

    def script(job: TurnJob) -> FakeTurn:
        if job.agent == "sim/steady" and clock.time() < reset:
            return FakeTurn(limited_for=reset - clock.time(), duration=5, cost=0.01)
        return FakeTurn(
            report={"status": "progress", "summary": f"on {job.agent}"}, duration=1800, cost=0.5
        )

    ex = ScriptedExecutor(clock, script)
    end = run_engine(
        "flame_chase",
        ws,
        executor=ex,
        clock=clock,
        agents=[("first_chaser", "sim/steady|sim/flaky"), ("second_chaser", "sim/steady")],
        settings={"budget.turns": "8"},
        home=state_home,
    )
    ran = [(j.request.role, j.request.turn, j.agent) for j in ex.jobs]
    # Turn 1: the first chaser's first agent is in a window, its retake runs on the second at
    # once (the lane does not wait); the second chaser has no alternative and waits.
    assert ran[:2] == [("first_chaser", 1, "sim/steady"), ("first_chaser", 1, "sim/flaky")]
    # After the reset, the first chaser is back on its first agent.
    later = [agent for role, turn, agent in ran if role == "first_chaser" and turn > 1]
    assert later and set(later) == {"sim/steady"}
    record = read_run(end.run_dir)
    moves = [(e.previous, e.to, e.index) for e in record.of(ev.AgentSwitched)]
    assert moves == [("sim/steady", "sim/flaky", 1), ("sim/flaky", "sim/steady", 0)]
    [paused, *_] = record.of(ev.LanePaused)
    assert paused.agent == "sim/steady" and paused.next_agent == "sim/flaky"
    # The limited attempt on A and the turn on B both count toward the spend.
    spent = sum(t.cost_usd for t in record.turns)
    assert end.status == "finished" and round(spent, 6) == round(
        sum(0.01 if t.status == "limited" else 0.5 for t in record.turns), 6
    )
    assert {t.status for t in record.turns} >= {"limited", "valid"}


def test_a_resumed_run_remembers_which_agents_are_in_a_window(
    tmp_path: Path, state_home: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("sample\n")
    first = FakeClock()
    reset = first.time() + 5 * 3600
    agents = [("first_chaser", "sim/steady|sim/flaky"), ("second_chaser", "sim/silent")]

    def script_on(clock: FakeClock) -> ScriptedExecutor:
        def script(job: TurnJob) -> FakeTurn:
            if job.agent == "sim/steady" and clock.time() < reset:
                return FakeTurn(limited_for=reset - clock.time(), duration=5)
            return FakeTurn(report={"status": "progress", "summary": "x"}, duration=600)

        return ScriptedExecutor(clock, script)

    one = script_on(first)
    run_engine("flame_chase", ws, executor=one, clock=first, agents=agents,
               settings={"budget.turns": "1"}, home=state_home)  # fmt: skip
    assert [j.agent for j in one.jobs] == ["sim/steady", "sim/flaky"]
    # Resumed an hour later, inside the window: the role stays on its second agent and does
    # not try its first again (the journal says it is closed until the reset).
    later = FakeClock(first.time() + 3600)
    two = script_on(later)
    end = run_engine("flame_chase", ws, executor=two, clock=later, agents=agents,
                     settings={"budget.turns": "3"}, home=state_home)  # fmt: skip
    assert end.status == "finished"
    assert [(j.request.role, j.agent) for j in two.jobs] == [
        ("second_chaser", "sim/silent"),
        ("first_chaser", "sim/flaky"),
    ]


def test_a_cli_that_does_not_start_hands_the_role_to_its_next_agent(
    tmp_path: Path, state_home: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("sample\n")
    clock = FakeClock()

    def script(job: TurnJob) -> FakeTurn:
        if job.agent == "sim/steady":
            return FakeTurn(error="could not start claude: [Errno 2] No such file", duration=0)
        return FakeTurn(report={"status": "progress", "summary": "x"}, duration=60)

    ex = ScriptedExecutor(clock, script)
    end = run_engine(
        "flame_chase",
        ws,
        executor=ex,
        clock=clock,
        agents=[("first_chaser", "sim/steady|sim/flaky"), ("second_chaser", "sim/silent")],
        settings={"budget.turns": "4"},
        home=state_home,
    )
    # The failed start is a failed turn (as without alternatives); the role's next turn, well
    # inside START_RETRY, runs on its second agent.
    assert [(j.request.role, j.agent) for j in ex.jobs] == [
        ("first_chaser", "sim/steady"),
        ("second_chaser", "sim/silent"),
        ("first_chaser", "sim/flaky"),
        ("second_chaser", "sim/silent"),
    ]
    [moved] = read_run(end.run_dir).of(ev.AgentSwitched)
    assert moved.reason == "sim/steady: did not start"
