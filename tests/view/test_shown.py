"""`status`'s flow panels kept between calls: a call folds only the flow's events since the
last one, and shows exactly what a fold from the start shows."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from flamechase.store.db import DB_NAME
from flamechase.store.reader import Reader
from flamechase.view import shown as kept_view
from flamechase.view.shown import fold_kept
from flamechase.view.summary import fold_shown, panels_json
from tests.view.synth import make_run


def _add(run_dir: Path, *events: tuple[str, str, dict[str, Any]]) -> None:
    """Append (kind, lane, payload) events, as the engine would journal them."""
    db = sqlite3.connect(run_dir / DB_NAME)
    with db:
        db.executemany(
            "INSERT INTO events (at, kind, lane, actor, payload) VALUES (?,?,?,?,?)",
            [
                ("2026-01-02T00:00:00.000Z", kind, lane, None, json.dumps(payload))
                for kind, lane, payload in events
            ],
        )
    db.close()


def _dated(rid: str, lane: str, turns: int) -> tuple[str, str, dict[str, Any]]:
    return ("report_dated", lane, {"report_id": rid, "lane_1_turns": turns, "behind": 0})


def _marked(turn: int, marks: dict[str, str]) -> tuple[str, str, dict[str, Any]]:
    return ("inbox_marked", "lane-1", {"turn": turn, "marks": marks})


@pytest.fixture
def run(state_home: Path) -> Path:
    state_home.mkdir()
    run_dir = make_run(state_home, 600)
    db = sqlite3.connect(run_dir / DB_NAME)
    with db:
        db.execute("UPDATE run SET flow_source = 'builtin:parallel_flame_chase'")
    db.close()
    _add(run_dir, *(_dated(f"r{i}", f"lane-{2 + i % 2}", i) for i in range(40)))
    return run_dir


def _shown(fold: Any) -> tuple[Any, list[str]]:
    return panels_json(fold.panels.freeze()), list(fold.alerts)


class _Counting:
    """How many event rows `status`'s folds read."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.rows = 0
        real = Reader.events_except

        def counted(reader: Reader, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
            got = real(reader, *args, **kwargs)
            self.rows += len(got)
            return got

        monkeypatch.setattr(Reader, "events_except", counted)


def test_kept_panels_are_those_a_fold_from_the_start_draws(run: Path) -> None:
    first = _shown(fold_kept(run))
    assert first == _shown(fold_shown(run))
    assert first[0] and first[0][0]["rows"]  # the freshness panel, 40 reports
    # Rows changed and added after the kept state: the same as a fold from the start.
    _add(
        run,
        _marked(7, {"r3": "stale by 2 lane-1 turns", "r39": "fresh"}),
        _dated("r40", "lane-2", 41),
    )
    again = _shown(fold_kept(run))
    assert again == _shown(fold_shown(run))
    assert again != first


def test_a_second_status_reads_only_the_flows_events_since_the_first(
    run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fold_kept(run)
    counting = _Counting(monkeypatch)
    fold_kept(run)
    assert counting.rows == 0
    _add(run, _dated("r40", "lane-2", 41), _dated("r41", "lane-3", 41))
    fold_kept(run)
    assert counting.rows == 2


@pytest.mark.parametrize("damage", ["key", "garbage", "cells"])
def test_a_kept_state_not_made_by_this_fold_is_folded_again(
    run: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    right = _shown(fold_kept(run))
    [path] = (run.parent.parent / "cache" / "shown").iterdir()
    kept = json.loads(path.read_text())
    if damage == "key":  # another flamechase or flow code made it
        kept["key"] = "0" * 64
        kept["panels"] = {}
        path.write_text(json.dumps(kept))
    elif damage == "garbage":
        path.write_bytes(b"\x00 not json")
    else:
        panel = next(iter(kept["panels"].values()))
        panel["rows"][0][1] = {"lane": {"not": "a cell"}}
        path.write_text(json.dumps(kept))
    counting = _Counting(monkeypatch)
    assert _shown(fold_kept(run)) == right
    assert counting.rows > 40  # from the start


def test_kept_states_are_bounded(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kept_view, "KEEP", 1)
    fold_kept(run)
    other = make_run(run.parent.parent, 50, run_id="20260101T000000Z-other")
    fold_kept(other)
    assert len(list((run.parent.parent / "cache" / "shown").iterdir())) == 1
