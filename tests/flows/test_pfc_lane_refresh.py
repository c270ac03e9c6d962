"""parallel_flame_chase keeps explorer lanes fresh (`lane_refresh`), through the real CLI:
a lane 2 turn after a valid lane-1 turn starts on lane 1's tree with its own edits kept, and
a file both changed keeps the lane's version and is named in its prompt."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.flows.pfc import Team, of_kind, run_dir
from tests.helpers import cli, events, status

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
    proc = team.run(source_tree, "lanes=2", "lane_refresh=rebase", lanes=2)
    assert proc.returncode == 3, proc.stderr
    prompt = team.saved("lane-1-turn-3.txt")
    inbox = json.loads(
        prompt.split("not yet acknowledged by this lane")[1]
        .split(":\n", 1)[1]
        .split("\n\nArtifact paths")[0]
    )
    marks = {e["report_id"]: e.get("written_against") for e in inbox}
    turn_1 = [m for rid, m in marks.items() if rid.startswith("lane-2.0001")]
    assert len(turn_1) == 1, marks
    assert turn_1[0]["lane_1_valid_turns"] == 0
    assert turn_1[0]["freshness"] == "stale by 2 lane-1 turns"
    assert re.fullmatch(r"[0-9a-f]{40}", turn_1[0]["lane_1_tree"])  # its commit, recorded


DONE_HOOK = """
if c.lane == "lane-1":
    if c.turn == 1:  # conflicts with lane 2's README; adds a file of its own
        (c.ws / "README.md").write_text("lane 1's readme\\n")
        (c.ws / "from-lane-1.txt").write_text("turn 1\\n")
        return None
    if c.turn == 2:
        # Lane 2's turn 2 starts (refreshed onto lane 1's turn-1 tree), then lane 1 moves on.
        assert c.wait(lambda es: any(e["lane"] == "lane-2" and e["turn"] >= 2 for e in es), 60)
        (c.ws / "from-lane-1.txt").write_text("turn 2\\n")
        return None
    c.save("lane-1-turn-3.txt", c.prompt)
    return c.ok("blocked", "stop here")
if c.turn == 1:  # lane 2's turn-1 report: written on the tree lane 1 began with
    assert c.wait(lambda es: any(e["lane"] == "lane-1" and e["turn"] >= 2 for e in es), 60)
    (c.ws / "README.md").write_text("lane 2's readme\\n")
    (c.ws / "own.txt").write_text("lane 2's work\\n")
    return None
if c.turn == 2:
    seen = {p: (c.ws / p).read_text() for p in ("README.md", "own.txt", "from-lane-1.txt")
            if (c.ws / p).exists()}
    c.save("lane-2-turn-2.json", json.dumps({"files": seen, "prompt": c.prompt}))
    # Lane 2 waits for lane 1's turn 2 to be valid: its next turn is refreshed again.
    assert c.wait(lambda es: any(e["lane"] == "lane-1" and e["turn"] >= 3 for e in es), 60)
    return None
