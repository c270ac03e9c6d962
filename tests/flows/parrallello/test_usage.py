"""parrallello's account-usage thresholds: the probe's JSON judged, and what the decider does
with it (no new block, a pause at the end of the round), through the stand-in runtime."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from flamechase import events as ev
from flamechase.flow import FinishRun, Run, StartTurn, WaitUntil
from flamechase.flows.parrallello import FLOW, progress
from flamechase.flows.parrallello import events as fev
from flamechase.flows.parrallello.runtime import parse_key
from flamechase.flows.parrallello.usage import BlockWeek, UsageRead, UsageWait, judge, parse
from tests.flows.parrallello.decider import Driver, Script, front, plan


def test_the_last_json_line_gives_the_shares() -> None:
    out = 'checking…\n{"weekly": 0.5}\n{"weekly": 0.93, "window_5h": 0.4, "other": 1}\n'
    assert parse(out) == {"weekly": 0.93, "window_5h": 0.4}


@pytest.mark.parametrize(
    "out",
    ["nothing here", '{"weekly": "high"}', '{"monthly": 0.2}', "[0.9]", '{"weekly": true}'],
)
def test_a_probe_without_usable_json_is_refused_in_words(out: str) -> None:
    with pytest.raises(ValueError, match=r"JSON|number|none of"):
        parse(out)


def test_each_threshold_as_the_seed_gives_it() -> None:
    assert judge({"weekly": 0.91, "window_5h": 0.94, "extra_credit": 0.89}) == (None, None)
    stop, pause = judge({"weekly": 0.92})
    assert stop == "weekly usage at 92% (≥ 92%): no new block starts" and pause is None
    stop, _ = judge({"weekly": 0.92}, {"weekly": "claude at a critic turn"})
    assert stop == "weekly usage at 92% (≥ 92%, from claude at a critic turn): no new block starts"
    stop, _ = judge({"window_5h": 0.95})
    assert stop is not None and stop.startswith("5 h window at 95%")
    _, pause = judge({"extra_credit": 0.9})
    assert pause == (
        "extra credit at 90% of its ceiling (≥ 90%): the run pauses at the end of the round"
    )


class Probed(Driver):
    """The stand-in runtime, with the usage probe answering from `shares(n)` (n = 1, 2, …)."""

    def __init__(self, shares: Callable[[int], Any], *args: Any, **kw: Any) -> None:
        self.shares = shares
        self.probes: list[Run] = []
        super().__init__(*args, usage_probe="./usage.sh", **kw)

    def receipt(self, c: Run) -> dict[str, Any]:
        key = parse_key(c.key)
        if key is not None and key.what == "usage":
            self.probes.append(c)
            answer = self.shares(key.round)
            if isinstance(answer, str):
                return {"output": "", "exit_code": 2, "error": answer}
            return {"output": json.dumps(answer) + "\n", "exit_code": 0, "error": None}
        return super().receipt(c)


def failing() -> Script:
    return Script(gate=lambda f, r: {"T.a": False})


def test_a_probe_runs_before_the_first_front_and_after_each_round() -> None:
    d = Probed(lambda n: {"weekly": 0.1}, plan(front(), blocks=2, rounds_per_block=2), failing())
    d.run()
    rounds = len(d.of(fev.RoundStarted))
    assert rounds == 4 and len(d.probes) == rounds + 1
    assert d.probes[0].argv == ("/bin/sh", "-c", "./usage.sh") and d.probes[0].frozen == {}
    first_probe = next(i for i, e in enumerate(d.events) if isinstance(e, UsageRead))
    first_round = next(i for i, e in enumerate(d.events) if isinstance(e, fev.RoundStarted))
    assert first_probe < first_round
    assert d.finished is not None and d.finished.status == "failed"  # not approved: the gate


class Clocked(Probed):
    """The stand-in runtime on a clock `decide` is asked at: when the flow waits for a time
    only (`WaitUntil`), the clock jumps there, as the engine's fake clock does."""

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
        waits = [c.at for c in wanted if isinstance(c, WaitUntil)]
        if not acted and waits:
            self.clock = datetime.fromtimestamp(min(waits), UTC)
            return True
        return acted


