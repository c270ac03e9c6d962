"""parallel_flame_chase_mission through the real engine with scripted turns
(`flamechase.testing`): stalls, outcomes and failures open audits that pause only their
targets; decisions are checked exactly and applied once; the queue reaches lane 1."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from flamechase import events as ev
from flamechase.engine.executor import TurnJob
from flamechase.flows.parallel_flame_chase_mission import FLOW
from flamechase.flows.parallel_flame_chase_mission import events as mev
from flamechase.testing import FakeClock, FakeTurn, ScriptedExecutor, run_engine, run_for_real
from tests.flows.mission.script import (
    answer,
    integration,
    mission,
    plan,
    progress,
    ready,
    team,
    verdict,
)

FLOW_NAME = "parallel_flame_chase_mission"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    tree = tmp_path / "ws"
    tree.mkdir()
    (tree / "README.md").write_text("a tree\n")
    return tree


def _run(ws: Path, script: Any, turns: int = 12, **settings: str) -> Any:
    clock = FakeClock()
    executor = ScriptedExecutor(clock, script, measure=run_for_real)
    return run_engine(
        FLOW_NAME,
        ws,
        executor=executor,
        clock=clock,
        settings={"lanes": "2", "budget.turns": str(turns), **settings},
    )


def _moves(record: Any, lane: str) -> list[tuple[str, str | None, str]]:
    return [
        (m.mission_id, m.from_status, m.to_status)
        for m in record.of(mev.MissionMoved)
        if m.lane == lane
    ]


def test_a_stalled_lane_is_audited_alone_and_redirected(ws: Path) -> None:
    def decide(ctx: Mapping[str, Any]) -> dict[str, Any]:
        assert ctx["targets"] == ["lane-2"]
        nxt = mission("smaller", change_scale="probe")
        return answer(ctx, verdict("lane-2", "redirect", changes=["scale"], next_mission=nxt))

    run = _run(ws, team(decide, {}, plan(lane_2=2)), turns=10)
    assert run.status == "finished", run.message
    record = run.record()
    [opened] = record.of(mev.AuditOpened)
    assert (opened.trigger_kind, opened.targets, opened.scope) == (
        "turn_stall",
        ["lane-2"],
        "targeted",
    )
    [decided] = record.of(mev.AuditDecided)
    assert [v["verdict"] for v in decided.verdicts] == ["redirect"]
    assert _moves(record, "lane-2") == [
        ("M000002", None, "planned"),
        ("M000002", "planned", "active"),
        ("M000002", "active", "rejected"),
        ("M000003", None, "planned"),
        ("M000003", "planned", "active"),
    ]
    state = record.state_as(FLOW)
    new = state.missions.items["M000003"]
    assert (new.parents, new.origin, new.spec["change_scale"]) == (
        ("M000002",),
        "redirect",
        "probe",
    )
    # Lane 1 was not a target: it went on working while lane 2 waited for the decision.
    lane1_during = [
        e
        for e in record.of(ev.TurnStarted)
        if e.lane == "lane-1" and opened.seq < e.seq < decided.seq
    ]
    assert lane1_during
    assert not [
        e
        for e in record.of(ev.TurnStarted)
        if e.lane == "lane-2" and opened.seq < e.seq < decided.seq
    ]


def test_two_failed_turns_start_an_audit_instead_of_a_hold(ws: Path) -> None:
    def lane2(job: TurnJob) -> FakeTurn:
        return FakeTurn(error="crashed") if job.request.turn <= 2 else progress(job)

    def decide(ctx: Mapping[str, Any]) -> dict[str, Any]:
        return answer(ctx, verdict("lane-2", "continue"))

    run = _run(ws, team(decide, {"lane-2": lane2}), turns=10)
    assert run.status == "finished", run.message
    record = run.record()
    assert not record.of(ev.LaneHeld)
    [opened] = record.of(mev.AuditOpened)
    assert (opened.trigger_kind, opened.targets) == ("failed_turns", ["lane-2"])
    assert [v["verdict"] for v in record.of(mev.AuditDecided)[0].verdicts] == ["continue"]
    # Lane 2 works again after the decision.
    assert [e.turn for e in record.of(ev.TurnValid) if e.lane == "lane-2"]


def test_an_invalid_decision_is_repaired_or_retried_never_applied(ws: Path) -> None:
    sessions: list[int] = []

    def decide(ctx: Mapping[str, Any]) -> dict[str, Any]:
        sessions.append(1)
        if len(sessions) == 1:  # forged: accept a progress stall, and the wrong revision
            return {
                "audit_id": ctx["audit_id"],
                "revision": 7,
                "lanes": [verdict("lane-2", "accept")],
            }
        if len(sessions) == 2:  # a lane that is not a target
            return answer(ctx, verdict("lane-1", "continue"))
        return answer(ctx, verdict("lane-2", "continue"))

    run = _run(ws, team(decide, {}, plan(lane_2=1)), turns=8)
    assert run.status == "finished", run.message
    record = run.record()
    refused = record.of(mev.DecisionRefused)
    assert [r.session for r in refused] == [1, 2]
    assert "revision 1, not 'A000001' revision 7" in refused[0].error
    assert "exactly the targets lane-2" in refused[1].error
    decided = record.of(mev.AuditDecided)[0]  # (lane 2 stalls again after each turn)
    assert decided.seq > refused[-1].seq
    assert [v["verdict"] for v in decided.verdicts] == ["continue"]
    # Nothing moved lane 2's mission before the valid decision: it stayed active.
    before = [
        m for m in record.of(mev.MissionMoved) if m.lane == "lane-2" and m.seq < refused[-1].seq
    ]
    assert [m.to_status for m in before] == ["planned", "active"]
    # Each fresh session is a new attempt of the same audit turn, after a backoff.
    starts = [e for e in record.of(ev.TurnStarted) if e.lane is None and e.turn >= 1000]
    assert [(e.turn, e.attempt) for e in starts][:3] == [(1001, 1), (1001, 2), (1001, 3)]


def _blobs(run_dir: Path) -> list[Path]:
    return [p for p in (run_dir / "blobs").rglob("*") if p.is_file()]


@pytest.mark.parametrize("tamper", [False, True])
def test_an_accepted_package_is_verified_then_integrated_by_lane_1(ws: Path, tamper: bool) -> None:
    lane1_seen: list[str] = []

    def lane1(job: TurnJob) -> FakeTurn:
        integrating = "This is an integration mission" in job.request.prompt
        lane1_seen.append("integrate" if integrating else "own")
        if integrating or "integrate" in lane1_seen:
            return ready(job, "merged.txt")
        return progress(job)

    def lane2(job: TurnJob) -> FakeTurn:
        return ready(job)

    def decide(ctx: Mapping[str, Any]) -> dict[str, Any]:
        if (
            ctx["targets"] == ["lane-2"]
            and ctx["lanes"]["lane-2"]["outcome"] == "deliverable_ready"
        ):
            if tamper and not tampered:
                tampered.append(1)
                for blob in _blobs(Path(ctx_dir[0])):
                    blob.chmod(0o644)
                    blob.write_text("tampered\n")
            return answer(ctx, verdict("lane-2", "accept", integration=integration()))
        if ctx["targets"] == ["lane-2"]:  # the package no longer verified
            tampered.append(2)
            other = mission("other", approach_class=f"x{len(tampered)}")
            return answer(
                ctx, verdict("lane-2", "redirect", changes=["method"], next_mission=other)
            )
        return answer(ctx, *(verdict(t, "accept") for t in ctx["targets"]))

    ctx_dir: list[str] = []
    tampered: list[int] = []

    def script(job: TurnJob) -> FakeTurn:
        ctx_dir[:] = [str(job.request.run_dir)]
        return team(decide, {"lane-1": lane1, "lane-2": lane2})(job)

    run = _run(ws, script, turns=14)
    record = run.record()
    items = [(i.item_id, i.status) for i in record.of(mev.IntegrationMoved)]
    state = record.state_as(FLOW)
    if tamper:  # rejected and audited, never handed to lane 1; the next package is
        assert items[:2] == [("I000001", "queued"), ("I000001", "rejected")]
        [invalid] = [
            a for a in record.of(mev.AuditOpened) if a.trigger_kind == "invalid_deliverable"
        ]
        assert invalid.targets == ["lane-2"]
        given = [m.queue_item for m in state.missions.items.values() if m.origin == "integration"]
        assert "I000001" not in given
        return
    assert run.status == "finished", run.message
    assert run.message.startswith("every mission is accepted or rejected")
    assert items == [("I000001", "queued"), ("I000001", "active"), ("I000001", "accepted")]
    [integ] = [m for m in state.missions.items.values() if m.origin == "integration"]
    assert integ.resume_mission_id == "M000001"
    assert _moves(record, "lane-1") == [
        ("M000001", None, "planned"),
        ("M000001", "planned", "active"),
        ("M000001", "active", "paused"),
        (integ.id, None, "planned"),
        (integ.id, "planned", "active"),
        (integ.id, "active", "completed"),
        (integ.id, "completed", "accepted"),
        ("M000001", "paused", "active"),
        ("M000001", "active", "completed"),
        ("M000001", "completed", "accepted"),
    ]
    # Lane 1's integration outcome was audited globally (lane 2 was done: not a target).
    scopes = [(a.scope, a.targets) for a in record.of(mev.AuditDeciding)]
    assert scopes[1] == ("global", ["lane-1"])
