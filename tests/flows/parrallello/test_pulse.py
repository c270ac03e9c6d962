"""parrallello's 30-minute pulse of a running block: on the decider's clock (`decide(now)`),
one line per front every 30 minutes, "no anomaly" or the anomaly."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

from flamechase import events as ev
from flamechase.engine.executor import TurnJob
from flamechase.flow import FinishRun, StartTurn, WaitUntil
from flamechase.flows.parrallello import FLOW
from flamechase.flows.parrallello.pulse import PULSE, Pulse
from flamechase.testing import FakeClock, FakeTurn, ScriptedExecutor, run_engine, run_for_real
from tests.flows.parrallello.decider import Driver, Script, front, plan
from tests.flows.parrallello.scripted import repo


class Timed(Driver):
    """The stand-in runtime on a clock: each agent turn takes `minutes`, and `decide` is
    asked at the clock's time (as the engine asks it), woken by its `WaitUntil`."""

    def __init__(self, minutes: float, *args: Any, **kw: Any) -> None:
        self.minutes = minutes
        super().__init__(*args, **kw)

    def answer(self, c: Any) -> ev.Event:
        if isinstance(c, StartTurn):
            self.clock += timedelta(minutes=self.minutes)
        return super().answer(c)

    def step(self) -> bool:
        wanted = list(FLOW.decide(self.state, self.clock.timestamp()))
        acted = False
        for c in wanted:
            if isinstance(c, FinishRun):
                self.finished = c
                return False
            if not isinstance(c, WaitUntil):
                self.feed(self.answer(c))
                acted = True
        return acted


def failing(**kw: Any) -> Script:
    verdict = {"findings": [], "approve": False, "summary": "the gate fails"}
    return Script(gate=lambda f, r: {"T.a": False}, verdict=lambda f, r: verdict, cost=0.5, **kw)


def test_a_running_block_says_a_pulse_every_30_minutes_of_it() -> None:
    # One builder and one critic turn of 10 minutes a round: 3 rounds, an hour of block.
    d = Timed(10, plan(front(), blocks=1, rounds_per_block=3), failing()).run()
    pulses = d.of(Pulse)
    assert [(p.number, p.block) for p in pulses] == [(1, 1), (2, 1)]
    assert all(p.minutes >= 30 * p.number for p in pulses)
    assert pulses[0].describe().startswith("pulse: front P1, block 1 round 2, 3")
    assert pulses[0].describe().endswith("turn(s) · no anomaly")
    assert pulses[0].spend["turns"] >= 2


def test_a_pulse_names_the_anomaly_since_the_last_one() -> None:
    # The critic approves while the gate fails: the runtime flags it (and does not approve).
    script = Script(gate=lambda f, r: {"T.a": False}, cost=0.5)
    d = Timed(10, plan(front(), blocks=1, rounds_per_block=3), script).run()
    first, *_ = d.of(Pulse)
    assert first.anomaly is not None and first.anomaly.startswith("critic-rule-mismatch: ")
    assert "· anomaly critic-rule-mismatch" in first.describe()
    assert d.state.anomalies[0]["front"] == "P1"


def test_a_short_block_says_no_pulse_and_waits_for_the_next_one() -> None:
    d = Timed(1, plan(front(), blocks=1, rounds_per_block=1), failing()).run()
    assert not d.of(Pulse)
    assert PULSE == 1800.0


def test_the_pulse_on_the_engines_fake_clock(tmp_path: Path) -> None:
    # The real engine, store, places and gate; only the agents and time are scripted: each
    # turn takes 10 minutes of a clock that jumps, so an hour's block runs in seconds.
    ws = repo(tmp_path, {"P": {"target": 99}}, blocks=1, rounds_per_block=3)
    clock = FakeClock()

    def turn(job: TurnJob) -> FakeTurn:
        if job.request.role == "critic":
            report = {"findings": [], "approve": False, "summary": "the gate fails"}
        else:
            ids = re.findall(r'"id": "([^"]+)"', job.request.prompt)
            tickets = [{"id": t, "status": "claimed_fixed"} for t in dict.fromkeys(ids)]
            report = {"tickets": tickets, "handoff": "tried"}
        return FakeTurn(report=report, duration=600, cost=0.25)

    executor = ScriptedExecutor(clock, turn, measure=run_for_real)
    settings = {
        "plan": str(ws / "PLAN.yaml"),
        "prep": "false",
        "checkpoint": "off",
        "budget.turns": "40",
    }
    run = run_engine("parrallello", ws, executor=executor, clock=clock, settings=settings)
    assert run.status == "failed", run.message  # the gate never passes
    pulses = run.record().of(Pulse)
    assert [p.number for p in pulses] == [1, 2]
    assert pulses[0].describe().startswith("pulse: front P, block 1 round 2, 3")
    assert pulses[0].describe().endswith("· no anomaly")