def probed_at(d: Driver) -> list[datetime]:
    return [datetime.fromisoformat(e.at.replace("Z", "+00:00")) for e in d.of(UsageRead) if e.at]


def test_weekly_usage_over_92_lets_the_block_finish_then_waits_for_the_reset() -> None:
    # Probes 2-4 read over 92 % (after rounds 1 and 2, then 2 h later); the 5th reads below.
    readings = {2: 0.95, 3: 0.95, 4: 0.95}
    d = Clocked(
        lambda n: {"weekly": readings.get(n, 0.5)},
        plan(front(), blocks=2, rounds_per_block=2),
        failing(),
    ).run()
    (wait,) = d.of(UsageWait)
    assert wait.describe() == (
        "front P1 waits after block 1: weekly usage at 95% (≥ 92%, from the probe): no new "
        "block starts; the probe is asked again every 2 h; the next block starts once it reads "
        "below"
    )
    started = d.of(fev.RoundStarted)
    at = {e.round: d.events.index(e) for e in started}
    said = d.events.index(wait)
    assert [e.round for e in started] == [1, 2, 3, 4]  # the running block ends; then block 2
    assert at[2] < said < at[3]
    # While it waits, the probe is asked every 2 hours, and block 2 starts on the reading below.
    times = probed_at(d)
    assert times[3] - times[2] >= timedelta(hours=2) and times[4] - times[3] >= timedelta(hours=2)
    lifted = d.of(UsageRead)[4]
    assert lifted.describe() == (
        "usage weekly 50%: below the weekly and 5 h thresholds again: waiting fronts start "
        "their next block"
    )
    assert d.events.index(lifted) < at[3]
    (end,) = d.of(fev.FrontEnded)
    assert end.status == "not_approved"  # the gate never passed: both blocks ran


def test_while_it_waits_status_says_why() -> None:
    d = Probed(
        lambda n: {"weekly": 0.95 if n >= 2 else 0.5},
        plan(front(), blocks=3, rounds_per_block=2),
        failing(),
    ).run()
    assert d.finished is None and not d.of(fev.FrontEnded)  # waiting, not ended
    assert len(d.of(fev.RoundStarted)) == 2  # the block that was running ends; no new one
    said = [e.describe() for e in d.of(UsageRead)]
    assert (
        "usage weekly 95%: weekly usage at 95% (≥ 92%, from the probe): no new block starts" in said
    )
    line = progress.describe(d.state)["display"][-1]
    assert line == "usage: weekly usage at 95% (≥ 92%, from the probe): no new block starts"


def test_a_waiting_front_opens_only_after_the_5h_window_falls_below_95() -> None:
    readings = {2: 0.97, 3: 0.97}  # after P1's round, and 2 h later; then below
    d = Clocked(
        lambda n: {"window_5h": readings.get(n, 0.2)},
        plan(front("P1"), front("P2", wave=2, depends_on=["P1"]), blocks=1, rounds_per_block=1),
        Script(gate=lambda f, r: {"T.a": True}),
    ).run()
    ends = {e.front: e for e in d.of(fev.FrontEnded)}
    assert ends["P1"].status == "approved" and ends["P2"].status == "approved"
    below = next(e for e in d.of(UsageRead) if e.lifted)
    p2 = next(e for e in d.of(fev.RoundStarted) if e.front == "P2")
    assert d.events.index(below) < d.events.index(p2)
    assert len(probed_at(d)) >= 4 and probed_at(d)[2] - probed_at(d)[1] >= timedelta(hours=2)
    assert d.finished is not None and d.finished.status == "finished"


