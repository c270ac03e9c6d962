"""The two-alternating-actors library, alone: events in, commands out; no engine, no clock."""

from __future__ import annotations

import dataclasses

from flamechase import events as ev
from flamechase.flow import HoldLane, LaneDef, Outbox, PublishReport, StartTurn
from flamechase.flow.lanes import LaneBook, report_id

LANES = [LaneDef("lane-1", ("a1", "b1"), "source"), LaneDef("lane-2", ("a2", "b2"), "lanes/lane-2")]


def book(**kw: bool) -> LaneBook:
    return LaneBook.open(
        "run-1", LANES, holds=kw.get("holds", True), shares_reports=kw.get("shares", True)
    )


def valid(lane: str, role: str, turn: int, status: str = "progress") -> ev.TurnValid:
    return ev.TurnValid(
        lane=lane,
        actor=role,
        turn=turn,
        attempt=1,
        at="t",
        result={"status": status, "summary": "s"},
        report_status=status,
        summary="s",
    )


def failed(lane: str, role: str, turn: int) -> ev.TurnFailed:
    return ev.TurnFailed(lane=lane, actor=role, turn=turn, attempt=1, at="t", error="boom")


def test_every_free_lane_gets_its_next_turn_with_the_other_lanes_reports() -> None:
    starts = book().turns_to_start()
    assert [(s.lane, s.role, s.number, s.place, s.inbox_from) for s in starts] == [
        ("lane-1", "a1", 1, "source", ("lane-2",)),
        ("lane-2", "a2", 1, "lanes/lane-2", ("lane-1",)),
    ]
    assert all(isinstance(s, StartTurn) and s.checkpoint and s.artifacts for s in starts)


def test_actors_alternate_and_a_busy_lane_waits() -> None:
    b, _ = book().evolve(ev.TurnStarted(lane="lane-1", actor="a1", turn=1))
    assert [s.lane for s in b.turns_to_start()] == ["lane-2"]
    b, owed = b.evolve(valid("lane-1", "a1", 1))
    assert [s.role for s in b.turns_to_start() if s.lane == "lane-1"] == ["b1"]
    assert b.get("lane-1").turns == 1
    [publish] = owed
    assert isinstance(publish, PublishReport)
    assert publish.report_id == report_id("run-1", "lane-1", 1, 1)


def test_a_failed_turn_publishes_a_failure_report_and_two_hold_the_lane() -> None:
    b, owed = book().evolve(failed("lane-2", "a2", 1))
    assert [type(c) for c in owed] == [PublishReport]
    assert owed[0].kind == "turn_failed"  # type: ignore[attr-defined]
    b, owed = b.evolve(failed("lane-2", "b2", 2))
    assert [type(c) for c in owed] == [PublishReport, HoldLane]
    assert "2 failed turns in a row: boom" in owed[1].reason  # type: ignore[attr-defined]
    b, _ = b.evolve(ev.LaneHeld(lane="lane-2", reason="x"))
    assert [s.lane for s in b.turns_to_start()] == ["lane-1"]
    b, _ = b.evolve(ev.LaneReleased(lane="lane-2", reason="a new plan"))
    assert b.get("lane-2").consecutive_failures == 0 and not b.get("lane-2").held


def test_a_turn_whose_node_was_lost_is_never_held_against_the_lane() -> None:
    """One failed turn per lost node, whatever came before or after it: only the lane's own
    failures count toward the hold."""
    lost = ev.TurnFailed(
        lane="lane-2", actor="b2", turn=2, attempt=1, at="t", error="node lost", node_lost=True
    )
    b, _ = book().evolve(failed("lane-2", "a2", 1))
    b, owed = b.evolve(lost)
    assert [type(c) for c in owed] == [PublishReport]  # reported, as any failed turn
    assert b.get("lane-2").consecutive_failures == 1 and b.get("lane-2").turns == 2
    b, owed = b.evolve(dataclasses.replace(lost, turn=3, actor="a2"))
    assert not any(isinstance(c, HoldLane) for c in owed)
    assert [s.number for s in b.turns_to_start() if s.lane == "lane-2"] == [4]
    _, owed = b.evolve(failed("lane-2", "b2", 4))  # the lane's own second failure holds
    assert "2 failed turns in a row" in owed[1].reason  # type: ignore[attr-defined]


def test_a_blocked_report_holds_only_when_the_flow_holds() -> None:
    _, owed = book(holds=True).evolve(valid("lane-1", "a1", 1, "blocked"))
    assert any(isinstance(c, HoldLane) for c in owed)
    _, owed = book(holds=False).evolve(valid("lane-1", "a1", 1, "blocked"))
    assert not any(isinstance(c, HoldLane) for c in owed)


def test_a_cut_turn_is_taken_again_by_the_same_actor_with_the_same_number() -> None:
    b, _ = book().evolve(ev.TurnStarted(lane="lane-1", actor="a1", turn=1))
    b, owed = b.evolve(ev.TurnInterrupted(lane="lane-1", actor="a1", turn=1, reason="stop"))
    assert owed == []
    [again] = [s for s in b.turns_to_start() if s.lane == "lane-1"]
    assert (again.role, again.number) == ("a1", 1)


def test_a_lane_waiting_on_a_measurement_takes_no_turn() -> None:
    b = book().wait_for("lane-1", "m1")
    assert [s.lane for s in b.turns_to_start()] == ["lane-2"]
    assert [s.lane for s in b.done_waiting("m1").turns_to_start()] == ["lane-1", "lane-2"]


def test_an_outbox_keeps_a_command_until_its_event_arrives_and_survives_json() -> None:
    cmd = PublishReport(lane="lane-1", report_id="r1", record={"x": 1})
    box = Outbox().add(cmd, HoldLane("lane-2", "why"))
    again = Outbox.model_validate_json(box.model_dump_json())
    assert again.pending() == box.pending()
    box = box.settle(ev.ReportPublished(lane="lane-1", report_id="other"))
    assert len(box) == 2
    box = box.settle(ev.ReportPublished(lane="lane-1", report_id="r1"))
    assert [type(c) for c in box.pending()] == [HoldLane]
    assert len(box.settle(ev.LaneHeld(lane="lane-2", reason="why"))) == 0
