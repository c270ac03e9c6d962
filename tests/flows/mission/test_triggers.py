"""parallel_flame_chase_mission's other triggers through the real engine with scripted turns:
a trigger while an audit is being decided joins it (a new revision; the decision written for
the old one is discarded, never applied), a passed deadline, the periodic global review, and
the packet showing a claimed score beside the runtime's own measurement."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from flamechase import events as ev
from flamechase.engine.executor import TurnJob
from flamechase.flows.parallel_flame_chase_mission import events as mev
from flamechase.testing import FakeClock, FakeTurn, ScriptedExecutor, run_engine, run_for_real
from tests.flows.mission.script import answer, plan, ready, verdict

Script = Callable[[TurnJob], FakeTurn]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    tree = tmp_path / "ws"
    tree.mkdir()
    (tree / "score.py").write_text("print('SCORE: 1')\n")
    return tree


def _run(ws: Path, script: Script, turns: int, **settings: str) -> Any:
    clock = FakeClock()
    executor = ScriptedExecutor(clock, script, measure=run_for_real)
    return run_engine(
        "parallel_flame_chase_mission",
        ws,
        executor=executor,
        clock=clock,
        settings={"lanes": "2", "budget.turns": str(turns), **settings},
    )


def _continue_all(ctx: Mapping[str, Any]) -> dict[str, Any]:
    return answer(ctx, *(verdict(t, "continue") for t in ctx["targets"]))


def _script(
    the_plan: dict[str, Any],
    lanes: Mapping[str, Script],
    decide: Callable[[TurnJob], dict[str, Any]] | None = None,
    decision_takes: float = 30,
) -> Script:
    def script(job: TurnJob) -> FakeTurn:
        if not job.request.lane:
            if job.request.turn < 1000:
                return FakeTurn(report=the_plan, duration=30)
            report = decide(job) if decide else _continue_all(job.result.context)
            return FakeTurn(report=report, duration=decision_takes)
        return lanes[job.request.lane](job)

    return script


def _progress(duration: float) -> Script:
    return lambda job: FakeTurn(
        report={"status": "progress", "summary": "a step"}, duration=duration
    )


def test_a_trigger_while_deciding_widens_the_audit_and_the_old_decision_is_discarded(
    ws: Path,
) -> None:
    # lane-2 stalls at t=90 and its audit is decided from t=90 to t=150; lane-1, still in its
    # turn, stalls at t=130: the audit takes it in as revision 2.
    script = _script(
        plan(lane_1=1, lane_2=1),
        {"lane-1": _progress(100), "lane-2": _progress(60)},
        decision_takes=60,
    )
    run = _run(ws, script, turns=4)
    record = run.record()
    opened = record.of(mev.AuditOpened)
    assert [(a.audit_id, a.revision, a.targets) for a in opened[:2]] == [
        ("A000001", 1, ["lane-2"]),
        ("A000001", 2, ["lane-2", "lane-1"]),
    ]
    [gone, *_] = record.of(mev.DecisionDiscarded)
    assert (gone.audit_id, gone.revision) == ("A000001", 1)
    first = record.of(mev.AuditDecided)[0]
    assert (first.audit_id, first.revision) == ("A000001", 2)
    assert sorted(v["lane"] for v in first.verdicts) == ["lane-1", "lane-2"]
    assert gone.seq < first.seq
    # Both revisions' snapshots are removed: r1's once its session ended, r2's once decided.
    dropped = {e.place for e in record.of(ev.PlaceDropped)}
    assert {"audits/A000001-r1", "audits/A000001-r2"} <= dropped


def test_a_mission_past_its_deadline_is_audited(ws: Path) -> None:
    the_plan = plan()
    the_plan["lanes"][1]["mission"]["deadline_hours"] = 0.25
    run = _run(ws, _script(the_plan, {"lane-1": _progress(600), "lane-2": _progress(1200)}), 4)
    record = run.record()
    [clock] = [t for t in record.of(mev.AuditTriggered) if t.trigger_kind == "mission_deadline"][:1]
    assert (clock.lane, clock.mission_id) == ("lane-2", "M000002")
    [opened, *_] = record.of(mev.AuditOpened)
    assert (opened.trigger_kind, opened.targets) == ("mission_deadline", ["lane-2"])
    assert record.of(mev.AuditDecided)


def test_the_periodic_global_review_audits_every_lane_at_work(ws: Path) -> None:
    run = _run(
        ws,
        _script(plan(), {"lane-1": _progress(1500), "lane-2": _progress(1500)}),
        8,
        global_audit_hours="1",
    )
    record = run.record()
    [opened, *_] = record.of(mev.AuditOpened)
    assert (opened.trigger_kind, opened.scope, opened.targets) == (
        "periodic_global_review",
        "global",
        ["lane-1", "lane-2"],
    )
    [decided, *_] = record.of(mev.AuditDecided)
    assert decided.scope == "global"


def test_the_packet_shows_the_claim_beside_the_runtimes_measurement(ws: Path) -> None:
    packets: list[dict[str, Any]] = []

    def lane2(job: TurnJob) -> FakeTurn:
        turn = ready(job, "score.py", "print('SCORE: 1')\n")
        report = dict(turn.report or {})
        report["submission"] = {
            "title": "a perfect score",
            "metric": "score",
            "direction": "minimize",
            "value": 0.001,
            "evaluator": "python3 score.py",
        }
        return FakeTurn(report=report)

    def decide(job: TurnJob) -> dict[str, Any]:
        prompt = job.request.prompt
        start, end = prompt.index("Packet:\n") + 8, prompt.index("\n\nWrite the decision")
        packets.append(json.loads(prompt[start:end]))
        return _continue_all(job.result.context)

    script = _script(plan(), {"lane-1": _progress(60), "lane-2": lane2}, decide)
    _run(ws, script, 6, evaluator="python3 score.py")
    assert packets, "no audit was decided"
    latest = packets[0]["latest_reports"]["lane-2"]
    assert latest["claimed"] == {"metric": "score", "value": 0.001}
    assert latest["runtime"]["claimed"] == 0.001
    assert latest["runtime"]["measured"] == 1.0
    assert latest["runtime"]["verified"] is False
    assert packets[0]["missions"][0]["outcome"]["status"] == "deliverable_ready"


def test_external_events_add_evidence_or_ask_for_a_review_and_never_act(
    ws: Path, tmp_path: Path
) -> None:
    feed = tmp_path / "events.jsonl"
    feed.write_text("")
    packets: list[dict[str, Any]] = []

    def event(run_id: str, eid: str, kind: str, **more: Any) -> str:
        return (
            json.dumps(
                {
                    "version": 1,
                    "event_id": eid,
                    "run_id": run_id,
                    "kind": kind,
                    "summary": f"{kind} seen",
                    **more,
                }
            )
            + "\n"
        )

    def lane1(job: TurnJob) -> FakeTurn:
        if job.request.turn == 1:
            rid = job.request.run_id
            feed.write_text(
                event(rid, "x1", "deliverable_ready", lane="lane-1", evidence=["CI green"])
                + event("another-run", "x2", "review_requested", scope="global")
                + event(rid, "x3", "review_requested", scope="targeted", targets=["lane-2"])
                + event(rid, "x3", "review_requested", scope="targeted", targets=["lane-2"])
                + event(rid, "x4", "blocked", lane="lane-9")
                + '{"version": 1, "event_id": "x5"}\n'
            )
        return FakeTurn(report={"status": "progress", "summary": "a step"})

    def decide(job: TurnJob) -> dict[str, Any]:
        prompt = job.request.prompt
        start, end = prompt.index("Packet:\n") + 8, prompt.index("\n\nWrite the decision")
        packets.append(json.loads(prompt[start:end]))
        return _continue_all(job.result.context)

    script = _script(plan(), {"lane-1": lane1, "lane-2": _progress(60)}, decide)
    run = _run(ws, script, 6, external_events=str(feed))
    record = run.record()
    [opened, *_] = record.of(mev.AuditOpened)
    assert (opened.trigger_kind, opened.targets) == ("review_requested", ["lane-2"])
    [seen, *_] = record.of(mev.ExternalSeen)
    assert [e["event_id"] for e in seen.events] == ["x1", "x3"]  # another run's, a repeat: out
    assert len(seen.errors) == 2  # a lane this run does not have, an invalid event
    # Lane 1's external "deliverable_ready" is evidence only: its mission goes on.
    assert packets[0]["latest_reports"]["lane-1"]["external"][0]["evidence"] == ["CI green"]
    moved = [m.to_status for m in record.of(mev.MissionMoved) if m.lane == "lane-1"]
    assert moved == ["planned", "active"]


def test_a_revised_objective_is_a_global_audit_not_a_re_plan(ws: Path, tmp_path: Path) -> None:
    seen: list[str] = []

    def decide(job: TurnJob) -> dict[str, Any]:
        seen.append(job.request.prompt)
        ctx = job.result.context
        nxt = plan()["lanes"][1]["mission"] | {"title": "new", "approach_class": "b"}
        return answer(
            ctx,
            verdict("lane-1", "continue"),
            verdict("lane-2", "redirect", changes=["method"], next_mission=nxt),
        )

    script = _script(plan(), {"lane-1": _progress(60), "lane-2": _progress(60)}, decide)
    home = tmp_path / "home"
    for task, turns in (("make it better", 2), ("make it faster", 4)):
        (ws / "TASK.md").write_text(task + "\n")  # `continue`: the objective is TASK.md
        clock = FakeClock()
        executor = ScriptedExecutor(clock, script, measure=run_for_real)
        run = run_engine(
            "parallel_flame_chase_mission",
            ws,
            executor=executor,
            clock=clock,
            task="continue",
            home=home,
            settings={"lanes": "2", "budget.turns": str(turns)},
        )
    record = run.record()
    [opened] = record.of(mev.AuditOpened)
    assert (opened.trigger_kind, opened.scope, opened.targets) == (
        "objective_revision",
        "global",
        ["lane-1", "lane-2"],
    )
    assert "make it faster" in seen[0]
    # One plan, made once; the redirect replaced lane 2's mission.
    assert len([t for t in executor.jobs if not t.request.lane and t.request.turn < 1000]) == 0
    lane2 = [(m.mission_id, m.to_status) for m in record.of(mev.MissionMoved) if m.lane == "lane-2"]
    assert lane2[-3:] == [("M000002", "rejected"), ("M000003", "planned"), ("M000003", "active")]
