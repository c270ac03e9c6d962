"""Lane 1 on a node (`ray.lane_1=node`), without Ray: the real engine runs flame_chase with
`exec:` actors and lane 1's turns go to a `LaneHost` in this process holding a git copy of
the user's tree, composed with `head.TreeLane` exactly as the Ray executor composes them. The
test plays the user too: it edits the tree between turns and during one."""

from __future__ import annotations

import asyncio
import json
import platform
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flamechase.engine.executor import Executor, LocalExecutor, MeasureJob, TurnJob, TurnResult
from flamechase.engine.loop import Engine
from flamechase.engine.prepare import RunRequest, prepare
from flamechase.engine.remote import gitsync, head
from flamechase.engine.remote.node import LaneHost
from flamechase.loader import load_flow
from tests.helpers import actor, cli, events

LANE = """\
echo "$FLAMECHASE_ROLE turn $FLAMECHASE_TURN" >> notes.txt
python3 - <<'PY'
import json, os
try:
    open("{source}/escape", "w").write("x")
    escaped = True
except OSError:
    escaped = False
facts = {{"ws": os.environ["FLAMECHASE_WORKSPACE"], "cwd": os.getcwd(), "escaped": escaped,
          "saw_user": os.path.exists("user.txt")}}
json.dump({{"status": "progress", "summary": json.dumps(facts)}},
          open(os.environ["FLAMECHASE_REPORT"], "w"))
PY
"""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), "-c", "user.name=u", "-c", "user.email=u@x", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


class TreeOnNode(Executor):
    """Lane 1's turns on a host in this process; `user(turn, phase)` edits the user's tree
    before a turn's sync ("before") or while the turn runs ("during")."""

    def __init__(
        self, local: LocalExecutor, base: Path, tree: Path, user: Callable[[int, str], None]
    ) -> None:
        self.local, self.base, self.tree, self.user = local, base, tree, user
        self.host: LaneHost | None = None
        self.lane: head.TreeLane | None = None
        self.sent: set[str] = set()

    async def run(self, job: TurnJob) -> TurnResult:
        if not head.in_tree(job, self.tree):
            return await self.local.run(job)
        r = job.request
        if self.host is None or self.lane is None:
            self.host = LaneHost(
                r.run_id,
                str(r.run_dir),
                "node0000tree",
                self.base,
                tree=str(self.tree),
                lane=r.lane,
            )
            self.lane = head.TreeLane(gitsync.TreeLink(self.tree, r.run_id, r.lane))
        self.user(r.turn, "before")
        sync = self.lane.sync(job)
        if self.lane.synced is None:
            self.host.materialise_tree(sync)
            self.lane.synced, sync = sync.commit, gitsync.Sync(sync.commit)
        outcome = await self.host.run(job, head.turn_inputs(job, self.sent), sync)
        self.user(r.turn, "during")
        return self.lane.land(job, outcome, sync)

    async def cut(self, job_id: str) -> None:
        await self.local.cut(job_id)
        if self.host is not None:
            await self.host.cut(job_id)

    async def measure(self, job: MeasureJob) -> dict[str, Any]:
        return await self.local.measure(job)


