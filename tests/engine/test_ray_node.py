"""A lane's host on a node (`LaneHost`) and the head's side of a remote turn (`head`), without
Ray: the real engine runs parallel_flame_chase with `exec:` actors, and lanes 2..3 go to hosts
in this process, each with its own node root, exactly as the Ray executor sends them to actors.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

from flamechase.engine.executor import Executor, LocalExecutor, MeasureJob, TurnJob, TurnResult
from flamechase.engine.loop import Engine
from flamechase.engine.prepare import RunRequest, prepare
from flamechase.engine.remote import head, shipping
from flamechase.engine.remote.node import LaneHost
from flamechase.engine.remote.paths import PathMap
from flamechase.loader import load_flow
from tests.helpers import actor, cli, events

PLAN = """\
python3 - <<'PY'
import json, os
lanes = os.environ["FLAMECHASE_LANES"].split(",")
json.dump({"lanes": [{"lane": n, "mission": {"title": n, "objective": "o",
           "success_criteria": ["c"]}} for n in lanes]}, open(os.environ["FLAMECHASE_REPORT"], "w"))
PY
"""

# Lane 3 publishes an artifact and a score on its first turn, and declares a link as an
# artifact on its second (refused on the node, as the head's freeze would refuse it).
LANE = """\
echo "$FLAMECHASE_ROLE turn $FLAMECHASE_TURN" >> notes.txt
python3 - <<'PY'
import hashlib, json, os
lane, turn = os.environ["FLAMECHASE_LANE"], int(os.environ["FLAMECHASE_TURN"])
blobs = [hashlib.sha256(open(a["blob"], "rb").read()).hexdigest() == a["sha256"]
         for d in json.load(open(os.environ["FLAMECHASE_INBOX"]))
         for a in d["report"].get("artifacts", [])]
escaped = None
if lane != "lane-1":
    try:
        open("{source}/escape-" + lane, "w").write("x")
        escaped = True
    except OSError:
        escaped = False
facts = {{"ws": os.environ["FLAMECHASE_WORKSPACE"], "blobs": blobs, "escaped": escaped}}
report = {{"status": "progress", "summary": json.dumps(facts)}}
root = os.environ.get("FLAMECHASE_ARTIFACTS", "")
if lane == "lane-3" and turn <= 2:
    os.makedirs(root + "/pkg", exist_ok=True)
    open(root + "/pkg/patch.diff", "w").write("diff from lane 3\\n")
    if turn == 2 and not os.path.lexists(root + "/link.diff"):
        os.symlink("/etc/hostname", root + "/link.diff")
    report.update(status="deliverable_ready", deliverable={{
        "title": "a patch", "integration_notes": "apply it",
        "artifacts": [{{"path": "pkg/patch.diff" if turn == 1 else "link.diff",
                        "description": "the patch"}}]}})
    if turn == 1:
        open("score.txt", "w").write("SCORE: 7\\n")
        report["submission"] = {{"title": "t", "metric": "score", "value": 7,
                                "direction": "minimize", "evaluator": "cat score.txt",
                                "evidence": ["e"]}}
