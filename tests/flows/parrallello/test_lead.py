"""The lead between blocks: a fresh `lead` session's decision, validated, or the runtime's rules
without one; its note binds the next block's builders and critic."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from flamechase.flow import MakePlace, StartTurn
from flamechase.flows.parrallello import events as fev
from tests.flows.parrallello.decider import Driver, Script, front, plan


def turns(d: Driver, role: str) -> list[StartTurn]:
    return [c for cs in d.commands for c in cs if isinstance(c, StartTurn) and c.role == role]


def never_passes() -> Script:
    return Script(gate=lambda f, r: {"T.a": False})


def test_without_a_lead_the_rules_say_change_method_for_a_recurring_item() -> None:
    d = Driver(plan(front(), blocks=3, rounds_per_block=1), never_passes()).run()
    decided = d.of(fev.LeadDecided)
    assert [(x.block, x.source) for x in decided] == [(2, "rules"), (3, "rules")]
    # G-T.a is open since the baseline: in its third round it is recurring.
    assert decided[0].items == []
    assert [i["id"] for i in decided[1].items] == ["G-T.a"]
    assert "Recurring: G-T.a. Change method" in decided[1].note
    third = [c for c in turns(d, "builder") if c.number == 3][0]
    brief = third.note["brief"]
    assert brief["lead_note"] == decided[1].note
    assert brief["tickets"][0]["detail"].startswith("CHANGE METHOD: open 3 rounds")
    assert "The lead's note (lead_note) binds this block: follow it." in brief["rules"]
    assert not turns(d, "lead")


def test_a_leads_decision_reaches_the_next_blocks_builders_and_critic() -> None:
    def decide(f: str, block: int, brief: dict[str, Any]) -> dict[str, Any]:
        assert "verdicts" in brief and "code" not in brief and brief["open_tickets"]
        return {
            "items": [{"id": "G-T.a", "call": "too_big"}],
            "tickets": [
                {"id": "L-1", "severity": "major", "title": "the first half", "owner": "core"}
            ],
            "lead_note": "Work on L-1 alone; measure before you change anything.",
        }

    script = never_passes()
    script.lead = decide
    d = Driver(plan(front(), blocks=2, rounds_per_block=1), script, lead=True).run()
    (lead_turn,) = turns(d, "lead")
    assert lead_turn.place == "leads/P1"
    made = {c.name: c.how for cs in d.commands for c in cs if isinstance(c, MakePlace)}
    assert made["leads/P1"] == "empty"  # never the code
    (decided,) = d.of(fev.LeadDecided)
    assert decided.source == "lead" and decided.block == 2
    builder = [c for c in turns(d, "builder") if c.number == 2][0].note["brief"]
    critic = [c for c in turns(d, "critic")][-1].note["brief"]
    note = "Work on L-1 alone; measure before you change anything."
    assert builder["lead_note"] == note and critic["lead_note"] == note
    # The too-big item is replaced by the lead's ticket (the gate's item comes back if it fails).
    assert [t["id"] for t in builder["tickets"]] == ["L-1"]
    st = d.state.fronts["P1"]
    assert st.decisions[0]["source"] == "lead" and st.lead_note == note


def test_a_lead_decision_is_validated_against_the_front() -> None:
    bad = never_passes()
    bad.lead = lambda f, b, brief: {
        "items": [{"id": "NOPE", "call": "regression"}],
        "lead_note": "x",
    }
    with pytest.raises(ValueError, match="NOPE is not an open ticket"):
        Driver(plan(front(), blocks=2, rounds_per_block=1), bad, lead=True).run()
    vague = never_passes()
    vague.lead = lambda f, b, brief: {
        "items": [{"id": "G-T.a", "call": "recurring"}],
        "lead_note": "x",
    }
    with pytest.raises(ValueError, match="state the change of method"):
        Driver(plan(front(), blocks=2, rounds_per_block=1), vague, lead=True).run()


def test_a_lead_that_fails_twice_leaves_the_block_to_the_rules() -> None:
    script = never_passes()
    script.fail_turn = lambda c: c.role == "lead"
    d = Driver(plan(front(), blocks=2, rounds_per_block=1), script, lead=True).run()
    assert [c.number for c in turns(d, "lead")] == [2, 2]  # relaunched fresh once
    (decided,) = d.of(fev.LeadDecided)
    assert decided.source == "rules"
    assert "lead-failed" in [a.what for a in d.of(fev.Anomaly)]
    assert [v.round for v in d.of(fev.VerdictRecorded)] == [1, 2]


@pytest.mark.parametrize(
    ("split", "spare", "error"),
    [
        ({"core": ["src/P1/a.py"], "docs": ["src/P1/b.md"]}, False, "no builder lane"),
        ({"core": ["src/P1/a.py"], "docs": ["README.md"]}, True, "README.md is not one of"),
        ({"core": ["src/P1/**"], "docs": ["src/P1/b.md"]}, True, "would both own src/P1/b.md"),
        ({"core": ["src/**"]}, True, "src/** is not one of the front's files"),
        ({"core": []}, True, "owner core gets no files"),
    ],
)
def test_a_split_is_refused_unless_it_divides_the_fronts_own_files(
    split: dict[str, list[str]], spare: bool, error: str
) -> None:
    from flamechase.flows.parrallello.lead import LeadDecision

    ctx = {"open": [], "owners": ["core"], "files": {"core": ["src/P1/**"]}, "spare": spare}
    with pytest.raises(ValueError, match=re.escape(error)):
        LeadDecision.model_validate({"lead_note": "n", "split": split}, context=ctx)


def test_a_split_gives_the_spare_lane_to_the_new_owner_from_the_next_block() -> None:
    script = never_passes()
    script.lead = lambda f, b, brief: {
        "lead_note": "split",
        "split": {"core": ["src/P1/a.py"], "docs": ["src/P1/b.md"]},
    }
    d = Driver(plan(front(), blocks=2, rounds_per_block=1), script, lead=True).run()
    f = d.state.fronts["P1"]
    assert f.owners == {"core": "P1.core", "docs": "P1.split"} and f.spare is None
    second = {c.lane: c.note["brief"]["files"] for c in turns(d, "builder") if c.number == 2}
    # G-T.a has no owner: it goes to whoever has fewest tickets (core, listed first); docs
    # has none and sits the round out.
    assert second == {"P1.core": ["src/P1/a.py"]}


def test_the_runs_last_line_reports_each_fronts_rounds_score_minors_and_cost() -> None:
    d = Driver(plan(front(), blocks=1, rounds_per_block=2), Script(cost=0.25)).run()
    assert d.finished is not None
    assert d.finished.reason == "P1 approved (2 rounds, gate 1/1 PASS, 0 minors left, $1.00)"


def test_a_users_decision_file_is_read_whole_and_validated_alone(tmp_path: Path) -> None:
    import pytest

    from flamechase.flows.parrallello.decision import load_decisions

    one = tmp_path / "one.yaml"
    one.write_text("lead_note: go\nfront: P\n")
    assert load_decisions(str(one)) == {"P": {"lead_note": "go"}}
    every = tmp_path / "every.json"
    every.write_text('{"lead_note": "go"}')
    assert load_decisions(str(every)) == {"*": {"lead_note": "go"}}
    assert load_decisions({"P": {"lead_note": "go"}}) == {"P": {"lead_note": "go"}}  # stored
    for text, words in [
        ("[1]", "a mapping"),
        ('{"P": {"lead_note": ""}}', "front P: lead_note"),
        ('{"lead_note": "x", "extra": 1}', "extra"),
    ]:
        every.write_text(text)
        with pytest.raises(ValueError, match=words):
            load_decisions(str(every))
    with pytest.raises(ValueError, match="cannot read it"):
        load_decisions(str(tmp_path / "missing.yaml"))
