"""A SIGKILL of the engine at any store operation, or at a random time, loses nothing.

CI samples kill points across setup, planning, turn start, collection and commit; the full
sweep (every point, more random kills) is `bench/crash_harness.py`.
"""

from __future__ import annotations

from pathlib import Path

from tests.engine.crash_harness import kill_points


def test_killed_anywhere_then_resumed_loses_nothing(tmp_path: Path) -> None:
    res = kill_points(tmp_path, [1, 4, 9, 15, 22, 30], turns=8, random_kills=1)
    assert res.violations == []
    assert res.kills >= 6
    assert res.runs_finished == 6