json.dump(report, open(os.environ["FLAMECHASE_REPORT"], "w"))
PY
"""


class NearbyNodes(Executor):
    """Lanes in private copies run on `LaneHost`s in this process (one node per lane)."""

    def __init__(self, local: LocalExecutor, base: Path) -> None:
        self.local = local
        self.base = base
        self.hosts: dict[str, LaneHost] = {}
        self.sent: dict[str, set[str]] = {}
        self.placed: list[str] = []  # the node of every host started, in order
        self.measured_on_nodes = 0

    async def run(self, job: TurnJob) -> TurnResult:
        if not head.is_remote(job):
            return await self.local.run(job)
        r = job.request
        host = self.hosts.get(r.lane)
        if host is None:
            node = f"n{len(self.placed):03d}-{r.lane}"
            host = self.hosts[r.lane] = LaneHost(r.run_id, str(r.run_dir), node, self.base)
            self.placed.append(node)
            self.sent[r.lane] = set()
        if not host.has_place(str(r.workspace)):
            data, _ = await asyncio.to_thread(shipping.pack_tree, r.workspace)
            await asyncio.to_thread(host.materialise, str(r.workspace), data)
        inputs = head.turn_inputs(job, self.sent[r.lane])
        outcome = await host.run(job, inputs)
        try:  # as RayExecutor.run: a host whose changes cannot land is dropped
            await asyncio.to_thread(head.land, job, outcome)
        except head.LANDING_ERRORS as exc:
            await self.hosts.pop(r.lane).close()
            return head.unlanded(outcome, r.lane, exc)
        return outcome.result

    async def cut(self, job_id: str) -> None:
        await self.local.cut(job_id)
        for host in self.hosts.values():
            await host.cut(job_id)

    async def close(self) -> None:  # as RayExecutor.close: every host ends with the session
        for host in self.hosts.values():
            await host.close()
        await self.local.close()

    async def measure(self, job: MeasureJob) -> dict[str, Any]:
        for host in self.hosts.values():
            if host.has_place(str(job.cwd)):
                self.measured_on_nodes += 1
                return await host.measure(job, {})
        return await self.local.measure(job)


def _facts(e: dict[str, Any]) -> dict[str, Any]:
    facts: dict[str, Any] = json.loads(e["payload"]["result"]["summary"])
    return facts


def test_lanes_in_copies_run_on_their_hosts_and_come_back_whole(
    source_tree: Path, tmp_path: Path
) -> None:
    plan = actor(tmp_path, "plan.sh", PLAN)
    lane = actor(tmp_path, "lane.sh", LANE.format(source=source_tree))
    flow = load_flow("parallel_flame_chase")
    agents: list[tuple[str | None, str]] = [
        ("coordinator", f"exec:{plan}"),
        *((f"lane_{n}_actor_{x}", f"exec:{lane}") for n in (1, 2, 3) for x in "ab"),
    ]
    prep = prepare(
        RunRequest(
            flow=flow,
            agents=agents,
            task="do it",
            workspace=source_tree,
            warn=lambda _t: None,
            settings={
                "budget.turns": "12",
                # Copies kept on the tree they began on: refreshing them is not this test's
                # (test_pfc_lane_refresh.py; on Ray the refresh runs on the head's copy).
                "lane_refresh": "never",
                "rest_seconds": "0.05",
                "evaluator": "cat score.txt; pwd",
                "metric_pattern": r"SCORE: (\d+)",
            },
        )
    )
    nodes = NearbyNodes(LocalExecutor(), tmp_path / "nodes")
    end = asyncio.run(Engine(prep, None, executor=nodes).run())
    assert end.status == "finished", end.message
    evs = events(source_tree)
    valid = [e for e in evs if e["kind"] == "turn_valid" and e["lane"]]

    # The turn budget holds with lanes away from the head: 12 counted turns, no more started.
    assert "budget turns is spent" in end.message
    ended = [
        e
        for e in evs
        if e["kind"] in ("turn_valid", "turn_failed") and e["payload"].get("counted", True)
    ]
    assert len(ended) == 12
    assert len([e for e in evs if e["kind"] == "turn_started" and e["lane"]]) == 12

    by_lane = {
        n: [_facts(e)["ws"] for e in valid if e["lane"] == n]
        for n in ("lane-1", "lane-2", "lane-3")
    }
    assert set(by_lane["lane-1"]) == {str(source_tree)}
    for n in ("lane-2", "lane-3"):
        assert by_lane[n] and all(ws.startswith(str(tmp_path / "nodes")) for ws in by_lane[n])

    # Each turn's event says where it ran: lanes 2..3 on their nodes, lane 1 here (no host).
    assert {e["payload"]["host"] for e in valid if e["lane"] == "lane-1"} == {None}
    assert all(e["payload"]["host"].endswith("lane-2") for e in valid if e["lane"] == "lane-2")

    # The jail travels with the job: the user's tree stays out of reach on the node.
    assert all(_facts(e)["escaped"] is False for e in valid if e["lane"] != "lane-1")
    assert not list(source_tree.glob("escape-*"))

    # Lane 3's artifact came back, was frozen here and extracts; lane 2 got it as a blob.
    published = [
        e
        for e in evs
        if e["kind"] == "report_published"
        and e["lane"] == "lane-3"
        and e["payload"].get("artifacts")
    ]
    out = tmp_path / "out"
    cli(
        "artifacts",
        "last",
        published[0]["payload"]["report_id"],
        "--extract",
        str(out),
        cwd=source_tree,
        check=True,
    )
    assert (out / "pkg" / "patch.diff").read_text() == "diff from lane 3\n"
    got = [b for e in valid if e["lane"] == "lane-2" for b in _facts(e)["blobs"]]
    assert got and all(got)

    # A link declared as an artifact is refused on the node, with the head's own words.
    refused = [e for e in evs if e["kind"] == "turn_failed" and e["lane"] == "lane-3"]
    assert "is a symbolic link; publish the file itself" in refused[0]["payload"]["error"]

    # The score was measured by the head, in its own copy of the baseline with the lane's
    # candidate laid over it (the frozen evaluator): never in the node's copy, which the
    # lane's agent could have changed.
    measured = [e for e in evs if e["kind"] == "measured"]
    assert measured[0]["payload"]["receipt"]["value"] == 7
    assert nodes.measured_on_nodes == 0

    # `status` says where each lane's last turn ran.
    st = json.loads(cli("status", "--json", cwd=source_tree, check=True).stdout)
    hosts = {ln["lane"]: ln["host"] for ln in st["lanes"]}
    assert hosts["lane-1"] is None and hosts["lane-2"].endswith("-lane-2")
    text = cli("status", cwd=source_tree, check=True).stdout
    assert f"ok, last turn on {hosts['lane-3']}" in text

    # The run ended: its copies on the nodes went with it.
    run_id = st["id"]
    assert nodes.placed and not list((tmp_path / "nodes").glob(f"*/{run_id}*"))

    # The head's copies hold what each recorded turn wrote there.
    run_dir = tmp_path / "fc-home" / "runs" / run_id
    for n in ("lane-2", "lane-3"):
        notes = (run_dir / "lanes" / n / "workspace" / "notes.txt").read_text()
        for e in valid:
            if e["lane"] == n:
                assert f"{e['actor']} turn {e['payload']['turn']}\n" in notes


# Every turn writes log/TURN.txt when `log` is a directory (or not there yet) and says what
# `log` was when it started; lane-2's second turn also declares an artifact.
LOG_LANE = """\
python3 - <<'PY'
import json, os
lane, turn = os.environ["FLAMECHASE_LANE"], os.environ["FLAMECHASE_TURN"]
log = (sorted(os.listdir("log")) if os.path.isdir("log")
       else open("log").read() if os.path.exists("log") else None)