def test_without_a_probe_the_weekly_threshold_holds_the_run_and_the_same_command_resumes() -> None:
    d = Reporting(
        lambda c: {"weekly": 0.96} if c.role == "critic" and c.number == 1 else {},
        lambda n: {},
        plan(front(), blocks=2, rounds_per_block=1),
        Script(gate=lambda f, r: {"T.a": r >= 2}),
    )
    d.state = d.state.replace(knobs=d.state.knobs.replace(usage_probe=None))
    d.run()
    assert d.finished is not None and d.finished.status == "held" and d.finished.resumes
    assert d.finished.reason.startswith(
        "weekly usage at 96% (≥ 92%, from claude at a critic turn): no new block starts; "
        "front P1 waits; to go on, run the same command again"
    )
    (wait,) = d.of(UsageWait)
    assert wait.describe().endswith(
        "no probe reads that share (-p usage_probe): the run is held once nothing runs; run "
        "the same command after the reset"
    )
    assert not d.of(fev.FrontEnded)
    resume(d)
    assert [e.round for e in d.of(fev.RoundStarted)] == [1, 2]  # block 2, not block 1 again
    (end,) = d.of(fev.FrontEnded)
    assert end.status == "approved"


def test_extra_credit_over_90_holds_the_run_at_the_end_of_the_round() -> None:
    d = Probed(
        lambda n: {"extra_credit": 0.92 if n >= 2 else 0.1},
        plan(front(), blocks=3, rounds_per_block=3),
        failing(),
    )
    d.run()
    # Read at the end of round 1, before round 2 would start: the run pauses there.
    assert len(d.of(fev.RoundStarted)) == 1
    assert not d.of(fev.FrontEnded)  # paused, not ended: the front keeps its place
    assert d.finished is not None and d.finished.status == "held" and d.finished.resumes
    assert d.finished.reason.startswith(
        "extra credit at 92% of its ceiling (≥ 90%, from the probe)"
    )
    assert "front P1 waits; to go on, run the same command again once it is below" in (
        d.finished.reason
    )


def resume(d: Driver) -> Driver:
    """The same command again: the engine journals a resume and asks `decide` again."""
    d.finished = None
    d.feed(ev.RunResumed(session=2, budget={"turns": 1000}))
    return d.run()


def test_a_held_run_resumes_with_its_next_round_once_the_probe_reads_below() -> None:
    readings = {2: 0.95}  # after round 1: over; later (and on the resume): below
    d = Probed(
        lambda n: {"extra_credit": readings.get(n, 0.1)},
        plan(front(), blocks=1, rounds_per_block=3),
        Script(gate=lambda f, r: {"T.a": r >= 3}),
    )
    d.run()
    assert d.finished is not None and d.finished.status == "held"
    assert [e.round for e in d.of(fev.RoundStarted)] == [1]
    resume(d)
    # The probe is asked before anything starts; the front goes on with round 2, not round 1.
    first = next(i for i, e in enumerate(d.events) if isinstance(e, ev.RunResumed))
    after = d.events[first:]
    read = next(e for e in after if isinstance(e, UsageRead))
    assert after.index(read) < next(
        i for i, e in enumerate(after) if isinstance(e, fev.RoundStarted)
    )
    assert read.describe() == (
        "usage on the resume: the probe reads extra_credit 10%; "
        "the paused fronts go on with their next round"
    )
    assert [e.round for e in d.of(fev.RoundStarted)] == [1, 2, 3]
    (end,) = d.of(fev.FrontEnded)
    assert end.status == "approved"
    assert d.finished is not None and d.finished.status == "finished"


