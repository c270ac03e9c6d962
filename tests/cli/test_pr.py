"""`flamechase pr`: what it checks in the lane's clone before it asks the runtime, what it
appends to the turn's requests file, and its one-line refusals (exit 2) anywhere else."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.helpers import cli
from tests.tools.conftest import tool


def lane_clone(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A lane's clone, as the runtime makes it, and the environment of a turn in it."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("a\n")
    central = tmp_path / "central"
    central.mkdir()
    tool("gitpr", "init-central", "--source", str(src), "--run", "R", cwd=central)
    lane = tmp_path / "lane"
    lane.mkdir()
    tool("gitpr", "clone", "--central", str(central), "--name", "lane-2", "--outbox", cwd=lane)
    requests = tmp_path / "requests.jsonl"
    return lane, {"FLAMECHASE_REQUESTS": str(requests), "FLAMECHASE_LANE": "lane-2"}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_outside_a_lanes_turn_pr_refuses_in_one_line(tmp_path: Path) -> None:
    for args in (["open", "--title", "x"], ["ready"], ["list"], ["show", "PR000001"]):
        proc = cli("pr", *args, cwd=tmp_path)
        assert proc.returncode == 2, args
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert proc.stderr.startswith("flamechase pr: error: ")


def test_open_asks_for_a_pushed_lane_branch_and_appends_one_request(tmp_path: Path) -> None:
    lane, env = lane_clone(tmp_path)
    off = cli("pr", "open", "--title", "t", cwd=lane, env=env)
    assert off.returncode == 2 and "main is not one of lane-2's branches" in off.stderr
    git(lane, "checkout", "-q", "-b", "lane-2/x")
    (lane / "b.txt").write_text("b\n")
    git(lane, "add", "b.txt")
    git(lane, "commit", "-qm", "b")
    unpushed = cli("pr", "open", "--title", "t", cwd=lane, env=env)
    assert unpushed.returncode == 2
    assert "lane-2/x is not pushed: git push origin lane-2/x" in unpushed.stderr
    git(lane, "push", "-q", "origin", "lane-2/x")
    head = git(lane, "rev-parse", "HEAD")
    ok = cli("pr", "open", "--title", "b file", "--hypothesis", "b helps", cwd=lane, env=env)
    assert ok.returncode == 0, ok.stderr
    assert "requested: a draft PR from lane-2/x" in ok.stdout
    (lane / "b.txt").write_text("b2\n")
    git(lane, "commit", "-qam", "b2")
    stale = cli("pr", "ready", cwd=lane, env=env)
    assert stale.returncode == 2 and "is not what you pushed" in stale.stderr
    by_id = cli("pr", "ready", "PR000001", cwd=lane, env=env)
    assert by_id.returncode == 0, by_id.stderr
    lines = [json.loads(x) for x in Path(env["FLAMECHASE_REQUESTS"]).read_text().splitlines()]
    assert lines == [
        {
            "op": "open",
            "branch": "lane-2/x",
            "head": head,
            "title": "b file",
            "hypothesis": "b helps",
        },
        {"op": "ready", "pr": "PR000001"},
    ]


def test_list_names_a_run_without_pull_requests(tmp_path: Path, source_tree: Path) -> None:
    actor = tmp_path / "a.sh"
    actor.write_text(
        '#!/bin/sh\necho \'{"status":"progress","summary":"ok"}\' > "$FLAMECHASE_REPORT"\n'
    )
    actor.chmod(0o755)
    run = cli(
        "exec",
        "-f",
        "flame_chase",
        "-a",
        f"exec:{actor}",
        "-a",
        f"exec:{actor}",
        "-p",
        "budget.turns=1,rest_seconds=0.05",
        "go",
        cwd=source_tree,
    )
    assert run.returncode == 0, run.stderr
    proc = cli("pr", "list", "--run", "last", cwd=source_tree)
    assert proc.returncode == 2
    assert "has no pull requests (not a pull-request flow)" in proc.stderr
