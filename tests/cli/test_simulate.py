"""`flamechase simulate` on flows it has never seen: the docs' review flow and two flows with
result schemas of their own and no simulated actor (tests/cli/simflows), through the CLI.

Before, `sim` answered every turn outside lanes with a coordinator's plan and every lane turn
with a turn report, so a flow with its own result schema got no valid turn at all (the docs'
own example: 0 of 12), and every simulation ended with advice to resume a run whose state
home had just been thrown away.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.helpers import cli

ROOT = Path(__file__).resolve().parents[2]
FLOWS = Path(__file__).resolve().parent / "simflows"
_LAST = re.compile(r"^flamechase: simulated (\S+) in [\d.]+ s: (\w+): (.*)$", re.M)


def simulate(tmp: Path, flow: Path, *args: str) -> tuple[str, str, list[dict[str, Any]], str]:
    """(status, message, events, stdout) of `simulate FLOW --keep`, checked to be whole."""
    html = tmp / "replay.html"
    proc = cli(
        "simulate",
        str(flow),
        "--keep",
        "--html",
        str(html),
        *args,
        cwd=tmp,
        env={"TMPDIR": str(tmp)},  # the kept workspace copy stays under pytest's tmp
        timeout=120,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    found = _LAST.search(proc.stderr)
    assert found, proc.stderr
    _, status, message = found.groups()
    assert proc.returncode == (0 if status == "finished" else 1), proc.stderr
    # Nothing a simulation says may be untrue: its state home is not one to resume in.
    assert "resume" not in proc.stderr and "resume" not in proc.stdout
    assert html.is_file() and "replay: " in proc.stdout
    lines = cli("events", "last", "--json", cwd=tmp, check=True).stdout.splitlines()
    return status, message, [json.loads(line) for line in lines], proc.stdout


def turns(events: list[dict[str, Any]]) -> tuple[int, int]:
    valid = sum(1 for e in events if e["kind"] == "turn_valid")
    failed = sum(1 for e in events if e["kind"] == "turn_failed")
    return valid, failed


def test_simulate_runs_the_docs_review_flow_with_every_turn_valid(tmp_path: Path) -> None:
    _, message, events, out = simulate(tmp_path, ROOT / "docs" / "examples" / "review_flow.py")
    valid, failed = turns(events)
    assert failed == 0 and valid >= 3
    assert message.endswith(f"; {valid} of {valid} turns valid"), message
    # The flow's own ends, either way the simulated reviewers went.
    assert re.match(r"(both reviewers approved draft \d|not approved after 3 drafts);", message)
    verdicts = [
        e["payload"]["result"]
        for e in events
        if e["kind"] == "turn_valid" and e["actor"] != "author"
    ]
    assert verdicts and all(set(v) == {"approve", "comments"} for v in verdicts)
    # Turns outside lanes are counted by role, not as lanes.
    assert "turns outside lanes: author " in out and "turns per lane" not in out


def test_simulate_runs_a_tournament_and_verifies_the_judges_pick(tmp_path: Path) -> None:
    status, message, events, _ = simulate(tmp_path, FLOWS / "tournament.py", "-p", "solvers=3")
    assert status == "finished", message
    valid, failed = turns(events)
    assert (valid, failed) == (4, 0)  # three solvers and the judge
    solutions = [
        e["payload"]["result"]
        for e in events
        if e["kind"] == "turn_valid" and e["actor"] != "judge"
    ]
    assert all(0 <= s["confidence"] <= 1 and s["expected_score"] >= 0 for s in solutions)
    [pick] = [
        e["payload"]["result"]
        for e in events
        if e["kind"] == "turn_valid" and e["actor"] == "judge"
    ]
    assert 1 <= pick["winner"] <= 3 and pick["certainty"] in ("low", "medium", "high")
    # Every copy measured by the runtime on the sample (unchanged copies: the same score),
    # so the judge's pick is verified.
    scores = [e["payload"]["receipt"]["value"] for e in events if e["kind"] == "measured"]
    assert scores == [364071] * 3
    [decided] = [e for e in events if e["kind"] == "tournament_decided"]
    assert (
        decided["payload"]["verified"]
        and decided["payload"]["winner"] == f"solver_{pick['winner']}"
    )
    assert message.startswith(f"solver_{pick['winner']} wins with 364071 (verified)")


def test_simulate_runs_a_relay_of_author_and_reviewer(tmp_path: Path) -> None:
    status, message, events, out = simulate(tmp_path, FLOWS / "relay.py", "-p", "rounds=3")
    assert status == "finished", message
    valid, failed = turns(events)
    assert failed == 0
    lane_turns = [e for e in events if e["kind"] == "turn_valid"]
    assert [e["actor"] for e in lane_turns] == ["author", "reviewer"] * (valid // 2)
    for e in lane_turns:
        result = e["payload"]["result"]
        if e["actor"] == "author":
            assert 1 <= len(result["sections"]) <= 4
            assert all(10 <= s["words"] <= 500 for s in result["sections"])
            assert result["stage"] in ("outline", "draft", "final")
        else:
            assert result["verdict"] in ("accept", "revise") and 1 <= result["score"] <= 5
    batons = [e["payload"] for e in events if e["kind"] == "baton_passed"]
    assert [b["round"] for b in batons] == list(range(1, valid // 2 + 1))
    accepted = batons[-1]["verdict"] == "accept"
    assert message.startswith("accepted in round" if accepted else "not accepted after 3 rounds")
    assert "turns per lane: relay " in out