def test_a_resume_still_over_the_threshold_says_so_and_stays_held() -> None:
    d = Probed(
        lambda n: {"extra_credit": 0.1 if n == 1 else 0.93},
        plan(front(), blocks=1, rounds_per_block=3),
        failing(),
    )
    d.run()
    rounds = len(d.of(fev.RoundStarted))
    resume(d)
    assert len(d.of(fev.RoundStarted)) == rounds  # nothing started
    said = d.of(UsageRead)[-1].describe()
    assert said == (
        "usage on the resume: still held: extra credit at 93% of its ceiling (≥ 90%, from the "
        "probe): the run pauses at the end of the round"
    )
    assert d.finished is not None and d.finished.status == "held" and d.finished.resumes
    assert progress.describe(d.state)["display"][-1].startswith("usage: extra credit at 93%")


class Reporting(Probed):
    """The stand-in runtime whose turns end with the shares their CLI reported."""

    def __init__(self, reports: Callable[[StartTurn], dict[str, float]], *a: Any, **kw: Any):
        self.reports = reports
        super().__init__(*a, **kw)

    def answer(self, c: Any) -> ev.Event:
        event = super().answer(c)
        if isinstance(c, StartTurn) and isinstance(event, ev.TurnEnded):
            shares = self.reports(c)
            if shares:
                return dataclasses.replace(event, usage_shares=shares, usage_source="claude")
        return event


def test_what_a_cli_reports_is_judged_as_the_probe_is_and_shown_with_its_source() -> None:
    d = Reporting(
        lambda c: {"weekly": 0.96, "window_5h": 0.3} if c.role == "critic" else {},
        lambda n: {"window_5h": 0.2},
        plan(front(), blocks=3, rounds_per_block=1),
        failing(),
    )
    d.run()
    # The probe reads no weekly share, so asking it again cannot lift the stop: held.
    assert not d.of(fev.FrontEnded)
    assert d.finished is not None and d.finished.status == "held"
    assert d.finished.reason.startswith(
        "weekly usage at 96% (≥ 92%, from claude at a critic turn): no new block starts"
    )
    (crossed,) = [e for e in d.of(UsageRead) if e.source != "the probe"]
    assert crossed.describe() == (
        "usage weekly 96%, window_5h 30% (from claude at a critic turn): "
        "weekly usage at 96% (≥ 92%, from claude at a critic turn): no new block starts"
    )
    # The freshest word on each share: the probe's after the critic's turn for the 5 h window.
    assert d.state.usage.sources == {"window_5h": "the probe", "weekly": "claude at a critic turn"}


def test_without_a_probe_a_cli_report_holds_the_run_and_a_resume_goes_on() -> None:
    d = Reporting(
        lambda c: {"extra_credit": 0.91} if c.role == "critic" and c.number == 1 else {},
        lambda n: {},
        plan(front(), blocks=1, rounds_per_block=2),
        Script(gate=lambda f, r: {"T.a": r >= 2}),
    )
    d.state = d.state.replace(knobs=d.state.knobs.replace(usage_probe=None))
    d.run()
    assert d.finished is not None and d.finished.status == "held"
    assert "from claude at a critic turn" in d.finished.reason
    resume(d)
    assert not d.probes
    assert d.of(UsageRead)[-1].describe() == (
        "usage on the resume: no probe to ask again (-p usage_probe): going on as asked; "
        "the paused fronts go on with their next round"
    )
    assert d.finished is not None and d.finished.status == "finished"


def test_a_failing_probe_is_said_and_stops_nothing() -> None:
    d = Probed(
        lambda n: "exit code 127",
        plan(front(), blocks=1, rounds_per_block=1),
        Script(gate=lambda f, r: {"T.a": True}),
    )
    d.run()
    (read, *_) = d.of(UsageRead)
    assert read.describe() == "usage probe told nothing: exit code 127"
    assert d.finished is not None and d.finished.status == "finished"
    assert progress.describe(d.state)["display"][-1] == ("usage: the probe failed (exit code 127)")


def test_without_a_probe_nothing_is_asked() -> None:
    d = Driver(plan(front(), blocks=1, rounds_per_block=1), Script()).run()
    assert not d.of(UsageRead)
    assert progress.describe(d.state)["usage"] is None


