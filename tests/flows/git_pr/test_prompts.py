"""What a lane's prompt tells it: how its work lands (git, `flamechase pr`, the evaluator the
runtime runs), where main stands, and its own PRs."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from flamechase.flow import TurnContext
from tests.flows.git_pr.kit import FLOW, Driver, sha, starts


def _prompt(d: Driver, lane: str) -> str:
    turn = next(t for t in starts(d.decide()) if t.lane == lane)
    ctx = TurnContext(
        run_id="r1",
        flow=FLOW.name,
        objective="Lower the score.",
        turn=turn,
        attempt=1,
        workspace=Path(f"/run/lanes/{lane}/workspace"),
        io_dir=Path("/io"),
        report_path=Path("/io/report.json"),
        inbox_path=Path("/io/inbox.json"),
        inbox=[],
        artifact_root=None,
        checkpoint_path=None,
        checkpoint_identity={},
        workspace_map={},
    )
    return FLOW.prompt(d.state, ctx)


def test_a_lane_prompt_says_how_work_lands_and_where_it_stands() -> None:
    d = Driver(objective="Faster. You MUST only modify `src/`.")
    d.set_up(main_score=50)
    d.turn("lane-2", [{"op": "open", "branch": "lane-2/x", "title": "try x"}])
    d.push("lane-2", {"refs/heads/lane-2/x": sha(1)})
    text = _prompt(d, "lane-2")
    assert "git checkout -B lane-2/NAME origin/main" in text
    assert f"`{shlex.join([sys.executable, '-I', '-m', 'flamechase'])} pr`" in text
    assert "runs `python3 score.py` itself (score, minimize)" in text
    assert "PRs may change: src/**." in text
    assert "The evaluator is frozen: its files (score.py) were frozen from the baseline" in text
    assert "A PR that changes, deletes or replaces one of them is tampered" in text
    assert "score = 50 (0 merge(s) so far)" in text
    assert '"id": "PR000001"' in text and '"status": "draft"' in text
    assert "/run/lanes/lane-2/workspace" in text