def test_lane_one_on_a_node_lands_its_turns_as_commits_and_keeps_the_users_edits(
    source_tree: Path, tmp_path: Path
) -> None:
    git(source_tree, "init", "-q", "-b", "main")
    git(source_tree, "add", "-A")
    git(source_tree, "commit", "-qm", "the user's work")
    head_commit = git(source_tree, "rev-parse", "HEAD")
    lane = actor(tmp_path, "lane.sh", LANE.format(source=source_tree))

    def user(turn: int, phase: str) -> None:
        if (turn, phase) == (2, "before"):
            (source_tree / "user.txt").write_text("the user's own file\n")
        if (turn, phase) == (3, "during"):
            with open(source_tree / "notes.txt", "a") as f:
                f.write("a line the user added\n")

    prep = prepare(
        RunRequest(
            flow=load_flow("flame_chase"),
            workspace=source_tree,
            warn=lambda _t: None,
            agents=[("first_chaser", f"exec:{lane}"), ("second_chaser", f"exec:{lane}")],
            task="do it",
            settings={"budget.turns": "4", "rest_seconds": "0.05"},
        )
    )
    nodes = TreeOnNode(LocalExecutor(), tmp_path / "nodes", source_tree, user)
    end = asyncio.run(Engine(prep, None, executor=nodes).run())
    evs = events(source_tree)
    ended = [e for e in evs if e["kind"] in ("turn_valid", "turn_failed")]
    assert [e["kind"] for e in ended] == [
        "turn_valid",
        "turn_valid",
        "turn_failed",
        "turn_valid",
    ], end.message
    facts = [
        json.loads(e["payload"]["result"]["summary"]) for e in ended if e["kind"] == "turn_valid"
    ]

    # The turns ran in the node's copy, jailed: the user's tree was out of their reach.
    node_tree = str(tmp_path / "nodes")
    assert all(f["ws"].startswith(node_tree) and f["cwd"].startswith(node_tree) for f in facts)
    assert not any(f["escaped"] for f in facts)
    # ... and say so: each turn's event names the machine and node it ran on.
    assert {e["payload"]["host"] for e in ended} == {f"{platform.node()}, node node0000tree"}
    assert not (source_tree / "escape").exists()
    # The user's file, written between turns, reached the node; it stays in the tree.
    assert [f["saw_user"] for f in facts] == [False, True, True]
    assert (source_tree / "user.txt").read_text() == "the user's own file\n"

    # Turn 3 changed notes.txt while the user did: it was held, named, kept as a commit.
    error = ended[2]["payload"]["error"]
    assert "you changed notes.txt while it ran, and so did the turn" in error
    run_id = prep_run_id(source_tree)
    held = git(
        source_tree, "for-each-ref", "--format=%(refname)", f"refs/flamechase/{run_id}/lane-1-held/"
    )
    assert held == f"refs/flamechase/{run_id}/lane-1-held/turn-3-1"
    assert "first_chaser turn 3" in git(source_tree, "show", f"{held}:notes.txt")

    # What landed: turns 1, 2 and 4, the user's line kept, turn 4 written after it.
    assert (source_tree / "notes.txt").read_text() == (
        "first_chaser turn 1\nsecond_chaser turn 2\na line the user added\nsecond_chaser turn 4\n"
    )
    chain = git(source_tree, "log", "--format=%s", f"refs/flamechase/{run_id}/lane-1")
    assert chain.splitlines()[0] == "lane-1 turn 4 (second_chaser) on node node0000tree"
    assert "lane-1 turn 2 (second_chaser) on node node0000tree" in chain
    assert "lane-1 turn 3" not in chain
    # The user's branch, HEAD and index never moved.
    assert git(source_tree, "rev-parse", "HEAD") == head_commit
    assert git(source_tree, "diff", "--cached", "--name-only") == ""

    # The run resumes on this machine alone (`--executor local`): lane 1 goes on in the tree
    # from where its last landed turn left it.
    out = cli(
        "exec",
        "-f",
        "flame_chase",
        "--resume",
        "-a",
        f"exec:{lane}",
        "-a",
        f"exec:{lane}",
        "-p",
        "budget.turns=6,rest_seconds=0.05",
        "do it",
        cwd=source_tree,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert prep_run_id(source_tree) == run_id
    assert (
        (source_tree / "notes.txt")
        .read_text()
        .endswith(
            "a line the user added\nsecond_chaser turn 4\nfirst_chaser turn 5\n"
            "second_chaser turn 6\n"
        )
    )
    later = [e for e in events(source_tree) if e["kind"] == "turn_valid"][-2:]
    assert [e["payload"]["host"] for e in later] == [None, None]


def prep_run_id(source: Path) -> str:
    status: dict[str, Any] = json.loads(cli("status", "--json", cwd=source, check=True).stdout)
    return str(status["id"])
