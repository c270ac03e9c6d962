"""The default repair prompt asks for the result the turn ends with, in that result's shape."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from flamechase.flow import REASON, ResultSpec, StartTurn, TurnContext
from flamechase.loader import load_flow


def context(tmp: Path, turn: StartTurn) -> TurnContext:
    return TurnContext(
        run_id="r",
        flow="review",
        objective="o",
        turn=turn,
        attempt=1,
        workspace=tmp,
        io_dir=tmp,
        report_path=tmp / "report.json",
        inbox_path=tmp / "inbox.json",
        inbox=[],
        artifact_root=None,
        checkpoint_path=None,
        checkpoint_identity={},
        workspace_map={},
    )


REVIEW = str(Path(__file__).parents[2] / "docs" / "examples" / "review_flow.py")


def test_a_custom_result_is_repaired_into_its_own_schema(tmp_path: Path) -> None:
    flow = load_flow(REVIEW)
    module = sys.modules[type(flow).__module__]
    spec = ResultSpec(module.Verdict, noun="verdict")
    ctx = context(tmp_path, StartTurn(role="reviewer_a", lane=None, number=1, result=spec))
    text = flow.repair_prompt(flow.State(rounds=1), ctx, REASON)
    before, _, after = text.partition(REASON)
    assert before.startswith("Your verdict was rejected: ")
    assert str(tmp_path / "report.json") in after
    assert "Required: approve (boolean)." in after
    assert "Optional: comments (list of string, at most 20)." in after
    assert "No other keys." in after
    # Nothing of the turn report a real agent would otherwise "repair" into.
    assert "status" not in after and "summary" not in after
    schema = json.loads(after.split("Its JSON schema: ", 1)[1])
    assert schema == module.Verdict.model_json_schema()


def test_the_turn_report_keeps_its_own_words(tmp_path: Path) -> None:
    flow = load_flow(REVIEW)
    ctx = context(tmp_path, StartTurn(role="author", lane=None, number=1))
    text = flow.repair_prompt(flow.State(rounds=1), ctx, "summary: missing")
    assert text.startswith("Your turn report was rejected: summary: missing")
    assert "Required: status (progress, deliverable_ready, no_result or blocked)" in text
