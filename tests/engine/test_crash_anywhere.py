"""A SIGKILL of the engine at any store operation, or at a random time, loses nothing.

CI samples kill points across setup, planning, turn start, collection and commit, one test
per point (each a whole run, killed, resumed until it finishes, one resume killed again at a
random moment), so no test's length depends on how many points are sampled or how busy the
machine is. The full sweep (every point, more random kills) is `bench/crash_harness.py`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.crash_harness import kill_points


@pytest.mark.parametrize("point", [1, 4, 9, 15, 22, 30])
def test_killed_anywhere_then_resumed_loses_nothing(tmp_path: Path, point: int) -> None:
    res = kill_points(tmp_path, [point], turns=8, random_kills=1, seed=point)
    assert res.violations == []
    assert res.kills >= 1  # the kill point was reached: the first session died there
    assert res.runs_finished == 1
