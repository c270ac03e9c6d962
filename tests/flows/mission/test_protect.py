"""protected_paths: a lane's protected files, hashed by the runtime around its turns, tell a
write (changed, added, removed, unreadable) whatever the lane reports."""

from __future__ import annotations

from flamechase import events as ev
from flamechase.flows.parallel_flame_chase_mission.protect import Protect


def _frozen(key: str, files: dict[str, str], error: str | None = None) -> ev.Frozen:
    return ev.Frozen(key=key, place="lanes/lane-2", files=files, error=error)


def test_the_first_hash_is_the_baseline_and_the_lane_waits_for_it() -> None:
    book = Protect()
    assert book.waits("lane-2")
    book, w = book.frozen(_frozen("protect:lane-2:0:0", {"bench.py": "a"}), "M000002")
    assert w is None and not book.waits("lane-2")
    book = book.ended("lane-2", 1, 1)
    assert book.waits("lane-2")  # its next turn waits for the hash after this one


def test_a_changed_added_or_removed_file_is_a_write_and_an_unchanged_one_is_not() -> None:
    book, _ = Protect().frozen(_frozen("protect:lane-2:0:0", {"a": "1", "b": "2"}), None)
    book, w = book.ended("lane-2", 1, 1).frozen(
        _frozen("protect:lane-2:1:1", {"a": "1", "b": "2"}), "M1"
    )
    assert w is None
    book, w = book.ended("lane-2", 2, 1).frozen(
        _frozen("protect:lane-2:2:1", {"a": "9", "c": "3"}), "M1"
    )
    assert w is not None and w.paths == ("a", "b", "c") and w.turn == 2 and w.mission_id == "M1"
    assert not book.waits("lane-2") and book.of("lane-2")[0]["paths"] == ("a", "b", "c")
    assert book.of("lane-1") == []


def test_a_protected_file_that_cannot_be_hashed_is_a_write() -> None:
    book, _ = Protect().frozen(_frozen("protect:lane-2:0:0", {"a": "1"}), None)
    book, w = book.ended("lane-2", 1, 1).frozen(
        _frozen("protect:lane-2:1:1", {}, error="a is a symlink"), None
    )
    assert w is not None and w.error == "a is a symlink" and "could not be hashed" in w.said()
    assert book.seen["lane-2"] == {"a": "1"}  # the last good hashes stay the reference
