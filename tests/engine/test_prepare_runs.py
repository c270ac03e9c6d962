"""Which stored run a start picks up: found by the small key each run directory keeps (its
flow and workspace), so a start opens the databases of its own runs only, not of every run
the state home holds (whose count only grows)."""

from __future__ import annotations

import json
from pathlib import Path

from flamechase.engine.layout import RUN_KEY
from flamechase.engine.prepare import _runs_of
from flamechase.store.db import Writer
from flamechase.testing import FakeClock, FakeTurn, ScriptedExecutor, run_engine


def _stored_run(home: Path, run_id: str, workspace: Path, key: object | None) -> Path:
    root = home / "runs" / run_id
    root.mkdir(parents=True)
    w = Writer(root / "run.db")
    w.create_run(
        run_id=run_id,
        flow="flame_chase",
        workspace=str(workspace),
        task="t",
        fingerprint="f",
        params={},
        budget={},
        agents={},
        run_dir=str(root),
    )
    w.close()
    if key is not None:
        (root / RUN_KEY).write_text(json.dumps(key))
    return root


def test_a_start_reads_the_run_keys_and_opens_only_its_own_runs(
    state_home: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    mine = {"flow": "flame_chase", "workspace": str(ws)}
    _stored_run(state_home, "20260101T000001Z-a", ws, mine)
    # Its key says another tree: the database (which says this one) is not even opened.
    _stored_run(state_home, "20260101T000002Z-b", ws, {**mine, "workspace": "/elsewhere"})
    _stored_run(state_home, "20260101T000003Z-c", ws, {**mine, "flow": "parrallello"})
    # Made before keys were written, or a key that cannot be read: its database says.
    _stored_run(state_home, "20260101T000004Z-d", ws, None)
    _stored_run(state_home, "20260101T000005Z-e", ws, "not an object")
    found = [row["id"] for _, _, row in _runs_of("flame_chase", ws)]
    assert sorted(found) == ["20260101T000001Z-a", "20260101T000004Z-d", "20260101T000005Z-e"]


def test_a_new_run_keeps_its_flow_and_workspace_beside_its_database(
    state_home: Path, source_tree: Path
) -> None:
    clock = FakeClock()
    ex = ScriptedExecutor(
        clock, lambda job: FakeTurn(report={"status": "progress", "summary": "x"})
    )
    run = run_engine(
        "flame_chase",
        source_tree,
        executor=ex,
        clock=clock,
        settings={"budget.turns": "1"},
        home=state_home,
    )
    key = json.loads((run.run_dir / RUN_KEY).read_text())
    assert key == {"flow": "flame_chase", "workspace": str(source_tree)}
