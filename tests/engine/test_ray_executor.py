"""`--executor ray` on a real two-worker Ray cluster on loopback: parallel_flame_chase with
scripted actors, lanes 2..3 on the worker nodes, one node killed mid-turn.

Marked `ray` (run with `-m ray`; CI installs flamechase[ray] and runs them): a cluster takes
half a minute to start on a small machine.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import flamechase
from tests.engine import ray_cluster
from tests.helpers import (
    FLAMECHASE,
    REPORT_OK,
    actor,
    cli,
    events,
    send_signal,
    wait_for_process,
)

pytest.importorskip("ray", reason="needs flamechase[ray]")
pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]

HOLD = "sleep 613.5"  # the one turn the test kills a node under

PLAN = """\
python3 - <<'PY'
import json, os
lanes = os.environ["FLAMECHASE_LANES"].split(",")
json.dump({"lanes": [{"lane": n, "mission": {"title": n, "objective": "o",
           "success_criteria": ["c"]}} for n in lanes]}, open(os.environ["FLAMECHASE_REPORT"], "w"))
PY
"""

# Every turn: a line in notes.txt; lane-2's second turn (first attempt) hangs until its node
# is killed; lane-3's first turn publishes an artifact and a score. The report says where
# the turn ran, what notes.txt held, whether the artifacts in its inbox verified, and whether
# it could write the user's tree (it must not: the same jail as here).
LANE = """\
echo "$FLAMECHASE_ROLE turn $FLAMECHASE_TURN" >> notes.txt
if [ "$FLAMECHASE_LANE" = lane-2 ] && [ "$FLAMECHASE_TURN" = 2 ] \\
   && [ "$FLAMECHASE_ATTEMPT" = 1 ]; then
  {hold}
fi
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
facts = {{"ws": os.environ["FLAMECHASE_WORKSPACE"], "notes": open("notes.txt").read(),
         "blobs": blobs, "escaped": escaped}}
report = {{"status": "progress", "summary": json.dumps(facts)}}
if lane == "lane-3" and turn == 1:
    root = os.environ["FLAMECHASE_ARTIFACTS"]
    os.makedirs(root + "/pkg", exist_ok=True)
    open(root + "/pkg/patch.diff", "w").write("diff from lane 3\\n")
    open("score.txt", "w").write("SCORE: 7\\n")
    report.update(status="deliverable_ready", deliverable={{
        "title": "a patch", "integration_notes": "apply it",
        "artifacts": [{{"path": "pkg/patch.diff", "description": "the patch"}}]}},
        submission={{"title": "t", "metric": "score", "value": 7, "direction": "minimize",
                    "evaluator": "cat score.txt", "evidence": ["e"]}})
json.dump(report, open(os.environ["FLAMECHASE_REPORT"], "w"))
PY
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[ray_cluster.LoopbackCluster]:
    c = ray_cluster.LoopbackCluster(
        head={"head_slot": 1}, workers={"node-b": {"lane_slot": 2}, "node-c": {"lane_slot": 2}}
    )
    try:
        yield c
    finally:
        c.stop()


def _facts(e: dict[str, Any]) -> dict[str, Any]:
    facts: dict[str, Any] = json.loads(e["payload"]["result"]["summary"])
    return facts


def _turns(evs: list[dict[str, Any]], lane: str, kind: str) -> list[dict[str, Any]]:
    return [e for e in evs if e["kind"] == kind and e["lane"] == lane]


def _published(evs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        e
        for e in evs
        if e["kind"] == "report_published"
        and e["lane"] == "lane-3"
        and e["payload"].get("artifacts")
    ]


def _node_of(path: str, cluster: ray_cluster.LoopbackCluster) -> str:
    m = re.search(r"/nodes/([0-9a-f]{12})/", path)
    assert m, f"{path} is not a node's copy"
    return next(name for name, nid in cluster.nodes.items() if nid.startswith(m.group(1)))


def _hold_pid() -> int:
    out = subprocess.run(["pgrep", "-f", f"^{HOLD}$"], capture_output=True, text=True)
    return int(out.stdout.split()[0])


