"""The flow's code run where the engine can still answer (engine/flowcode.py): its exceptions
and exits become one-line errors with its own traceback, and a call that never returns is
abandoned once the run must stop (a signal, budget.duration)."""

from __future__ import annotations

import asyncio
import re
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from flamechase.engine.flowcode import FlowCode, hear_signals
from flamechase.errors import FlowCodeError
from flamechase.flow import Command, Event, Flow, FlowParams, RunSetup, TurnContext
from flamechase.testing import FakeClock, FakeTurn, ScriptedExecutor, run_engine
from tests.engine.mistakes import REPORT, flow_file, hanging


class S(BaseModel):
    n: int = 0


class Tiny(Flow[S]):
    name = "tiny"
    summary = "a flow for FlowCode"
    State = S

    def roles(self, params: FlowParams) -> list[str]:
        return ["a"]

    def start(self, setup: RunSetup) -> S:
        return S()

    def evolve(self, state: S, event: Event) -> S:
        return state

    def decide(self, state: S, now: float) -> Sequence[Command]:
        return []

    def prompt(self, state: S, ctx: TurnContext) -> str:
        return ""


def _deep(n: int) -> int:
    return 1 // n


def test_an_exception_keeps_the_flows_own_traceback() -> None:
    code = FlowCode(Tiny())
    with pytest.raises(FlowCodeError) as caught:
        code.call("decide()", _deep, 0)
    err = caught.value
    assert str(err) == (
        "flow tiny's decide() raised ZeroDivisionError: integer division or modulo by zero "
        "(a flow bug)"
    )
    assert "in _deep" in err.traceback and "engine/flowcode.py" not in err.traceback
    code.close()


@pytest.mark.parametrize(
    ("raised", "said"),
    [
        (SystemExit(3), "called sys.exit(3)"),
        (KeyboardInterrupt(), "raised KeyboardInterrupt"),
        (GeneratorExit(), "raised GeneratorExit"),
    ],
)
def test_an_exit_or_an_interrupt_from_the_flow_is_a_flow_error(
    raised: BaseException, said: str
) -> None:
    code = FlowCode(Tiny())

    def leave() -> None:
        raise raised

    with pytest.raises(FlowCodeError, match=re.escape(said)):
        code.call("evolve()", leave)
    code.close()


def test_a_signal_ends_a_call_that_never_returns_after_the_grace() -> None:
    code = FlowCode(Tiny())
    code.grace = 0.1
    forever = threading.Event()

    def stuck() -> None:
        forever.wait()

    threading.Timer(0.05, code.poke).start()  # as the engine's signal handler does
    with pytest.raises(FlowCodeError) as caught:
        code.call("decide()", stuck)
    err = caught.value
    assert err.status == "stopped" and code.abandoned
    assert "decide() did not return within 0.1s of a stop (signal)" in str(err)
    assert "in stuck" in err.traceback and "forever.wait()" in err.traceback
    forever.set()
    code.close()


def test_the_code_is_not_called_again_once_it_broke() -> None:
    code = FlowCode(Tiny())
    code.grace = 0.0
    code.deadline = lambda: 0.0  # budget.duration has run out
    release = threading.Event()
    with pytest.raises(FlowCodeError, match=re.escape("budget.duration running out")) as first:
        code.call("decide()", release.wait)
    assert first.value.status == "failed"
    calls: list[int] = []
    with pytest.raises(FlowCodeError, match="did not return"):
        code.call("evolve()", calls.append, 1)
    assert calls == []
    release.set()
    code.close()


def test_values_the_contract_forbids_are_flow_errors() -> None:
    class Careless(Tiny):
        def evolve(self, state: S, event: Event) -> S:
            return None  # type: ignore[return-value]

        def decide(self, state: S, now: float) -> Sequence[Command]:
            return "StartTurn"  # type: ignore[return-value]

    code = FlowCode(Careless())
    with pytest.raises(FlowCodeError, match=re.escape("decide() returned 'StartTurn', not a list")):
        code.decide(S(), 0.0)
    code = FlowCode(Careless())
    with pytest.raises(FlowCodeError, match="returned None, not a S"):
        code.evolve(S(), Event())


def test_a_generator_decide_runs_in_the_worker() -> None:
    seen: list[str] = []

    class Lazy(Tiny):
        def decide(self, state: S, now: float) -> Any:
            seen.append(threading.current_thread().name)
            yield from ()

    assert FlowCode(Lazy()).decide(S(), 0.0) == []
    assert seen == ["flow tiny"]


def test_budget_duration_ends_a_run_whose_decide_never_returns(tmp_path: Path) -> None:
    # The flow sleeps (it leaves the interpreter to others): this test's process goes on.
    m = hanging("time.sleep(10**6)")["decide_never_returns"]
    ws = tmp_path / "ws"
    ws.mkdir()
    clock = FakeClock()
    executor = ScriptedExecutor(clock, lambda job: FakeTurn(report=REPORT))
    end = run_engine(
        str(flow_file(tmp_path, m)),
        ws,
        executor=executor,
        clock=clock,
        settings={"budget.duration": "1s", "kill_grace": "0.1"},
    )
    assert (end.status, end.exit_code) == ("failed", 1)
    assert "decide() did not return within 0.1s of budget.duration running out" in end.message
    assert "time.sleep(10**6)" in end.traceback and end.abandoned


def test_a_signal_the_kernel_hands_another_thread_still_ends_the_wait() -> None:
    # The kernel gives a process's signal to any thread that does not block it; before, one
    # given to a thread other than the engine's left the wait on a looping decide() deaf.
    code = FlowCode(Tiny())
    code.grace = 0.1
    code.deadline = lambda: 60.0  # only so that a deaf wait ends at all
    stops: list[int] = []
    loop = asyncio.new_event_loop()
    restore = hear_signals(code, loop, lambda: stops.append(1))
    forever = threading.Event()
    other = threading.Thread(target=forever.wait, daemon=True)
    other.start()
    try:
        assert other.ident is not None
        threading.Timer(0.05, signal.pthread_kill, (other.ident, signal.SIGTERM)).start()
        with pytest.raises(FlowCodeError, match=re.escape("within 0.1s of a stop (signal)")):
            code.call("decide()", forever.wait)
        loop.run_until_complete(asyncio.sleep(0))
        assert stops == [1]  # and the loop was told to stop
    finally:
        restore()
        loop.close()
        forever.set()