seen = {p: (c.ws / p).read_text() for p in ("README.md", "own.txt", "from-lane-1.txt")}
c.save("lane-2-turn-3.json", json.dumps({"files": seen}))
return c.ok("blocked", "stop here")
"""


def test_done_means_a_stale_report_marked_by_2_and_the_next_lane_turn_on_lane_1s_tree(
    source_tree: Path, tmp_path: Path
) -> None:
    """Issue 26's check, through the CLI with scripted actors and `lane_refresh=rebase`:
    lane 2's report written before lane 1's last two turns reaches lane 1 marked stale by 2;
    lane 2's next turns start on lane 1's current tree, its own edits kept and the file both
    changed named (with the lane-1 turn that changed it)."""
    team = Team(tmp_path / "team", DONE_HOOK)
    proc = team.run(source_tree, "lanes=2", "lane_refresh=rebase", lanes=2)
    assert proc.returncode == 3, proc.stderr
    turn_2 = json.loads(team.saved("lane-2-turn-2.json"))
    assert turn_2["files"] == {
        "README.md": "lane 2's readme\n",  # both changed it: the lane's version kept
        "own.txt": "lane 2's work\n",
        "from-lane-1.txt": "turn 1\n",  # lane 1's tree as its turn 1 left it
    }
    note = turn_2["prompt"].split("reconcile them deliberately:")[0]
    assert "refreshed onto lane 1's current tree" in note and "its turn 1)" in note
    assert "README.md" in turn_2["prompt"].split("reconcile them deliberately:")[1].split("\n")[0]
    turn_3 = json.loads(team.saved("lane-2-turn-3.json"))
    assert turn_3["files"]["from-lane-1.txt"] == "turn 2\n"  # refreshed again: lane 1's turn 2
    assert turn_3["files"]["own.txt"] == "lane 2's work\n"
    # Lane 1's turn 3 sees lane 2's turn-1 report stale by its two turns since.
    prompt = team.saved("lane-1-turn-3.txt")
    inbox = json.loads(
        prompt.split("not yet acknowledged by this lane")[1]
        .split(":\n", 1)[1]
        .split("\n\nArtifact paths")[0]
    )
    marks = {e["report_id"]: e.get("written_against") for e in inbox}
    [first] = [m for rid, m in marks.items() if rid.startswith("lane-2.0001")]
    assert first["freshness"] == "stale by 2 lane-1 turns", marks
    # The journal says so too: every lane-2 report dated, lane 1's inbox marks recorded, and
    # `status` lists each report's freshness.
    evs = events(source_tree)
    dated = {e["payload"]["report_id"]: e["payload"] for e in of_kind(evs, "report_dated")}
    rid = next(r for r in dated if r.startswith("lane-2.0001"))
    assert dated[rid]["lane_1_turns"] == 0 and re.fullmatch(
        r"[0-9a-f]{40}", dated[rid]["lane_1_tree"]
    )
    read = [
        e["payload"]["marks"] for e in of_kind(evs, "inbox_marked") if e["payload"]["turn"] == 3
    ]
    assert read and read[0][rid] == "stale by 2 lane-1 turns"
    # ... and `status` as of now: lane 1's turn 3 (blocked) was valid too.
    assert status(source_tree)["reports"][rid]["freshness"] == "stale by 3 lane-1 turns"
    _every_view_says_it(source_tree, tmp_path, proc.stdout, rid)


def _every_view_says_it(ws: Path, tmp_path: Path, log: str, rid: str) -> None:
    """The log, `status`, the replay and the live view say what lane 1's turn 3 read."""
    from io import StringIO

    from rich.console import Console

    from flamechase.view.renderables import dashboard
    from flamechase.view.replay import load_run
    from flamechase.view.replay_pack import read_document
    from flamechase.view.state import RunFold, parse_at

    said = f"{rid} stale by 2 lane-1 turns"
    assert said in log  # the run's own log
    assert said in cli("events", "last", cwd=ws, check=True).stdout
    text = cli("status", "last", cwd=ws, check=True).stdout
    [row] = [line for line in text.splitlines() if line.strip().startswith(f"{rid}:")]
    assert "lane 1 at 0 valid" in row and "read by lane 1 stale by 2 at turn 3" in row
    page = tmp_path / "replay.html"
    cli("show", "last", "--html", str(page), cwd=ws, check=True)
    assert said in json.dumps(read_document(page.read_text()))
    run, lanes, evs = load_run(run_dir(Path(os.environ["FLAMECHASE_HOME"]), ws))
    fold = RunFold.from_run(run, lanes)
    for e in evs:
        fold.apply(e)
    now = parse_at(fold.at or "")
    console = Console(file=StringIO(), width=120, color_system=None)
    console.print(dashboard(fold.snapshot(now), now, []))
    live = console.file.getvalue()  # type: ignore[attr-defined]
    assert "report freshness" in live and "stale by 2 at turn 3" in live