if log is None or isinstance(log, list):
    os.makedirs("log", exist_ok=True)
    open("log/" + turn + ".txt", "w").write(turn)
facts = {"ws": os.environ["FLAMECHASE_WORKSPACE"], "log": log}
report = {"status": "progress", "summary": json.dumps(facts)}
if lane == "lane-2" and turn == "2":
    open(os.environ["FLAMECHASE_ARTIFACTS"] + "/fault.diff", "w").write("lost")
    report.update(status="deliverable_ready", deliverable={
        "title": "a patch", "integration_notes": "apply it",
        "artifacts": [{"path": "fault.diff", "description": "the patch"}]})
json.dump(report, open(os.environ["FLAMECHASE_REPORT"], "w"))
PY
"""


class SpoiledCopy(NearbyNodes):
    """Before lane-2's second turn, the directory `log` of the head's copy of its place
    becomes a file: what the turn writes under log/ on its node cannot land there."""

    async def run(self, job: TurnJob) -> TurnResult:
        r = job.request
        if head.is_remote(job) and (r.lane, r.turn, r.attempt) == ("lane-2", 2, 1):
            shutil.rmtree(r.workspace / "log")
            (r.workspace / "log").write_text("the head's own\n")
        return await super().run(job)


def test_a_turn_whose_changes_cannot_land_fails_and_its_lane_restarts_from_the_head(
    source_tree: Path, tmp_path: Path
) -> None:
    plan = actor(tmp_path, "plan.sh", PLAN)
    lane = actor(tmp_path, "lane.sh", LOG_LANE)
    agents: list[tuple[str | None, str]] = [
        ("coordinator", f"exec:{plan}"),
        *((f"lane_{n}_actor_{x}", f"exec:{lane}") for n in (1, 2) for x in "ab"),
    ]
    prep = prepare(
        RunRequest(
            flow=load_flow("parallel_flame_chase"),
            agents=agents,
            task="do it",
            workspace=source_tree,
            warn=lambda _t: None,
            settings={
                "lanes": "2",
                "budget.turns": "9",
                "rest_seconds": "0.05",
                "lane_refresh": "never",  # its lanes' logs are the copies' own, unrefreshed
            },
        )
    )
    nodes = SpoiledCopy(LocalExecutor(), tmp_path / "nodes")
    end = asyncio.run(Engine(prep, None, executor=nodes).run())
    assert end.status == "finished", end.message
    evs = events(source_tree)

    # The turn is a failed turn of its lane, with the reason.
    failed = [e for e in evs if e["kind"] == "turn_failed"]
    assert [(e["lane"], e["payload"]["turn"]) for e in failed] == [("lane-2", 2)]
    error = failed[0]["payload"]["error"]
    assert error.startswith("what lane-2's turn changed could not be brought back from its node: ")
    assert "passes through" in error and "which is not a directory" in error

    # Its deliverable went with it: nothing of it reached the run.
    run_id = json.loads(cli("status", "--json", cwd=source_tree, check=True).stdout)["id"]
    run_dir = tmp_path / "fc-home" / "runs" / run_id
    assert not any(e["kind"] == "report_published" and e["payload"].get("artifacts") for e in evs)
    assert not list(run_dir.rglob("fault.diff"))

    # The lane went on, on a host started afresh from the head's copy: `log` is the head's
    # file there, not the node's directory with the failed turn's log/2.txt.
    after = [
        _facts(e)
        for e in evs
        if e["kind"] == "turn_valid" and e["lane"] == "lane-2" and e["seq"] > failed[0]["seq"]
    ]
    assert after and after[0]["log"] == "the head's own\n"
    assert nodes.placed == ["n000-lane-2", "n001-lane-2"]
    assert all(f["ws"].startswith(str(tmp_path / "nodes" / "n001-lane-2")) for f in after)
    assert (run_dir / "lanes" / "lane-2" / "workspace" / "log").read_text() == ("the head's own\n")


def test_a_path_map_moves_whole_paths_only(tmp_path: Path) -> None:
    m = PathMap(Path("/h/runs/r1"), Path("/n/r1"))
    assert m.path(Path("/h/runs/r1/lanes/lane-2")) == Path("/n/r1/lanes/lane-2")
    assert m.path(Path("/h/runs/r10/x")) == Path("/h/runs/r10/x")
    assert m.text("cd /h/runs/r1/lanes and not /h/runs/r10 or /h/runs/r1.") == (
        "cd /n/r1/lanes and not /h/runs/r10 or /n/r1."
    )
    assert m.reverse().text(m.text("/h/runs/r1/x")) == "/h/runs/r1/x"
