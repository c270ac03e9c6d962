"""The fold against the tables the engine wrote: what views derive from events must be true."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from flamechase.store.db import DB_NAME
from flamechase.store.reader import Reader
from flamechase.view.replay import load_run
from flamechase.view.state import RunFold
from tests.view.conftest import Run


def _fold(run: Run) -> RunFold:
    fold = RunFold.from_run(run.run, run.lanes)
    for ev in run.events:
        fold.apply(ev)
    return fold


@pytest.mark.parametrize("which", ["sim_run", "rough_run"])
def test_fold_agrees_with_the_run_tables(which: str, request: pytest.FixtureRequest) -> None:
    run: Run = request.getfixturevalue(which)
    fold = _fold(run)
    with Reader(run.run_dir / DB_NAME) as r:
        lanes = {ln["lane"]: ln for ln in r.lanes()}
        reports = r.reports()
        spend = r.spend()
        cursors = {name: r.cursors(name) for name in lanes}
        stored = r.flow_state()
    # Report sequence numbers derived from the order of turn events are the table's.
    assert [rep.report_id for rep in fold.reports] == [d.report_id for d in reports]
    assert [rep.seq for rep in fold.reports] == [d.seq for d in reports]
    by_seq = {d.seq: d for d in reports}
    for name, row in lanes.items():
        snap = fold.lanes[name]
        assert (snap.turns, snap.valid, snap.failures, snap.held, snap.last_status) == (
            row["turns"],
            row["valid_turns"],
            row["consecutive_failures"],
            row["held"],
            row["last_status"],
        ), name
        assert snap.actor is None  # the run is over: nothing is on turn
        # Acknowledgement cursors, as counts per source, match the stored seq cursors.
        for source, seq in cursors[name].items():
            want = sum(1 for d in reports if d.lane == source and d.seq <= seq)
            assert fold.cursors.get(name, {}).get(source, 0) == want, (name, source)
            assert by_seq[seq].lane == source
        # Pending = what the engine would deliver next (ignoring its per-turn size caps).
        unread = [
            d.report_id for d in reports if d.lane != name and d.seq > cursors[name].get(d.lane, 0)
        ]
        assert sorted(fold.pending(name)) == sorted(unread), name
    assert fold.turns == spend["turns"]
    assert math.isclose(fold.cost, spend["cost"], abs_tol=1e-5)
    # The leaderboard the flow keeps (and `status` shows) is the one the views fold.
    assert stored is not None
    board = stored["summary"]["leaderboard"]
    if board["best"] is None:
        assert fold.best is None
    else:
        assert fold.best is not None
        assert (fold.best.report_id, fold.best.value) == (
            board["best"]["report_id"],
            board["best"]["value"],
        )
    assert fold.status == run.run["status"]


def test_rough_run_exercises_failures_and_holds(rough_run: Run) -> None:
    kinds = {e["kind"] for e in rough_run.events}
    assert "turn_failed" in kinds
    assert "lane_held" in kinds
    fold = _fold(rough_run)
    assert fold.lanes["lane-3"].held
    assert any(s.failed for s in fold.lanes.values())


def test_pending_grows_with_publishing_and_shrinks_with_acknowledging(sim_run: Run) -> None:
    fold = RunFold.from_run(sim_run.run, sim_run.lanes)
    for ev in sim_run.events:
        before = {n: len(fold.pending(n)) for n in fold.order}
        fold.apply(ev)
        after = {n: len(fold.pending(n)) for n in fold.order}
        p = ev["payload"]
        if ev["kind"] == "report_published":
            for n in fold.order:
                # Every lane that reads the publishing lane has one more.
                if n != ev["lane"] and ev["lane"] in fold.inbox.reads.get(n, ()):
                    assert after[n] == before[n] + 1
        if ev["kind"] == "turn_started":
            # What the engine delivered is exactly the head of the derived pending list.
            assert fold.pending(ev["lane"])[: len(p["delivered"])] == p["delivered"]


def test_narration_names_every_handoff(sim_run: Run) -> None:
    fold = RunFold.from_run(sim_run.run, sim_run.lanes)
    received = filed = 0
    for ev in sim_run.events:
        shown = fold.apply(ev).shown
        text, tag = shown.text, shown.tag
        p = ev["payload"]
        if ev["kind"] == "turn_started" and p["delivered"]:
            received += 1
            assert tag == "receive"
            assert f"receives {len(p['delivered'])} report" in text
            for rid in p["delivered"]:
                assert rid in text
        if ev["kind"] == "report_published":
            filed += 1
            # Filed in its lane's reports; who receives it is said when they do.
            assert text.startswith(f"{ev['actor']} files a report")
            assert f"in {ev['lane']}'s reports" in text
            n = len(p["artifacts"])
            assert (f"{n} artifact" in text) == bool(n)
    assert received and filed


def test_integration_is_recognised() -> None:
    """A valid lane-1 turn whose summary names a package it was delivered integrated it.

    Built from events rather than a simulation: whether a simulated lane 1 takes a package in
    depends on which lane's turns end first, which depends on how busy the machine is.
    """
    fold = RunFold(lanes=[("lane-1", ("a", "b")), ("lane-2", ("c", "d"))])
    at = "2026-01-01T00:00:00Z"

    def ev(kind: str, lane: str, actor: str, **p: object) -> dict[str, object]:
        return {
            "seq": fold.events + 1,
            "at": at,
            "kind": kind,
            "lane": lane,
            "actor": actor,
            "payload": p,
        }

    for e in (
        ev("turn_started", "lane-2", "c", turn=1, delivered=[]),
        ev(
            "turn_valid",
            "lane-2",
            "c",
            turn=1,
            report_id="lane-2.0001.aa",
            report_status="deliverable_ready",
            summary="package",
            acknowledged={},
        ),
        ev(
            "report_published",
            "lane-2",
            "c",
            report_id="lane-2.0001.aa",
            report_status="deliverable_ready",
            artifacts=[{"path": "solver.py"}],
        ),
        ev("turn_started", "lane-1", "a", turn=1, delivered=["lane-2.0001.aa"]),
        ev(
            "turn_valid",
            "lane-1",
            "a",
            turn=1,
            report_id="lane-1.0001.bb",
            report_status="progress",
            summary="Integrated report lane-2.0001.aa: faster.",
            acknowledged={"lane-2": 1},
        ),
    ):
        fold.apply(e)
    assert fold.integrated == [("lane-1", "lane-2.0001.aa", "a")]
    assert fold.by_id["lane-2.0001.aa"].artifacts == 1


def test_leaderboard_top_is_sorted_and_keeps_the_incumbent_on_ties(tmp_path: Path) -> None:
    fold = RunFold(lanes=[("lane-1", ("a", "b"))])
    fold.apply(
        {
            "seq": 1,
            "at": "2026-01-01T00:00:00.000Z",
            "kind": "leaderboard_declared",
            "payload": {
                "metric": "steps",
                "direction": "minimize",
                "measured_by_runtime": True,
                "command": "x",
            },
        }
    )
    for i, value in enumerate([50, 30, 30, 70, 10, 20, 60]):
        fold.apply(
            {
                "seq": i + 1,
                "at": "2026-01-01T00:00:00.000Z",
                "kind": "candidate_submitted",
                "lane": "lane-1",
                "actor": "a",
                "payload": {
                    "report_id": f"r{i}",
                    "metric": "steps",
                    "direction": "minimize",
                    "claimed": value,
                    "measured": value,
                    "verified": True,
                },
            }
        )
    assert [e.value for e in fold.top] == [10, 20, 30, 30, 50]
    assert [e.report_id for e in fold.top][2:4] == ["r1", "r2"]
    assert fold.best is not None and fold.best.report_id == "r4"
    # Unverified claims are never ranked when the runtime measures.
    fold.apply(
        {
            "seq": 9,
            "at": "2026-01-01T00:00:01.000Z",
            "kind": "candidate_submitted",
            "lane": "lane-1",
            "payload": {
                "report_id": "bad",
                "metric": "steps",
                "direction": "minimize",
                "claimed": 1,
                "measured": None,
                "verified": False,
            },
        }
    )
    assert fold.best.report_id == "r4"
    assert fold.submissions == 8
    del tmp_path


def test_synthetic_run_report_seqs_match_its_table(big_run: Path) -> None:
    run, lanes, events = load_run(big_run)
    fold = RunFold.from_run(run, lanes)
    for ev in events:
        fold.apply(ev)
    with Reader(big_run / DB_NAME) as r:
        assert [d.report_id for d in r.reports()] == [rep.report_id for rep in fold.reports]
    assert fold.events == len(events) >= 10_000 - 1
    assert fold.status == "finished"


def test_lane_row_and_snapshot_have_the_same_fields_in_order() -> None:
    import dataclasses

    from flamechase.view.state import LaneRow, LaneSnap

    assert [f.name for f in dataclasses.fields(LaneRow)] == [
        f.name for f in dataclasses.fields(LaneSnap)
    ]
    row = LaneRow(name="lane-1", roles=("a", "b"), actor="a", turn=3, held=True)
    snap = row.freeze()
    assert (snap.name, snap.actor, snap.turn, snap.held, snap.state) == (
        "lane-1",
        "a",
        3,
        True,
        "turn",
    )


def test_active_time_skips_the_time_a_crashed_run_was_down() -> None:
    fold = RunFold(lanes=[("lane-1", ("a", "b"))])
    for seq, (at, kind) in enumerate(
        [
            ("2026-01-01T00:00:00.000Z", "run_created"),
            ("2026-01-01T00:00:10.000Z", "turn_started"),  # then the engine is killed
            ("2026-01-01T05:00:00.000Z", "turn_interrupted"),
            ("2026-01-01T05:00:00.000Z", "run_resumed"),
            ("2026-01-01T05:00:05.000Z", "run_finished"),
        ],
        start=1,
    ):
        fold.apply(
            {
                "seq": seq,
                "at": at,
                "kind": kind,
                "lane": "lane-1" if "turn" in kind else None,
                "actor": "a",
                "payload": {},
            }
        )
    # The cut turn is recorded by the resumed engine, after the outage; the dead session
    # was active until its own last event.
    assert fold.active_seconds() == 10 + 5
    assert fold.lanes["lane-1"].actor is None
    assert fold.status == "finished"


@pytest.mark.parametrize(
    ("payload", "shown"),
    [
        ({"cut": False, "under_way": 2}, "stopping (Ctrl-C again to cut the turns under way)"),
        ({"cut": False, "under_way": 0}, "stopping"),
        ({"cut": True, "under_way": 2}, "stopping"),
    ],
)
def test_the_first_ctrl_c_says_in_the_header_that_a_second_cuts(
    payload: dict[str, object], shown: str
) -> None:
    fold = RunFold(lanes=[("lane-1", ("a", "b"))])
    at = "2026-01-01T00:00:00.000Z"
    for seq, (kind, data) in enumerate([("run_created", {}), ("stopping", payload)], start=1):
        fold.apply(
            {"seq": seq, "at": at, "kind": kind, "lane": None, "actor": None, "payload": data}
        )
    assert fold.status == shown


def test_a_dropped_place_is_said_by_name() -> None:
    """ "Place dropped." said nothing: the removal names the place as its flow labelled it, or
    by its name when no label was given."""
    fold = RunFold(lanes=[("lane-1", ("a", "b"))])

    def ev(kind: str, **p: object) -> dict[str, object]:
        return {"seq": fold.events + 1, "at": "2026-01-01T00:00:00Z", "kind": kind, "payload": p}

    fold.apply(ev("place_made", place="measure/x", path="/r/x", label="the measurement copy"))
    labelled = fold.apply(ev("place_dropped", place="measure/x")).shown.text
    assert labelled == "The runtime removes the measurement copy."
    bare = fold.apply(ev("place_dropped", place="scratch/y")).shown.text
    assert bare == "The runtime removes place scratch/y."
