"""parrallello's cost of a front in the seed's unit, the share of the account's week: each
block's, read by the probe after it or from what the CLIs reported, summed in the front's end
line, `status` and the run's final report; nothing said where nobody read it."""

from __future__ import annotations

from flamechase.flows.parrallello import events as fev
from flamechase.flows.parrallello import progress
from flamechase.flows.parrallello.usage import BlockWeek
from flamechase.view.state import RunFold
from tests.flows.parrallello.decider import Driver, front, plan
from tests.flows.parrallello.test_usage import Probed, Reporting, failing


def test_the_final_report_gives_each_fronts_share_of_the_week_the_probe_read() -> None:
    # The probe reads 10 % before block 1, 21 % after it and 24 % after block 2, the last.
    readings = {1: 0.10, 2: 0.21, 3: 0.24}
    d = Probed(
        lambda n: {"weekly": readings.get(n, 0.24)},
        plan(front(), blocks=2, rounds_per_block=1),
        failing(),
    ).run()
    assert d.finished is not None
    assert d.finished.reason.startswith("P1 not approved (2 rounds, gate ")
    assert d.finished.reason.endswith(", 14.0% of the week)")
    # The last block's share is read after the front ended: said with the front's whole.
    last = d.of(BlockWeek)[-1]
    assert last.describe() == (
        "front P1's block 2 spent 3.0% of the week; the front spent 14.0% of the week in all"
    )
    row = progress.describe(d.state)["fronts"]["P1"]
    assert row["week"] == {"spent": 0.14, "whole": True}
    assert [b["week"] for b in row["blocks"]] == [0.11, 0.03]
    line = next(x for x in progress.describe(d.state)["display"] if x.startswith("P1 "))
    assert "· 14.0% of the week ·" in line


def test_a_front_whose_first_block_went_unread_says_at_least_what_the_clis_reported() -> None:
    # No probe: block 1 starts before any CLI reported the week; block 2 starts at 15 % and
    # its builder reads 30 %.
    d = Reporting(
        lambda c: {"weekly": 0.30 if c.number >= 2 else 0.15} if c.role == "builder" else {},
        lambda n: {},
        plan(front(), blocks=2, rounds_per_block=1),
        failing(),
    )
    d.state = d.state.replace(knobs=d.state.knobs.replace(usage_probe=None))
    d.run()
    (end,) = d.of(fev.FrontEnded)
    assert end.week == 0.15 and not end.week_whole
    assert end.describe().endswith("; at least 15.0% of the week")
    assert "; at least 15.0% of the week." in end.show(RunFold(lanes=[])).text
    assert d.finished is not None
    assert d.finished.reason.endswith(", at least 15.0% of the week)")


def test_nothing_is_said_of_the_week_where_nobody_read_it() -> None:
    d = Driver(plan(front(), blocks=2, rounds_per_block=1), failing()).run()
    (end,) = d.of(fev.FrontEnded)
    assert end.week is None and "week" not in end.describe()
    assert d.finished is not None and "week" not in d.finished.reason
    assert progress.describe(d.state)["fronts"]["P1"]["week"] is None
    assert not any("week" in line for line in progress.describe(d.state)["display"])