def _workspace_of(pid: int) -> str:
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return next(
        v.split(b"=", 1)[1].decode() for v in environ if v.startswith(b"FLAMECHASE_WORKSPACE=")
    )


def _wait_events(cwd: Path, env: dict[str, str], done: Any, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not done(events(cwd)):
        assert time.monotonic() < deadline, "the run never got there"
        time.sleep(0.5)


def test_lanes_run_on_nodes_and_a_lost_node_costs_one_turn(
    cluster: ray_cluster.LoopbackCluster, source_tree: Path, tmp_path: Path
) -> None:
    plan = actor(tmp_path, "plan.sh", PLAN)
    lane = actor(tmp_path, "lane.sh", LANE.format(hold=HOLD, source=source_tree))
    agents = ",".join(f"lane_{n}_actor_{x}=exec:{lane}" for n in (1, 2, 3) for x in "ab")
    env = ray_cluster.env()
    proc = subprocess.Popen(
        [
            *FLAMECHASE,
            "exec",
            "-f",
            "parallel_flame_chase",
            "--executor",
            f"ray={cluster.address}",
            "-a",
            f"coordinator=exec:{plan}",
            "-a",
            agents,
            "-p",
            "budget.turns=400,rest_seconds=0.3,lane_resources.lane_slot=1,"
            "lane_resources.cpus=0,evaluator=cat score.txt; pwd,"
            r"metric_pattern=SCORE: (\d+)",
            "do it",
        ],
        cwd=source_tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        wait_for_process(f"^{HOLD}$", timeout=240)
        victim = _node_of(_workspace_of(_hold_pid()), cluster)
        # Lane 3 may share the node: its artifact and score are in before the node goes.
        _wait_events(
            source_tree,
            env,
            lambda evs: _published(evs) and any(e["kind"] == "measured" for e in evs),
        )
        cluster.kill(victim)

        def rebuilt(evs: list[dict[str, Any]]) -> bool:
            failed = _turns(evs, "lane-2", "turn_failed")
            return bool(failed) and any(
                e["seq"] > failed[0]["seq"] for e in _turns(evs, "lane-2", "turn_valid")
            )

        _wait_events(source_tree, env, rebuilt)
        proc.send_signal(signal.SIGINT)  # a graceful stop: remote turns under way finish
        _out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err[-3000:]
    evs = events(source_tree)

    # The lost turn is a failed turn of its lane, with the reason.
    lost = _turns(evs, "lane-2", "turn_failed")[0]["payload"]
    assert lost["turn"] == 2
    assert "lane-2's node was lost mid-turn" in lost["error"]

    # Lanes 2 and 3 ran on the worker nodes; lane 1 here, in the user's tree.
    remote = [e for n in ("lane-2", "lane-3") for e in _turns(evs, n, "turn_valid")]
    assert remote and all(_node_of(_facts(e)["ws"], cluster) in cluster.nodes for e in remote)
    assert {_facts(e)["ws"] for e in _turns(evs, "lane-1", "turn_valid")} == {str(source_tree)}

    # The next turn ran on a live node, from the last recorded state: turn 1's line is
    # there, the lost turn's is not.
    after = [e for e in _turns(evs, "lane-2", "turn_valid") if e["payload"]["turn"] > 2]
    first = _facts(after[0])
    assert _node_of(first["ws"], cluster) != victim
    assert "lane_2_actor_a turn 1" in first["notes"]
    assert "lane_2_actor_b turn 2" not in first["notes"]

    # Same jail as here: no remote turn could write the user's tree.
    assert all(_facts(e)["escaped"] is False for e in remote)
    assert not list(source_tree.glob("escape-*"))

    # Lane 3's artifact came back frozen; lane 2 received it and it verified there.
    published = _published(evs)
    assert published, "lane 3's deliverable was not published"
    extracted = tmp_path / "extracted"
    got = cli(
        "artifacts",
        "last",
        published[0]["payload"]["report_id"],
        "--extract",
        str(extracted),
        cwd=source_tree,
        check=True,
    )
    assert (extracted / "pkg" / "patch.diff").read_text() == "diff from lane 3\n", got.stdout
    received = [b for e in _turns(evs, "lane-2", "turn_valid") for b in _facts(e)["blobs"]]
    assert received and all(received)

    # The score was measured by the runtime on the head, in its own copy of the baseline with
    # lane 3's candidate laid over it (the frozen evaluator), never in the node's copy.
    measured = [e for e in evs if e["kind"] == "measured"]
    assert measured and measured[0]["payload"]["receipt"]["value"] == 7
    assert "/nodes/" not in measured[0]["payload"]["receipt"]["output"]

    # The head's copy of lane 2 holds what its recorded turns wrote.
    run_id = json.loads(cli("status", "--json", cwd=source_tree, check=True).stdout)["id"]
    run_dir = Path(os.environ["FLAMECHASE_HOME"]) / "runs" / run_id
    notes = (run_dir / "lanes" / "lane-2" / "workspace" / "notes.txt").read_text()
    for e in _turns(evs, "lane-2", "turn_valid"):
        assert f"{e['actor']} turn {e['payload']['turn']}" in notes
    assert "lane_2_actor_b turn 2\n" not in notes


HELD = "sleep 615.5"
# `flamechase` as another release would run it: only the driver believes it is 0.0.0-other.
OTHER_VERSION = [
    sys.executable,
    "-c",
    "import runpy, flamechase; "
    "flamechase.__version__ = '0.0.0-other'; "
    "runpy.run_module('flamechase', run_name='__main__', alter_sys=True)",
]


def _lane_actors(cluster: ray_cluster.LoopbackCluster) -> list[int]:
    """This cluster's LaneActor processes (Ray titles an actor's worker
    `ray::LaneActor[.method]`; every process of the cluster has its state home)."""
    mine = f"FLAMECHASE_HOME={cluster.tmp / 'home'}".encode()
    out = subprocess.run(["pgrep", "-f", "^ray::LaneActor"], capture_output=True, text=True)
    found = []
    for pid in map(int, out.stdout.split()):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile
            continue
        if mine in environ:
            found.append(pid)
    return found


def test_a_node_with_another_version_fails_the_turn_and_keeps_nothing(
    cluster: ray_cluster.LoopbackCluster, source_tree: Path, tmp_path: Path
) -> None:
    """The lane's actor is ended once it says which version its node runs, the turn fails
    saying what to do, and nothing of the run is written on the node. Lane 1 holds the run
    open meanwhile: the actor is seen gone while its driver lives (a driver's exit would end
    its actors anyway), and the budget (two turns) leaves lane 2 one turn."""
    plan = actor(tmp_path, "plan.sh", PLAN)
    lane = actor(tmp_path, "lane.sh", f'[ "$FLAMECHASE_LANE" = lane-1 ] && {HELD}\n' + REPORT_OK)
    agents = ",".join(f"lane_{n}_actor_{x}=exec:{lane}" for n in (1, 2) for x in "ab")
    env = ray_cluster.env()
    proc = subprocess.Popen(
        [
            *OTHER_VERSION,
            "exec",
            "-f",
            "parallel_flame_chase",
            "--executor",
            f"ray={cluster.address}",
            "-a",
            f"coordinator=exec:{plan}",
            "-a",
            agents,
            "-p",
            "lanes=2,budget.turns=2,rest_seconds=0.05,lane_resources.lane_slot=1,"
            "lane_resources.cpus=0",
            "do it",
        ],
        cwd=source_tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        wait_for_process(f"^{HELD}$", timeout=120)
        _wait_events(source_tree, env, lambda evs: _turns(evs, "lane-2", "turn_failed"), 120)
        deadline = time.monotonic() + 60
        while _lane_actors(cluster):
            assert time.monotonic() < deadline, "the refused lane's actor was left running"
            time.sleep(0.2)
        assert proc.poll() is None, "the run ended before its actors were looked at"
        send_signal(proc, signal.SIGINT)
        send_signal(proc, signal.SIGINT)  # the second cuts lane 1's turn
        _out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err[-3000:]
    evs = events(source_tree)

    assert not _turns(evs, "lane-2", "turn_valid")
    [failed] = _turns(evs, "lane-2", "turn_failed")
    error = failed["payload"]["error"]
    m = re.fullmatch(
        r"lane-2's node ([0-9a-f]{12}) \(.+\) runs flamechase (\S+), this "
        r"machine 0\.0\.0-other; install the same version on every node",
        error,
    )
    assert m, error
    assert m.group(2) == flamechase.__version__
    assert any(nid.startswith(m.group(1)) for nid in cluster.nodes.values())

    run_id = json.loads(cli("status", "--json", cwd=source_tree, check=True).stdout)["id"]
    assert not list((cluster.tmp / "home" / "nodes").glob(f"*/{run_id}"))


CUT = "sleep 614.5"


def test_a_second_signal_cuts_a_remote_turn(
    cluster: ray_cluster.LoopbackCluster, source_tree: Path, tmp_path: Path
) -> None:
    """Stop behaves as here: the first signal lets turns finish, the second cuts them, on
    whatever node they run, and nothing of the cut turn is left running."""
    plan = actor(tmp_path, "plan.sh", PLAN)
    body = f'[ "$FLAMECHASE_LANE" = lane-2 ] && {CUT}\n' + REPORT_OK
    lane = actor(tmp_path, "lane.sh", body)
    agents = ",".join(f"lane_{n}_actor_{x}=exec:{lane}" for n in (1, 2) for x in "ab")
    proc = subprocess.Popen(
        [
            *FLAMECHASE,
            "exec",
            "-f",
            "parallel_flame_chase",
            "--executor",
            f"ray={cluster.address}",
            "-a",
            f"coordinator=exec:{plan}",
            "-a",
            agents,
            "-p",
            "lanes=2,budget.turns=400,rest_seconds=0.3,lane_resources.lane_slot=1,"
            "lane_resources.cpus=0",
            "do it",
        ],
        cwd=source_tree,
        env=ray_cluster.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        wait_for_process(f"^{CUT}$", timeout=240)
        send_signal(proc, signal.SIGINT)
        send_signal(proc, signal.SIGINT)
        _out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err[-3000:]
    cut = [
        e for e in events(source_tree) if e["kind"] == "turn_interrupted" and e["lane"] == "lane-2"
    ]
    assert cut and cut[0]["payload"]["turn"] == 1
    gone = subprocess.run(["pgrep", "-f", f"^{CUT}$"], capture_output=True)
    assert gone.returncode == 1, "the cut turn's process outlived it"


def test_a_lane_no_node_can_take_fails_its_turns_and_the_run_goes_on(
    cluster: ray_cluster.LoopbackCluster, source_tree: Path, tmp_path: Path
) -> None:
    plan = actor(tmp_path, "plan.sh", PLAN)
    lane = actor(tmp_path, "lane.sh", REPORT_OK)
    agents = ",".join(f"lane_{n}_actor_{x}=exec:{lane}" for n in (1, 2) for x in "ab")
    out = cli(
        "exec",
        "-f",
        "parallel_flame_chase",
        "--executor",
        f"ray={cluster.address}",
        "-a",
        f"coordinator=exec:{plan}",
        "-a",
        agents,
        "-p",
        "lanes=2,budget.turns=8,rest_seconds=0.05,lane_resources.cpus=0,"
        "lane_resources.no_such_node=1,ray.placement_timeout=2",
        "do it",
        cwd=source_tree,
        env=ray_cluster.env(),
        timeout=240,
    )
    assert out.returncode in (0, 3), out.stderr[-3000:]
    failed = [
        e["payload"]["error"]
        for e in events(source_tree)
        if e["kind"] == "turn_failed" and e["lane"] == "lane-2"
    ]
    assert failed and all("could not be placed" in f and "no_such_node 1" in f for f in failed)
    assert any(e["kind"] == "turn_valid" and e["lane"] == "lane-1" for e in events(source_tree))


TREE_LANE = """\
echo "$FLAMECHASE_ROLE turn $FLAMECHASE_TURN" >> notes.txt
python3 - <<'PY'
import json, os
try:
    open("{source}/escape", "w").write("x")
    escaped = True
except OSError:
    escaped = False
facts = {{"ws": os.environ["FLAMECHASE_WORKSPACE"], "escaped": escaped,
          "git": os.path.isdir(".git")}}
json.dump({{"status": "progress", "summary": json.dumps(facts)}},
          open(os.environ["FLAMECHASE_REPORT"], "w"))
PY
"""


def test_lane_one_runs_on_a_node_and_its_turns_come_back_as_commits(
    cluster: ray_cluster.LoopbackCluster, source_tree: Path, tmp_path: Path
) -> None:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(source_tree), "-c", "user.name=u", "-c", "user.email=u@x", *args],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-qm", "the user's work")
    head_commit = git("rev-parse", "HEAD")
    lane = actor(tmp_path, "lane.sh", TREE_LANE.format(source=source_tree))
    out = cli(
        "exec",
        "-f",
        "flame_chase",
        "--executor",
        f"ray={cluster.address}",
        "-a",
        f"exec:{lane}",
        "-a",
        f"exec:{lane}",
        "-p",
        "budget.turns=3,rest_seconds=0.05,lane_resources.cpus=0,"
        "lane_resources.lane_slot=1,ray.lane_1=node",
        "do it",
        cwd=source_tree,
        env=ray_cluster.env(),
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "lane-1 in a git copy of your tree there" in out.stdout + out.stderr
    valid = [e for e in events(source_tree) if e["kind"] == "turn_valid"]
    assert len(valid) == 3
    facts = [_facts(e) for e in valid]
    # Every turn ran on a worker node, in a git work tree there, jailed.
    assert {_node_of(f["ws"], cluster) for f in facts} <= {"node-b", "node-c"}
    assert all(f["git"] and f["escaped"] is False for f in facts)
    assert not (source_tree / "escape").exists()
    # Each turn landed in the user's tree, and as one commit on the lane's chain.
    assert (source_tree / "notes.txt").read_text() == (
        "first_chaser turn 1\nsecond_chaser turn 2\nfirst_chaser turn 3\n"
    )
    run_id = json.loads(cli("status", "--json", cwd=source_tree, check=True).stdout)["id"]
    chain = git("log", "--format=%s", f"refs/flamechase/{run_id}/lane-1").splitlines()
    assert [c.split(" on node")[0] for c in chain[:3]] == [
        "lane-1 turn 3 (first_chaser)",
        "lane-1 turn 2 (second_chaser)",
        "lane-1 turn 1 (first_chaser)",
    ]
    assert git("rev-parse", "HEAD") == head_commit


def test_a_cluster_of_another_ray_is_refused_before_ray_joins_it(
    cluster: ray_cluster.LoopbackCluster, source_tree: Path, tmp_path: Path
) -> None:
    """The driver believes it runs Ray 2.0.0: refused in one line, exit 2, nothing written
    (Ray's own check would come later, after its retries, in a traceback)."""
    a = actor(tmp_path, "a.sh", REPORT_OK)
    other_ray = [
        sys.executable,
        "-c",
        "import runpy, ray; ray.__version__ = '2.0.0'; "
        "runpy.run_module('flamechase', run_name='__main__', alter_sys=True)",
    ]
    out = subprocess.run(
        [
            *other_ray,
            "exec",
            "-f",
            "flame_chase",
            "--executor",
            f"ray={cluster.address}",
            "-a",
            f"exec:{a}",
            "-a",
            f"exec:{a}",
            "-p",
            "budget.turns=2",
            "x",
        ],
        cwd=source_tree,
        env=ray_cluster.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2, out.stderr
    [line] = out.stderr.strip().splitlines()
    ray_version = json.loads(
        subprocess.run(
            [sys.executable, "-c", "import json, ray; print(json.dumps(ray.__version__))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert f"runs Ray {ray_version}, this machine Ray 2.0.0" in line
    assert not (Path(os.environ["FLAMECHASE_HOME"]) / "runs").exists()
