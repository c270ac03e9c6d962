"""Narration speaks the seeds' words and says only what happened: when a lane's next turn
starts, its actor takes the tree (the user's source, lane 1) or the copy (a lane's private
snapshot, lanes 2..N) from the actor before it; nobody is named as next before the flow
decides; a failed turn that the same actor retries says so."""

from __future__ import annotations

from flamechase.view.state import RunFold
from tests.view.conftest import Run


def _sentences(run: Run, kind: str) -> list[tuple[str, str]]:
    fold = RunFold.from_run(run.run, run.lanes)
    out = []
    for ev in run.events:
        shown = fold.apply(ev).shown
        if ev["kind"] == kind and ev["lane"]:  # lane turns (not planning sessions)
            out.append((str(ev["lane"]), shown.text))
    return out


def _ev(seq: int, kind: str, actor: str, **payload: object) -> dict[str, object]:
    return {
        "seq": seq,
        "at": "2026-01-01T00:00:00Z",
        "kind": kind,
        "lane": "lane-1",
        "actor": actor,
        "payload": payload,
    }


def test_a_private_lane_is_known_by_its_snapshot(sim_run: Run) -> None:
    fold = RunFold.from_run(sim_run.run, sim_run.lanes)
    for ev in sim_run.events:
        fold.apply(ev)
    assert fold.handed("lanes/lane-2") == "the copy"
    assert fold.handed("source") == "the tree"
    assert "private copy of your tree" in fold.place_words("lanes/lane-2")


def test_lane_one_takes_the_tree_and_the_others_the_copy(sim_run: Run) -> None:
    said = _sentences(sim_run, "turn_started")
    handed = [(lane, t) for lane, t in said if " hands " in t]
    assert {lane for lane, _ in handed} == {"lane-1", "lane-2", "lane-3"}
    for lane, text in handed:
        if lane == "lane-1":
            assert " the tree " in text and "the copy" not in text
        else:
            assert " the copy " in text and "the tree" not in text


def test_a_turn_end_names_nobody_as_next(sim_run: Run) -> None:
    for _lane, text in _sentences(sim_run, "turn_valid") + _sentences(sim_run, "turn_failed"):
        assert " hands " not in text and " next" not in text


def test_the_same_actor_retrying_is_not_told_as_a_hand_over() -> None:
    fold = RunFold(lanes=[("lane-1", ("author", "reviewer"))])
    fold.apply(_ev(1, "turn_started", "author", turn=1, place="source"))
    fold.apply(_ev(2, "turn_failed", "author", turn=1, error="boom", duration=1.0))
    again = fold.apply(_ev(3, "turn_started", "author", turn=2, place="source")).shown.text
    assert "hands" not in again and "reviewer" not in again
    assert again.startswith("author — turn 2 of lane-1 starts, in your tree")
    fold.apply(_ev(4, "turn_valid", "author", turn=2, summary="ok", duration=1.0))
    after = fold.apply(_ev(5, "turn_started", "reviewer", turn=3, place="source")).shown.text
    assert "author hands reviewer the tree" in after


def test_a_turn_on_another_machine_says_where_it_ran(sim_run: Run) -> None:
    fold = RunFold.from_run(sim_run.run, sim_run.lanes)
    for ev in sim_run.events:
        if ev["kind"] in ("turn_valid", "turn_failed") and ev["lane"] == "lane-2":
            remote = {**ev, "payload": {**ev["payload"], "host": "gpu-7, node a83cc9697f6c"}}
            assert ", on gpu-7, node a83cc9697f6c)" in RunFold().apply(remote).shown.text
            assert " on " not in fold.apply(ev).shown.text.split(")")[0]
            return
        fold.apply(ev)
    raise AssertionError("no turn of lane-2 in the sample run")


def test_a_turn_in_another_place_than_the_last_is_handed_nothing() -> None:
    fold = RunFold(lanes=[("lane-1", ("prep", "critic"))])
    for seq, (place, label) in enumerate(
        [("stages/f1", "front P1's staging copy"), ("critics/f1", "the critic's copy")], 1
    ):
        fold.apply(_ev(seq, "place_made", "", place=place, how="empty", label=label))
    fold.apply(_ev(3, "turn_started", "prep", turn=1, place="stages/f1"))
    fold.apply(_ev(4, "turn_valid", "prep", turn=1, duration=1.0))
    critic = fold.apply(_ev(5, "turn_started", "critic", turn=2, place="critics/f1")).shown.text
    assert "hands" not in critic and "prep" not in critic
    assert critic.startswith("critic — turn 2 of lane-1 starts, in the critic's copy")


def test_reports_the_runtime_files_are_said_to_come_from_the_runtime() -> None:
    fold = RunFold(lanes=[("lane-1", ("a", "b"))])
    fold.apply(
        {
            **_ev(1, "report_published", "", report_id="system.lane-1.00001"),
            "lane": "system:lane-1",
        }
    )
    text = fold.apply(
        _ev(2, "turn_started", "a", turn=1, place="source", delivered=["system.lane-1.00001"])
    ).shown.text
    assert "receives 1 report from the runtime (system.lane-1.00001)" in text
    assert "system:" not in text


def test_parallel_flame_chase_names_its_places_and_measurements(sim_run: Run) -> None:
    fold = RunFold.from_run(sim_run.run, sim_run.lanes)
    said = [fold.apply(ev).shown.text for ev in sim_run.events]
    text = "\n".join(said)
    for words in (
        "The runtime makes lane-2's private copy of your tree.",
        "The runtime makes the baseline: your tree as the run found it.",
        "The runtime makes the coordinator's snapshot of your tree.",
        "The runtime makes a measurement copy of lane-",
        "The runtime measures lane-",
        "in the coordinator's snapshot of your tree",
    ):
        assert words in text, words
    measured = [s for s in said if s.startswith("The runtime measures ")]
    assert measured and all("'s candidate lane-" in s for s in measured)
    for leak in ("(lanes/", "(baseline)", "(planning/", "(measure/", " as evaluator", ".0 from"):
        assert leak not in text, leak


def test_a_turn_taken_again_says_which_attempt_ends() -> None:
    fold = RunFold(lanes=[("lane-1", ("critic",))])
    fold.apply(_ev(1, "turn_started", "critic", turn=2, attempt=1, place="source"))
    first = fold.apply(_ev(2, "turn_failed", "critic", turn=2, attempt=1, error="crash"))
    fold.apply(_ev(3, "turn_started", "critic", turn=2, attempt=2, place="source"))
    second = fold.apply(_ev(4, "turn_failed", "critic", turn=2, attempt=2, error="crash"))
    assert first.shown.text.startswith("critic — turn 2 of lane-1 FAILED")
    assert second.shown.text.startswith("critic — turn 2, attempt 2 of lane-1 FAILED")