HOSTILE_HOOK = """
import shutil, subprocess
if c.lane == "lane-1":
    if c.turn == 1:
        (c.ws / "README.md").write_text("lane 1's readme\\n")
        (c.ws / "pkg" / "mod.py").write_text("lane 1's module\\n")
        return None
    return c.ok("blocked", "stop here")
if c.turn == 1:
    # A lane that arms its copy's git: a repository with hooks and an fsmonitor that would
    # leave a marker if anything ran them.
    marker = c.ws / ".git" / "hook-ran"
    subprocess.run(["git", "init", "-q", str(c.ws)], check=True)
    hooks = c.ws / ".git" / "hooks"
    for name in ("pre-commit", "post-commit", "post-merge", "post-checkout", "post-rewrite",
                 "pre-auto-gc", "reference-transaction", "fsmonitor-watchman"):
        (hooks / name).write_text(f"#!/bin/sh\\necho {name} >> {marker}\\n")
        (hooks / name).chmod(0o755)
    with open(c.ws / ".git" / "config", "a") as f:
        f.write(f"[core]\\n\\tfsmonitor = {hooks / 'fsmonitor-watchman'}\\n"
                f"\\thooksPath = {hooks}\\n")
    (c.ws / ".gitattributes").write_text("* filter=evil merge=evil\\n")
    # Alternates pointing at a repository of its own, and a nested repository armed the same.
    (c.ws / ".git" / "objects" / "info" / "alternates").write_text(f"{c.ws}/evil/objects\\n")
    subprocess.run(["git", "init", "-q", str(c.ws / "nested")], check=True)
    nested = c.ws / "nested" / ".git"
    (nested / "hooks" / "post-checkout").write_text(f"#!/bin/sh\\necho nested >> {marker}\\n")
    (nested / "hooks" / "post-checkout").chmod(0o755)
    with open(nested / "config", "a") as f:
        f.write(f"[core]\\n\\tfsmonitor = {nested / 'hooks' / 'post-checkout'}\\n")
    # A directory of lane 1's swapped for a link leaving the copy (lane 1 changes a file
    # under it): nothing may be written through it.
    shutil.rmtree(c.ws / "pkg")
    (c.ws / "pkg").symlink_to(OUTSIDE)
    (c.ws / "own.txt").write_text("lane 2's work\\n")
    assert c.wait(lambda es: any(e["lane"] == "lane-1" and e["turn"] >= 2 for e in es), 60)
    return None
c.save("hostile.json", json.dumps({"readme": (c.ws / "README.md").read_text(),
                                   "own": (c.ws / "own.txt").read_text(),
                                   "ran": (c.ws / ".git" / "hook-ran").exists(),
                                   "pkg": os.readlink(c.ws / "pkg"),
                                   "prompt": c.prompt}))
return c.ok("blocked", "stop here")
"""


def test_a_lane_copys_git_hooks_never_run_when_it_is_refreshed(
    source_tree: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    team = Team(tmp_path / "team", HOSTILE_HOOK.replace("OUTSIDE", repr(str(outside))))
    proc = team.run(source_tree, "lanes=2", "lane_refresh=rebase", lanes=2)
    assert proc.returncode == 3, proc.stderr
    seen = json.loads(team.saved("hostile.json"))
    # Refreshed (lane 1's readme came over, the lane's work stayed), and no hook ran.
    prompt = seen.pop("prompt")
    assert seen == {
        "readme": "lane 1's readme\n",
        "own": "lane 2's work\n",
        "ran": False,
        "pkg": str(outside),  # the lane's link kept ...
    }
    assert list(outside.iterdir()) == []  # ... nothing written through it ...
    named = prompt.split("reconcile them deliberately:")[1].split("\n")[0]
    assert "pkg" in named  # ... and named


HALF_HOOK = """
import sys
src = Path(SOURCE)
if c.lane == "lane-1":
    if c.turn == 1:
        (c.ws / "README.md").write_text("lane 1's turn 1\\n")
        return None
    if c.turn == 2 and c.attempt == 1:
        # Half-way through a turn that will fail: its file must reach no lane.
        (c.ws / "half.txt").write_text("half-written\\n")
        assert c.wait(lambda es: any(e["lane"] == "lane-2" and e["turn"] >= 2 for e in es), 60)
        sys.exit(1)
    return c.ok("blocked", "stop here")
if c.turn == 1:
    assert c.wait(lambda es: any(e["lane"] == "lane-1" and e["turn"] >= 2 for e in es), 60)
    assert c.wait(lambda es: (src / "half.txt").exists(), 60)
    return None
seen = {p: (c.ws / p).read_text() for p in ("README.md", "half.txt") if (c.ws / p).exists()}
c.save("lane-2-turn-2.json", json.dumps(seen))
return c.ok("blocked", "stop here")
"""


def test_a_lane_is_refreshed_onto_lane_1s_tree_as_a_valid_turn_left_it_never_half_written(
    source_tree: Path, tmp_path: Path
) -> None:
    """Lane 2's refresh runs while lane 1's turn 2 is under way and has written a file (a
    turn that then fails): lane 2 starts on lane 1's tree as its valid turn 1 left it."""
    team = Team(tmp_path / "team", HALF_HOOK.replace("SOURCE", repr(str(source_tree))))
    proc = team.run(source_tree, "lanes=2", "lane_refresh=rebase", lanes=2)
    assert proc.returncode == 3, proc.stderr
    assert json.loads(team.saved("lane-2-turn-2.json")) == {"README.md": "lane 1's turn 1\n"}
    assert (source_tree / "half.txt").exists()  # lane 1's tree kept what its turn wrote
