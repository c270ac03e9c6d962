"""parrallello's 30-minute pulse of a running block: on the decider's clock (`decide(now)`),
one line per front every 30 minutes, "no anomaly" or the anomaly."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from flamechase import events as ev
from flamechase.engine.executor import TurnJob
from flamechase.flow import FinishRun, Run, StartTurn, WaitUntil
from flamechase.flows.parrallello import FLOW
from flamechase.flows.parrallello import events as fev
from flamechase.flows.parrallello.pulse import PULSE, Pulse
from flamechase.flows.parrallello.runtime import parse_key
from flamechase.flows.parrallello.usage import UsageRead, UsageWait
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


def test_a_front_waits_for_the_weekly_reset_on_the_engines_fake_clock(tmp_path: Path) -> None:
    # The real engine, store, places, gate and probe; time jumps. The probe (a real command;
    # unjailed, to keep its count outside the throw-away copy it runs in) reads the weekly share
    # over 92 % on its 2nd and 3rd asking (after round 1, then 2 h later), then below.
    ws = repo(tmp_path, {"P": {"target": 3}}, blocks=2, rounds_per_block=1)
    count = tmp_path / "probed"
    probe = tmp_path / "usage.sh"
    probe.write_text(
        f"n=$(( $(cat {count} 2>/dev/null || echo 0) + 1 )); echo $n > {count}\n"
        "if [ $n -ge 2 ] && [ $n -le 3 ]; then echo '{\"weekly\": 0.95}'; "
        "else echo '{\"weekly\": 0.5}'; fi\n"
    )
    clock = FakeClock()

    def turn(job: TurnJob) -> FakeTurn:
        if job.request.role == "critic":
            return FakeTurn(report={"findings": [], "approve": True, "summary": "ok"}, duration=60)
        path = job.request.workspace / "src/P/core.py"
        value = int(path.read_text().split("=")[1]) + 1
        path.write_text(f"VALUE = {value}\n")
        ids = re.findall(r'"id": "([^"]+)"', job.request.prompt)
        tickets = [{"id": t, "status": "claimed_fixed"} for t in dict.fromkeys(ids)]
        return FakeTurn(report={"tickets": tickets, "handoff": "raised"}, duration=60)

    executor = ScriptedExecutor(clock, turn, measure=run_for_real)
    settings = {
        "plan": str(ws / "PLAN.yaml"),
        "prep": "false",
        "checkpoint": "off",
        "sandbox": "off",
        "usage_probe": f"sh {probe}",
        "budget.turns": "40",
    }
    run = run_engine("parrallello", ws, executor=executor, clock=clock, settings=settings)
    assert run.status == "finished", run.message  # block 2 ran after the reset: approved
    record = run.record()
    (wait,) = record.of(UsageWait)
    assert wait.describe().startswith("front P waits after block 1: weekly usage at 95%")
    reads = record.of(UsageRead)
    # Before the first front, after round 1, 2 h later, 2 h later again, after round 2.
    assert [r.shares["weekly"] for r in reads] == [0.5, 0.95, 0.95, 0.5, 0.5]
    stamps = [datetime.fromisoformat(r.at.replace("Z", "+00:00")) for r in reads]
    assert stamps[2] - stamps[1] >= timedelta(hours=2) <= stamps[3] - stamps[2]
    assert reads[3].lifted and not record.of(fev.FrontEnded)[0].reason.startswith("weekly")
    rounds = [(e.round, e.seq) for e in record.of(fev.RoundStarted)]
    assert [r for r, _ in rounds] == [1, 2] and rounds[1][1] > reads[3].seq
    # Block 2's time starts when it does, not at the wait: no pulse for the hours it waited.
    assert not record.of(Pulse)


def test_a_late_wake_up_says_one_pulse_not_every_one_it_missed() -> None:
    # Turns of 70 minutes: the first wake-up is 70 min into the block, past two pulses' times.
    d = Timed(70, plan(front(), blocks=1, rounds_per_block=2), failing()).run()
    pulses = d.of(Pulse)
    assert pulses and len({p.at for p in pulses}) == len(pulses)
    assert [p.number for p in pulses] == sorted({p.number for p in pulses})
    assert pulses[0].number == 2 and pulses[0].minutes >= 60


class TimedProbed(Timed):
    """Timed, with a usage probe that reads the weekly share at 41 %."""

    def receipt(self, c: Run) -> dict[str, Any]:
        key = parse_key(c.key)
        if key is not None and key.what == "usage":
            return {"output": '{"weekly": 0.41}\n', "exit_code": 0, "error": None}
        return super().receipt(c)


def test_a_pulse_says_the_share_of_the_week_when_it_is_known() -> None:
    d = TimedProbed(
        10, plan(front(), blocks=1, rounds_per_block=3), failing(), usage_probe="./u.sh"
    ).run()
    first, *_ = d.of(Pulse)
    assert first.week == 0.41
    assert "turn(s), 41% of the week · no anomaly" in first.describe()
