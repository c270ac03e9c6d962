"""Narration speaks the seeds' words: in lane 1 the actors hand each other the tree (the
user's source), in lanes 2..N the copy (the lane's private snapshot); a failed turn says who
takes it next, in the same words."""

from __future__ import annotations

from flamechase.view.narrate import narrate
from flamechase.view.state import RunFold
from tests.view.conftest import Run


def _sentences(run: Run, kind: str) -> list[tuple[str, str]]:
    fold = RunFold.from_run(run.run, run.lanes)
    out = []
    for ev in run.events:
        fold.apply(ev)
        if ev["kind"] == kind and ev["lane"]:  # lane turns (not planning sessions)
            out.append((str(ev["lane"]), narrate(ev, fold)[0]))
    return out


def test_a_private_lane_is_known_by_its_snapshot(sim_run: Run) -> None:
    fold = RunFold.from_run(sim_run.run, sim_run.lanes)
    for ev in sim_run.events:
        fold.apply(ev)
    assert fold.copies == {"lane-2", "lane-3"}


def test_lane_one_hands_over_the_tree_and_the_others_the_copy(sim_run: Run) -> None:
    said = _sentences(sim_run, "turn_valid")
    assert {lane for lane, _ in said} == {"lane-1", "lane-2", "lane-3"}
    for lane, text in said:
        if lane == "lane-1":
            assert " the tree." in text and "the copy" not in text
        else:
            assert " the copy." in text and "the tree" not in text


def test_a_failed_turn_says_who_takes_the_copy_next(rough_run: Run) -> None:
    said = [(lane, t) for lane, t in _sentences(rough_run, "turn_failed") if lane != "lane-1"]
    assert said, "lane 2's silent actor fails its turns"
    for _lane, text in said:
        assert " takes the copy next." in text


def test_a_lone_lane_on_the_source_hands_over_the_tree() -> None:
    fold = RunFold(lanes=[("lane-1", ("first_chaser", "second_chaser"))])
    ev = {
        "seq": 1,
        "at": "2026-01-01T00:00:00Z",
        "kind": "turn_valid",
        "lane": "lane-1",
        "actor": "first_chaser",
        "payload": {"turn": 1, "report_status": "progress", "summary": "s", "duration": 1.0},
    }
    fold.apply(ev)
    assert narrate(ev, fold)[0].endswith("; hands second_chaser the tree.")


def test_a_turn_on_another_machine_says_where_it_ran(sim_run: Run) -> None:
    fold = RunFold.from_run(sim_run.run, sim_run.lanes)
    for ev in sim_run.events:
        fold.apply(ev)
        if ev["kind"] in ("turn_valid", "turn_failed") and ev["lane"] == "lane-2":
            remote = {**ev, "payload": {**ev["payload"], "host": "gpu-7, node a83cc9697f6c"}}
            assert ", on gpu-7, node a83cc9697f6c)" in narrate(remote, fold)[0]
            assert " on " not in narrate(ev, fold)[0].split(")")[0]
            return
    raise AssertionError("no turn of lane-2 in the sample run")
