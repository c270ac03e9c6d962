"""parallel_flame_chase keeps explorer lanes fresh (`lane_refresh`), through the real CLI:
a lane 2 turn after a valid lane-1 turn starts on lane 1's tree with its own edits kept, and
a file both changed keeps the lane's version and is named in its prompt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.flows.pfc import Team, run_dir

HOOK = """
if c.lane == "lane-1":
    if c.turn == 1:
        (c.ws / "README.md").write_text("lane 1's readme\\n")
        (c.ws / "from-lane-1.txt").write_text("integrated\\n")
        return None
    return c.ok("blocked", "stop here")
if c.turn == 1:
    # Lane 1's turn 1 was valid once its turn 2 started.
    assert c.wait(lambda es: any(e["lane"] == "lane-1" and e["turn"] >= 2 for e in es), 60)
    (c.ws / "README.md").write_text("lane 2's readme\\n")
    (c.ws / "own.txt").write_text("lane 2's work\\n")
    return None
seen = {p: (c.ws / p).read_text() for p in ("README.md", "own.txt", "from-lane-1.txt")
        if (c.ws / p).exists()}
c.save("seen.json", json.dumps({"files": seen, "prompt": c.prompt}))
return c.ok("blocked", "stop here")
"""


@pytest.mark.parametrize("mode", ["rebase", "never"])
def test_a_lane_turn_starts_on_lane_1s_tree_with_its_own_edits_and_conflicts_named(
    source_tree: Path, tmp_path: Path, state_home: Path, mode: str
) -> None:
    team = Team(tmp_path / "team", HOOK)
    proc = team.run(source_tree, "lanes=2", f"lane_refresh={mode}", lanes=2)
    assert proc.returncode == 3, proc.stderr
    seen = json.loads(team.saved("seen.json"))
    if mode == "never":
        assert seen["files"] == {"README.md": "lane 2's readme\n", "own.txt": "lane 2's work\n"}
        assert "refreshed onto lane 1's current tree" not in seen["prompt"]
        return
    assert seen["files"] == {
        "README.md": "lane 2's readme\n",  # both changed it: the lane's version kept
        "own.txt": "lane 2's work\n",
        "from-lane-1.txt": "integrated\n",
    }
    assert "refreshed onto lane 1's current tree" in seen["prompt"]
    assert "README.md" in seen["prompt"].split("reconcile them deliberately:")[1].split("\n")[0]
    # Lane 1's tree was only read.
    assert (source_tree / "README.md").read_text() == "lane 1's readme\n"
    assert not (source_tree / "own.txt").exists()
    assert (run_dir(state_home, source_tree) / "lanerefresh.git" / "HEAD").is_file()


STALE_HOOK = """
if c.lane == "lane-1":
    if c.turn == 2:  # lane 2's turn-1 report is published once its turn 2 has started
        assert c.wait(lambda es: any(e["lane"] == "lane-2" and e["turn"] >= 2 for e in es), 60)
    if c.turn < 3:
        return None
    c.save("lane-1-turn-3.txt", c.prompt)
    return c.ok("blocked", "stop here")
if c.turn == 1:  # written on the tree lane 1 began with, read after lane 1's turns 1 and 2
    assert c.wait(lambda es: any(e["lane"] == "lane-1" and e["turn"] >= 2 for e in es), 60)
    return None
return c.ok("blocked", "stop here")
"""


def test_lane_1s_inbox_marks_a_report_written_before_its_last_two_turns_stale_by_2(
    source_tree: Path, tmp_path: Path, state_home: Path
) -> None:
    team = Team(tmp_path / "team", STALE_HOOK)
    proc = team.run(source_tree, "lanes=2", lanes=2)
    assert proc.returncode == 3, proc.stderr
    prompt = team.saved("lane-1-turn-3.txt")
    inbox = json.loads(
        prompt.split("not yet acknowledged by this lane")[1]
        .split(":\n", 1)[1]
        .split("\n\nArtifact paths")[0]
    )
    marks = {e["report_id"]: e.get("written_against") for e in inbox}
    turn_1 = [m for rid, m in marks.items() if rid.startswith("lane-2.0001")]
    assert turn_1 == [{"lane_1_valid_turns": 0, "freshness": "stale by 2 lane-1 turns"}], marks
