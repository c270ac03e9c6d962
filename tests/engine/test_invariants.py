"""The run checker finds what it claims to find (so the crash harness cannot pass vacuously)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from flamechase.engine.invariants import check_run
from tests.engine.crash_harness import ACTOR


def _run(tmp_path: Path) -> Path:
    actor = tmp_path / "actor.py"
    actor.write_text(ACTOR)
    actor.chmod(0o755)
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "flamechase",
            "exec",
            "-f",
            "parallel_flame_chase",
            *(["-a", f"exec:{actor}"] * 7),
            "-p",
            "budget.turns=9,rest_seconds=0.05,sandbox=off",
            "t",
        ],
        cwd=ws,
        check=True,
        env=dict(os.environ, FLAMECHASE_HOME=str(home)),
        capture_output=True,
    )
    return next((home / "runs").iterdir())


def test_checker_passes_a_sound_run_and_catches_tampering(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert check_run(run, turn_limit=9) == []
    assert check_run(run, turn_limit=8) != []
    db = sqlite3.connect(run / "run.db")
    db.execute("UPDATE cursors SET seq = seq + 1 WHERE rowid = (SELECT min(rowid) FROM cursors)")
    db.execute("UPDATE turns SET role = 'lane_1_actor_b' WHERE lane = 'lane-1' AND number = 1")
    db.commit()
    db.close()
    problems = "\n".join(check_run(run))
    assert "stored cursor" in problems
    assert "alternation" in problems
