"""A node that dies as real machines die: its raylet SIGKILLed and reaped, its workers left to
notice on their own, while Ray still lists the node alive for some seconds. Each lane on it
loses exactly the turn it was taking, never the lane: the next turn runs on the surviving
node from the lane's last recorded state, no lane is held, and the run resumes here with
`--executor local`. (The accounting alone, without a cluster: tests/flow/test_lanes.py.)"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engine import ray_cluster
from tests.engine.test_ray_executor import (
    PLAN,
    _facts,
    _hold_pid,
    _node_of,
    _turns,
    _wait_events,
    _workspace_of,
)
from tests.helpers import FLAMECHASE, actor, cli, events, wait_for_process

pytest.importorskip("ray", reason="needs flamechase[ray]")
pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.timeout(900)]

HOLD = "sleep 613.5"  # matched by _hold_pid: the turn under which the node dies

LANE = f"""\
echo "$FLAMECHASE_ROLE turn $FLAMECHASE_TURN" >> notes.txt
if [ "$FLAMECHASE_LANE" = lane-2 ] && [ "$FLAMECHASE_TURN" = 2 ] \\
   && [ "$FLAMECHASE_ATTEMPT" = 1 ]; then
  {HOLD}
fi
python3 - <<'PY'
import json, os
facts = {{"ws": os.environ["FLAMECHASE_WORKSPACE"], "notes": open("notes.txt").read()}}
json.dump({{"status": "progress", "summary": json.dumps(facts)}},
          open(os.environ["FLAMECHASE_REPORT"], "w"))
PY
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[ray_cluster.LoopbackCluster]:
    # Lanes ask for one `lane_slot`: none fits the head; each worker could take both lanes,
    # so the lost node's lanes have somewhere to go (Ray spreads them one per node first).
    c = ray_cluster.LoopbackCluster(
        head={"head_slot": 1}, workers={"node-b": {"lane_slot": 2}, "node-c": {"lane_slot": 2}}
    )
    try:
        yield c
    finally:
        c.stop()


def _argv(executor: str, agents: str, plan: Path, budget: int, *extra: str) -> list[str]:
    return [
        *FLAMECHASE,
        "exec",
        "-f",
        "parallel_flame_chase",
        "--executor",
        executor,
        "-a",
        f"coordinator=exec:{plan}",
        "-a",
        agents,
        "-p",
        f"lanes=3,budget.turns={budget},rest_seconds=0.3",
        *extra,
        "do it",
    ]


def test_a_node_killed_mid_turn_costs_each_of_its_lanes_one_turn_and_never_the_lane(
    cluster: ray_cluster.LoopbackCluster, source_tree: Path, tmp_path: Path
) -> None:
    plan = actor(tmp_path, "plan.sh", PLAN)
    lane = actor(tmp_path, "lane.sh", LANE)
    agents = ",".join(f"lane_{n}_actor_{x}=exec:{lane}" for n in (1, 2, 3) for x in "ab")
    env = ray_cluster.env()
    remote = ("-p", "lane_resources.lane_slot=1,lane_resources.cpus=0")
    proc = subprocess.Popen(
        _argv(f"ray={cluster.address}", agents, plan, 400, *remote),
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
        cluster.kill(victim, how="raylet")

        def recovered(evs: list[dict[str, Any]]) -> bool:
            """Every lane that failed a turn took a valid one after it, twice over (a second
            host on the dead node would have failed by then)."""
            lanes = {e["lane"] for e in evs if e["kind"] == "turn_failed"}
            return "lane-2" in lanes and all(
                len(
                    [
                        v
                        for v in _turns(evs, n, "turn_valid")
                        if v["seq"] > _turns(evs, n, "turn_failed")[0]["seq"]
                    ]
                )
                >= 2
                for n in lanes
            )

        _wait_events(source_tree, env, recovered, timeout=300)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err[-3000:]
    # Ray's own lines never reached the terminal, the lost node's included: only the run's.
    [said] = err.strip().splitlines()
    assert said.startswith("flamechase: run ") and "stopped" in said
    evs = events(source_tree)

    # One failed turn for each lane that was on the node, the node's loss its reason.
    failed = [e for e in evs if e["kind"] == "turn_failed"]
    assert {e["lane"] for e in failed} <= {"lane-2", "lane-3"}
    for lane_name in {e["lane"] for e in failed}:
        [one] = _turns(evs, lane_name, "turn_failed")
        assert one["payload"]["node_lost"] is True, one["payload"]
        assert f"{lane_name}'s node was lost mid-turn" in one["payload"]["error"]
        # ... and the lane went on, on the other node, from its last recorded state.
        after = [v for v in _turns(evs, lane_name, "turn_valid") if v["seq"] > one["seq"]]
        assert after and all(_node_of(_facts(v)["ws"], cluster) != victim for v in after)
    [lost] = _turns(evs, "lane-2", "turn_failed")
    assert lost["payload"]["turn"] == 2
    first = _facts(next(v for v in _turns(evs, "lane-2", "turn_valid") if v["seq"] > lost["seq"]))
    assert "lane_2_actor_a turn 1" in first["notes"]
    assert "lane_2_actor_b turn 2" not in first["notes"]
    assert not [e for e in evs if e["kind"] == "lane_held"]

    # The session ended: the surviving node's copies of the run went with it (the dead
    # node's stay where it died, with nothing there to remove them).
    st = json.loads(cli("status", "--json", cwd=source_tree, check=True).stdout)
    dead = cluster.nodes[victim][:12]
    left = (cluster.tmp / "home" / "nodes").glob(f"*/{st['id']}*")
    assert [p for p in left if p.parent.name != dead] == []
    # `status` says where each lane's last turn ran.
    hosts = {ln["lane"]: ln["host"] for ln in st["lanes"]}
    assert hosts["lane-1"] is None and "node " in hosts["lane-2"]

    # The run resumes here, every lane on this machine, from the same recorded state.
    counted = sum(
        1 for e in evs if e["kind"] in ("turn_valid", "turn_failed") and e["payload"]["counted"]
    )
    again = cli(
        *_argv("local", agents, plan, counted + 3, "--resume")[3:],
        cwd=source_tree,
        env=env,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    later = events(source_tree)[len(evs) :]
    local = [e for e in later if e["kind"] == "turn_valid"]
    assert local and all(e["payload"].get("host") is None for e in local)
    assert not [e for e in later if e["kind"] in ("lane_held", "turn_failed")]
