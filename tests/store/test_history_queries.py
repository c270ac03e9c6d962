"""What resume and `status` ask the run database costs the same at 100 turns as at 10,000:
each question is answered through an index or a kept row, never by reading every turn or
event (SQLite's own query plan says so; no timing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flamechase.store.db import Writer
from flamechase.store.reader import Reader


def _turn(w: Writer, lane: str, number: int, status: str, **extra: object) -> None:
    w.insert_turn(
        lane=lane,
        number=number,
        attempt=extra.pop("attempt", 1),
        role=extra.pop("role", "coder"),
        backend="fake",
        status=status,
        started="t",
        ended="t",
        duration=1.0,
        **extra,
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "run.db"
    w = Writer(path)
    with w.transaction():
        for n in range(1, 201):
            _turn(w, "a", n, "valid", cost_usd=0.5, output_tokens=10, input_tokens=3)
        _turn(w, "a", 201, "interrupted")  # cut and never taken again: owed
        _turn(w, "b", 1, "limited")
        _turn(w, "b", 1, "valid", attempt=2)  # taken again: not owed
        _turn(w, "c", 1, "interrupted", counted=0)  # uncounted: owes nothing
        _turn(w, "@planner", 1, "failed", role="planner")
        for pos, lane in enumerate(("a", "b")):
            w.add_lane(lane, pos, ["coder"], f"/tmp/{lane}")
        for i in range(300):
            w.event("turn_valid", lane="a", payload={"i": i, "host": f"h{i}"})
        w.event("run_created")
        w.event("notice", payload={"message": "hello"})
    w.close()
    return path


def test_the_spend_is_kept_as_it_is_summed(db: Path) -> None:
    with Reader(db) as r:
        kept = r.spend()
        summed = r._q(
            "SELECT count(*) FILTER (WHERE status IN ('valid','failed') AND counted = 1) AS t,"
            " sum(cost_usd) AS c, sum(output_tokens) AS o, sum(input_tokens) AS i FROM turns"
        )[0]
    assert kept == {
        "turns": summed["t"],
        "cost": summed["c"],
        "output_tokens": summed["o"],
        "input_tokens": summed["i"],
    }
    assert kept["turns"] == 202


def test_a_database_made_before_the_kept_spend_gets_it_summed(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    w = Writer(path)
    _turn(w, "a", 1, "valid", cost_usd=2.0)
    w.conn.execute("DROP TABLE spend")
    w.conn.execute("DELETE FROM migrations WHERE n = 3")
    w.conn.execute("DROP INDEX turns_cut")
    w.conn.execute("DROP INDEX events_kind")
    w.close()
    with Reader(path) as r:
        assert r.spend()["cost"] == 2.0  # read-only, before any writer migrated it
    Writer(path).close()
    with Reader(path) as r:
        assert r.spend() == {"turns": 1, "cost": 2.0, "output_tokens": 0, "input_tokens": 0}


def test_cut_turns_owed_again_and_turn_lookups(db: Path) -> None:
    with Reader(db) as r:
        assert r.owed_retakes() == {"a"}
        assert r.turn_of("a", 5) == ("coder", True)
        assert r.turn_of("a", 201) == ("coder", False)
        assert r.turn_of("a", 999) == (None, False)
        assert r.turn_of("@planner", 1) == ("planner", False)
        assert r.last_event(("run_created", "run_resumed"))["kind"] == "run_created"
        assert r.last_event(("nothing",)) is None
        assert [e["payload"]["message"] for e in r.events_of("notice")] == ["hello"]
        assert [s["lane"] for s in r.solo_turns()] == ["@planner"]
        assert r.lane_hosts() == {"a": "h299"}  # where its last turn ended; b ended none
        assert r.kinds() == sorted({e["kind"] for e in r.events_except((), limit=10**6)})


def test_only_a_lanes_last_cut_turn_is_owed_again(tmp_path: Path) -> None:
    w = Writer(tmp_path / "run.db")
    with w.transaction():
        for n in range(1, 40):  # many cut turns, each taken again: nothing owed
            _turn(w, "a", n, "interrupted")
            _turn(w, "a", n, "valid", attempt=2)
        _turn(w, "b", 1, "limited")  # an old cut never taken again...
        _turn(w, "b", 2, "interrupted")  # ...and a later one that was: b owes nothing
        _turn(w, "b", 2, "failed", attempt=2)
        _turn(w, "c", 1, "interrupted")  # taken again, then cut again: owed
        _turn(w, "c", 1, "valid", attempt=2)
        _turn(w, "c", 2, "limited")
        _turn(w, "d", 1, "interrupted")
        _turn(w, "d", 1, "interrupted", attempt=2)  # cut twice, never taken: owed
        _turn(w, "e", 1, "interrupted")
        _turn(w, "e", 2, "interrupted", counted=0)  # the last cut counted turn is 1: owed
        _turn(w, "", 1, "interrupted")  # a turn of no lane owes no lane
    w.close()
    with Reader(tmp_path / "run.db") as r:
        assert r.owed_retakes() == {"c", "d", "e"}


def _plan(r: Reader, sql: str, params: tuple[object, ...]) -> str:
    return " | ".join(row[3] for row in r.conn.execute("EXPLAIN QUERY PLAN " + sql, params))


def test_the_history_queries_read_through_indexes(db: Path) -> None:
    traced: list[str] = []
    with Reader(db) as r:
        r.conn.set_trace_callback(traced.append)
        r.owed_retakes()
        r.turn_of("a", 5)
        r.spend()
        r.last_event(("run_created", "run_resumed"))
        r.events_of("notice", 0)
        r.solo_turns()
        r.lane_hosts()
        kinds = r.kinds()
        r.conn.set_trace_callback(None)
        # lane_hosts: the lanes, then one probe a lane; kinds: one probe a kind, and the last
        assert len(traced) == 6 + 1 + 2 + len(kinds) + 1
        plans = {sql: _plan(r, sql, ()) for sql in traced}
    for sql, plan in plans.items():
        # "SCAN x" reads every row of x, even through an index (a partial one: every cut
        # turn); a SEARCH probes. What may be read whole does not grow with the run: the kept
        # spend (one row), the lanes, and the lanes that have a cut turn (owed_retakes' own
        # list, each found by a probe).
        for step in plan.split(" | "):
            if step.startswith("SCAN"):
                table = step.split()[1]
                assert table in ("spend", "CONSTANT", "lanes", "cut_lanes"), (sql, plan)
