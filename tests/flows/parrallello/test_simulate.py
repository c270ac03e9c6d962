"""`flamechase simulate parrallello`: a planner, prep, builders and a critic played by sim
actors on a copy of the sample, the whole protocol run for real, and its replay written."""

from __future__ import annotations

import json
from pathlib import Path

from flamechase.view.replay_pack import read_document
from tests.helpers import cli


def test_simulate_runs_the_protocol_on_the_sample_and_writes_its_replay(tmp_path: Path) -> None:
    html = tmp_path / "parrallello.html"
    proc = cli(
        "simulate",
        "parrallello",
        "--html",
        str(html),
        "--keep",
        cwd=tmp_path,
        env={"TMPDIR": str(tmp_path)},  # the kept workspace copy stays under pytest's tmp
        timeout=400,
    )
    assert proc.returncode == 0, proc.stderr
    assert "P1 approved" in proc.stderr and "P2 approved" in proc.stderr
    doc = read_document(html.read_text())
    page = json.dumps(doc, ensure_ascii=False)  # what the replay holds, as text
    for sentence in (
        "The planner plans 2 fronts",
        "Front P1 is staged in one pass",
        "Front P1, round 1: not approved",
        "Front P1, round 2: APPROVED",
        "gate changed in review and is frozen again",
        "Front P1 lands in your tree",
        "Front P2 opens (wave 2)",
        # What the runtime does, in the flow's words: places and programs by their labels.
        "The runtime makes front P1's tree.",
        "builder solver's copy of front P1",
        "The runtime runs front P1's gate on its baseline, `python3 gates/P1.py --full`",
        "The runtime runs the check of builder solver's changes against its files in front P1",
    ):
        assert sentence in page, sentence
    # No internal key of the flow (`pll:P1:diff:1:core`) reaches the page, and no program is
    # named by its argv.
    assert "pll:" not in page and "treesync" not in page and "Ran." not in page
    # The log speaks in fronts, rounds and gates, each named once, counted in words.
    log = cli("events", "last", cwd=tmp_path, check=True).stdout
    for wrong in ("pll:", "P1 P1", "P2 P2", "GATE TOUCHED", "round(s)", "minor(s)"):
        assert wrong not in log and wrong not in proc.stderr, wrong
    assert "P1 approved (2 rounds, gate 3/3 PASS, 0 minors left, $" in proc.stderr
    fronts = {}
    for point in doc["points"]:
        for panel, key, cells in point["d"].get("F", ()):
            if panel == "fronts":
                fronts.setdefault(key, {}).update(cells)
    assert fronts["P1"]["verdict"].startswith("APPROVED") and fronts["P1"]["gate"] == "3/3 PASS"
    assert fronts["P2"]["state"] == "integrated" and fronts["P1"]["round"] == 2
    status = cli("status", "last", cwd=tmp_path, check=True).stdout
    assert "fronts:" in status and "  P1: wave 1 · state integrated" in status
    # A verdict's counts in words, never `M0 m0 n1`.
    assert "verdict APPROVED: 0 major, 0 medium, 0 minor" in status
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
