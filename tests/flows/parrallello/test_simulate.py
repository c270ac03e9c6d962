"""`flamechase simulate parrallello`: a planner, prep, builders and a critic played by sim
actors on a copy of the sample, the whole protocol run for real, and its replay written."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import cli


def test_simulate_runs_the_protocol_on_the_sample_and_writes_its_replay(tmp_path: Path) -> None:
    html = tmp_path / "parrallello.html"
    proc = cli("simulate", "parrallello", "--html", str(html), "--keep", cwd=tmp_path, timeout=400)
    assert proc.returncode == 0, proc.stderr
    assert "P1 approved" in proc.stderr and "P2 approved" in proc.stderr
    page = html.read_text()
    for sentence in (
        "Plan (planner): 2 fronts",
        "Front P1 is staged in one pass",
        "Front P1, round 1: not approved",
        "Front P1, round 2: APPROVED",
        "gate changed in review and is frozen again",
        "Front P1 lands in your tree",
        "Front P2 opens (wave 2)",
    ):
        assert sentence in page, sentence
    events = [
        json.loads(line)
        for line in cli("events", "last", "--json", cwd=tmp_path, check=True).stdout.splitlines()
    ]
    started = [e["payload"]["front"] for e in events if e["kind"] == "front_started"]
    assert started == ["P1", "P2"]  # P2 depends on P1: a wave later
    stages = [
        e["payload"]["stage"]
        for e in events
        if e["kind"] == "gate_ran" and e["payload"]["front"] == "P1"
    ]
    assert stages == ["baseline", "round", "recheck", "round"]