def test_a_block_that_spent_over_9_percent_of_the_week_paces_the_next_one() -> None:
    # The probe reads the week at 10 % before block 1, 21 % after it (11 % spent: paced), and
    # 24 % after block 2 (3 % spent: not over, but said).
    readings = {1: 0.10, 2: 0.21, 3: 0.24}
    d = Probed(
        lambda n: {"weekly": readings.get(n, 0.24)},
        plan(front(), blocks=3, rounds_per_block=1),
        failing(),
    ).run()
    said = [e.describe() for e in d.of(BlockWeek)]
    assert said[0] == (
        "front P1's block 1 spent 11.0% of the week (> 9%): the next block goes with at most "
        "4 tickets a round and a ceiling of 40 calls"
    )
    assert said[1] == "front P1's block 2 spent 3.0% of the week"
    rounds = d.of(fev.RoundStarted)
    assert [(r.paced, r.ceiling) for r in rounds] == [(False, 60), (True, 40), (False, 60)]


def test_without_a_probe_the_week_a_cli_reported_paces_the_next_block() -> None:
    d = Reporting(
        lambda c: {"weekly": 0.30 if c.number >= 2 else 0.15} if c.role == "builder" else {},
        lambda n: {},
        plan(front(), blocks=3, rounds_per_block=1),
        failing(),
    )
    d.state = d.state.replace(knobs=d.state.knobs.replace(usage_probe=None))
    d.run()
    # Block 1 started before any reading; block 2 started at 15 % and its builder read 30 %.
    ends = d.of(fev.BlockEnded)
    assert ends[0].week is None and ends[1].week == 0.15 and ends[1].paced_next
    assert "15.0% of the week; next block paced" in ends[1].describe()
    assert [r.paced for r in d.of(fev.RoundStarted)] == [False, False, True]


def test_a_block_that_ends_into_the_weekly_wait_still_says_its_next_block_is_paced() -> None:
    # Block 2 starts at 80 % of the week and its builder reads 96 %: 16 % spent (paced) and
    # over 92 % (the front waits for the reset). The wait only delays block 3, which is paced.
    d = Reporting(
        lambda c: {"weekly": 0.96 if c.number >= 2 else 0.80} if c.role == "builder" else {},
        lambda n: {},
        plan(front(), blocks=3, rounds_per_block=1),
        failing(),
    )
    d.state = d.state.replace(knobs=d.state.knobs.replace(usage_probe=None))
    d.run()
    assert d.finished is not None and d.finished.status == "held"
    ends = d.of(fev.BlockEnded)
    assert [e.block for e in ends] == [1, 2] and ends[1].week == 0.16
    assert ends[1].paced_next and "next block paced" in ends[1].describe()
    resume(d)
    rounds = d.of(fev.RoundStarted)
    assert [(r.round, r.paced) for r in rounds] == [(1, False), (2, False), (3, True)]


def test_a_block_that_ends_into_the_extra_credit_pause_still_says_its_next_block_is_paced() -> None:
    # The critic of block 1 reports the extra credit at 91 %: the run pauses after the block,
    # which spent over its share of the budget; the resume goes on with block 2, paced.
    d = Reporting(
        lambda c: {"extra_credit": 0.91} if c.role == "critic" and c.number == 1 else {},
        lambda n: {},
        plan(front(), blocks=2, rounds_per_block=1),
        Script(gate=lambda f, r: {"T.a": False}, cost=0.2),
        budget={"cost": 5.0},
        pacing_share=0.01,
    )
    d.state = d.state.replace(knobs=d.state.knobs.replace(usage_probe=None))
    d.run()
    assert d.finished is not None and d.finished.status == "held"
    (end,) = d.of(fev.BlockEnded)
    assert end.share > 0.01 and end.paced_next
    resume(d)
    assert [r.paced for r in d.of(fev.RoundStarted)] == [False, True]
