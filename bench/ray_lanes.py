"""The Ray executor on a loopback cluster: what a lane's copy costs to send, and what a remote
turn costs over a local one.

    python bench/ray_lanes.py [--turns 40] [--skip-copies] [--skip-turns] [--skip-tree]

Starts a head node and one worker node (tests/engine/ray_cluster.py: Ray's cluster utility,
127.0.0.1 only), then:

copies  for three trees (the bundled sample; 5,000 source-like text files, ~60 MB; 100 files of
        random bytes, 100 MB): pack time, raw and packed size, and the time from `ray.put` to
        the copy materialised on the worker node by a lane's actor (object store transfer +
        unpack), with the node's own unpack time.
turns   parallel_flame_chase, 2 lanes, instant `exec:` actors, budget.turns=3 x --turns,
        `--executor local` then `--executor ray=ADDRESS`: lane 2's turns (the lane that goes
        to the worker node), each from `turn_started` to its end event (ms resolution), median
        and p90; the first remote turn (placing the actor, sending the copy) on its own.
        Then the ray run again in this process, for the executor's own record of where a
        remote turn's time goes (round trip seen by the head, time on the node, the agent).
tree    lane 1 on the node (`ray.lane_1=node`, backed by git): for the sample and the 5,000
        file tree, each a git repository of one commit plus an uncommitted edit, the first
        copy (snapshot and bundle here, fetch and checkout there) and its bundle's size; then
        flame_chase on the sample repository, `--turns` turns, lane 1 here and then on the
        node: the median turn from start to end event (each remote turn's snapshot, bundle,
        commit on the node and landing included).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.engine import ray_cluster  # noqa: E402

os.environ.update(ray_cluster.LOOPBACK)  # before Ray is imported: this driver joins on loopback

PLAN = """#!/bin/sh
python3 - <<'PY'
import json, os
lanes = os.environ["FLAMECHASE_LANES"].split(",")
json.dump({"lanes": [{"lane": n, "mission": {"title": n, "objective": "o",
           "success_criteria": ["c"]}} for n in lanes]}, open(os.environ["FLAMECHASE_REPORT"], "w"))
PY
"""
ACTOR = """#!/bin/sh
echo "$FLAMECHASE_ROLE $FLAMECHASE_TURN" >> notes.txt
echo '{"status":"progress","summary":"did a turn"}' > "$FLAMECHASE_REPORT"
"""


def text_tree(root: Path, files: int) -> None:
    line = "def function_{i}(value):\n    return value * {i} + len('{i}')  # a comment\n"
    for i in range(files):
        d = root / f"pkg{i // 200:03d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"mod{i:05d}.py").write_text("".join(line.format(i=i * 1000 + k) for k in range(160)))


def random_tree(root: Path, files: int, mb: int) -> None:
    root.mkdir(parents=True)
    for i in range(files):
        (root / f"blob{i:04d}.bin").write_bytes(os.urandom(mb * 2**20 // files))


def raw_size(root: Path) -> tuple[int, int]:
    total = count = 0
    for p in root.rglob("*"):
        if p.is_file() and not p.is_symlink():
            total += p.stat().st_size
            count += 1
    return total, count


def copies(cluster: ray_cluster.LoopbackCluster, work: Path) -> list[dict[str, Any]]:
    import ray

    from flamechase.engine.remote import shipping
    from flamechase.engine.remote.ray_executor import LaneActor

    sample = Path(__import__("flamechase").__file__).parent / "sample"
    trees = {
        "sample": work / "t-sample" / "place",
        "text-5000": work / "t-text" / "place",
        "random-100MB": work / "t-random" / "place",
    }
    shutil.copytree(sample, trees["sample"])
    text_tree(trees["text-5000"], 5000)
    random_tree(trees["random-100MB"], 100, 100)
    ray.init(address=cluster.address, log_to_driver=False, logging_level="ERROR")
    out = []
    try:
        for name, place in trees.items():
            actor = LaneActor.options(num_cpus=0, resources={"lane_slot": 1}).remote(
                f"bench-{name}", str(place.parent)
            )
            ray.get(actor.describe.remote())
            raw, files = raw_size(place)
            t0 = time.monotonic()
            data, entries = shipping.pack_tree(place)
            packed = time.monotonic() - t0
            t1 = time.monotonic()
            ref = ray.put(data)
            done = ray.get(actor.materialise.remote(str(place), ref))
            sent = time.monotonic() - t1
            out.append(
                {
                    "tree": name,
                    "files": files,
                    "raw_mb": round(raw / 2**20, 1),
                    "packed_mb": round(len(data) / 2**20, 1),
                    "entries": entries,
                    "pack_s": round(packed, 2),
                    "transfer_and_unpack_s": round(sent, 2),
                    "node_unpack_s": round(done["seconds"], 2),
                }
            )
            print(json.dumps(out[-1]), flush=True)
            ray.kill(actor)
    finally:
        ray.shutdown()
    return out


def _at(e: dict[str, Any]) -> float:
    return datetime.fromisoformat(e["at"].replace("Z", "+00:00")).timestamp()


def _events_of(
    proc: subprocess.CompletedProcess[str], executor: str, src: Path, env: dict[str, str]
) -> list[dict[str, Any]]:
    """The events of the run `proc` made in `src` (it must have exited 0)."""
    if proc.returncode != 0:
        raise SystemExit(f"{executor}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    return [
        json.loads(x)
        for x in subprocess.run(
            [sys.executable, "-m", "flamechase", "events", "last", "--json"],
            cwd=src,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    ]


def run_turns(executor: str, turns: int, work: Path, extra: str) -> dict[str, Any]:
    kind = executor.partition("=")[0]
    src = work / f"src-{kind}"
    shutil.copytree(Path(__import__("flamechase").__file__).parent / "sample", src)
    home = work / f"home-{kind}"
    plan, lane = work / "plan.sh", work / "actor.sh"
    plan.write_text(PLAN)
    lane.write_text(ACTOR)
    plan.chmod(0o755)
    lane.chmod(0o755)
    agents = ",".join(f"lane_{n}_actor_{x}=exec:{lane}" for n in (1, 2) for x in "ab")
    env = {**ray_cluster.env(), "FLAMECHASE_HOME": str(home)}
    t0 = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "flamechase",
            "exec",
            "-f",
            "parallel_flame_chase",
            "--executor",
            executor,
            "-a",
            f"coordinator=exec:{plan}",
            "-a",
            agents,
            # Lane 1 runs here from the start; lane 2's first remote turn waits for its actor
            # and copy: a budget of 3x leaves lane 2 about `turns` turns either way.
            "-p",
            f"lanes=2,budget.turns={3 * turns},rest_seconds=0.05{extra}",
            "bench",
        ],
        cwd=src,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    wall = time.monotonic() - t0
    evs = _events_of(proc, executor, src, env)
    starts = {
        (e["payload"]["turn"], e["payload"]["attempt"]): _at(e)
        for e in evs
        if e["kind"] == "turn_started" and e["lane"] == "lane-2"
    }
    ends = sorted(
        (
            e["payload"]["turn"],
            _at(e) - starts[(e["payload"]["turn"], e["payload"]["attempt"])],
            e["payload"]["duration"],
        )
        for e in evs
        if e["kind"] in ("turn_valid", "turn_failed") and e["lane"] == "lane-2"
    )
    if any(e["kind"] == "turn_failed" for e in evs):
        raise SystemExit(f"{executor}: a turn failed")
    later = sorted(s for t, s, _ in ends if t > 1)
    if len(later) < 5:
        raise SystemExit(f"{executor}: lane 2 took only {len(ends)} turns; raise --turns")
    return {
        "executor": kind,
        "lane2_turns": len(ends),
        "first_turn_ms": round(ends[0][1] * 1000),
        "median_turn_ms": round(statistics.median(later) * 1000),
        "p90_turn_ms": round(later[int(0.9 * (len(later) - 1))] * 1000),
        "median_agent_ms": round(statistics.median(d for t, _, d in ends if t > 1) * 1000),
        "run_wall_s": round(wall, 1),
    }


def breakdown(cluster: ray_cluster.LoopbackCluster, turns: int, work: Path) -> dict[str, Any]:
    """The same ray run in this process, to read where a remote turn's time goes (the
    executor's own record of each turn)."""
    import asyncio

    import ray

    from flamechase.engine.executor import LocalExecutor
    from flamechase.engine.loop import Engine
    from flamechase.engine.prepare import RunRequest, prepare
    from flamechase.engine.remote.options import LaneResources
    from flamechase.engine.remote.ray_executor import RayExecutor
    from flamechase.loader import load_flow

    src = work / "src-breakdown"
    shutil.copytree(Path(__import__("flamechase").__file__).parent / "sample", src)
    os.environ["FLAMECHASE_HOME"] = str(work / "home-breakdown")
    plan, lane = work / "plan.sh", work / "actor.sh"
    agents: list[tuple[str | None, str]] = [
        ("coordinator", f"exec:{plan}"),
        *((f"lane_{n}_actor_{x}", f"exec:{lane}") for n in (1, 2) for x in "ab"),
    ]
    prep = prepare(
        RunRequest(
            flow=load_flow("parallel_flame_chase"),
            agents=agents,
            task="bench",
            workspace=src,
            warn=lambda _t: None,
            settings={"lanes": "2", "budget.turns": str(3 * turns), "rest_seconds": "0.05"},
        )
    )
    ray.init(address=cluster.address, log_to_driver=False, logging_level="ERROR")
    executor = RayExecutor(LaneResources(cpus=0, custom=(("lane_slot", 1.0),)), LocalExecutor())
    asyncio.run(Engine(prep, None, executor=executor).run())
    rows = [r for r in executor.stats if r["kind"] == "turn"][1:]  # the first places the actor
    copy = next(r for r in executor.stats if r["kind"] == "copy")

    def med(key: str) -> float:
        return round(statistics.median(r[key] for r in rows) * 1000, 1)

    return {
        "remote_turns": len(rows),
        "head_round_trip_ms": med("seconds"),
        "on_node_ms": med("node_seconds"),
        "agent_ms": med("agent_seconds"),
        "inputs_bytes": statistics.median(r["inputs_bytes"] for r in rows),
        "delta_bytes": statistics.median(r["delta_bytes"] for r in rows),
        "io_bytes": statistics.median(r["io_bytes"] for r in rows),
        "first_copy": {
            k: copy[k] for k in ("bytes", "entries", "pack_seconds", "unpack_seconds", "seconds")
        },
    }


def _git_repo(root: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@x", *args],
            check=True,
            capture_output=True,
        )

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "bench")
    with open(
        next(p for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.parts), "a"
    ) as f:
        f.write("# an uncommitted edit\n")


def tree_copies(cluster: ray_cluster.LoopbackCluster, work: Path) -> list[dict[str, Any]]:
    import ray

    from flamechase.engine.remote import gitsync
    from flamechase.engine.remote.ray_executor import LaneActor

    sample = Path(__import__("flamechase").__file__).parent / "sample"
    trees = {"sample": work / "g-sample", "text-5000": work / "g-text"}
    shutil.copytree(sample, trees["sample"])
    text_tree(trees["text-5000"], 5000)
    ray.init(address=cluster.address, log_to_driver=False, logging_level="ERROR")
    out = []
    try:
        for name, tree in trees.items():
            _git_repo(tree)
            actor = LaneActor.options(num_cpus=0, resources={"lane_slot": 1}).remote(
                f"bench-tree-{name}", str(work / "run"), str(tree), "lane-1"
            )
            ray.get(actor.describe.remote())
            t0 = time.monotonic()
            sync = gitsync.TreeLink(tree, f"bench-{name}", "lane-1").sync(None, "bench")
            made = time.monotonic() - t0
            t1 = time.monotonic()
            done = ray.get(actor.materialise_tree.remote(sync))
            out.append(
                {
                    "tree": name,
                    "bundle_mb": round(len(sync.bundle) / 2**20, 2),
                    "snapshot_and_bundle_s": round(made, 2),
                    "transfer_and_checkout_s": round(time.monotonic() - t1, 2),
                    "node_checkout_s": round(done["seconds"], 2),
                }
            )
            print(json.dumps(out[-1]), flush=True)
            ray.kill(actor)
    finally:
        ray.shutdown()
    return out


def tree_turns(executor: str, turns: int, work: Path, extra: str) -> dict[str, Any]:
    kind = executor.partition("=")[0]
    src = work / f"tree-src-{kind}"
    shutil.copytree(Path(__import__("flamechase").__file__).parent / "sample", src)
    _git_repo(src)
    lane = work / "actor.sh"
    lane.write_text(ACTOR)
    lane.chmod(0o755)
    env = {**ray_cluster.env(), "FLAMECHASE_HOME": str(work / f"tree-home-{kind}")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "flamechase",
            "exec",
            "-f",
            "flame_chase",
            "--executor",
            executor,
            "-a",
            f"exec:{lane}",
            "-a",
            f"exec:{lane}",
            "-p",
            f"budget.turns={turns},rest_seconds=0.05{extra}",
            "bench",
        ],
        cwd=src,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    evs = _events_of(proc, executor, src, env)
    starts = {e["payload"]["turn"]: _at(e) for e in evs if e["kind"] == "turn_started"}
    spans = sorted(
        (e["payload"]["turn"], _at(e) - starts[e["payload"]["turn"]])
        for e in evs
        if e["kind"] == "turn_valid"
    )
    if len(spans) != turns:
        raise SystemExit(f"{executor}: {turns - len(spans)} turns were not valid")
    later = sorted(s for t, s in spans if t > 1)
    lines = (src / "notes.txt").read_text().count("\n")
    return {
        "executor": kind,
        "turns": len(spans),
        "first_turn_ms": round(spans[0][1] * 1000),
        "median_turn_ms": round(statistics.median(later) * 1000),
        "p90_turn_ms": round(later[int(0.9 * (len(later) - 1))] * 1000),
        "lines_landed_in_tree": lines,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=40)
    ap.add_argument("--skip-copies", action="store_true")
    ap.add_argument("--skip-turns", action="store_true")
    ap.add_argument("--skip-tree", action="store_true")
    args = ap.parse_args()
    t0 = time.monotonic()
    cluster = ray_cluster.LoopbackCluster(
        head={"head_slot": 1}, workers={"node-b": {"lane_slot": 2}}
    )
    result: dict[str, Any] = {
        "cluster_start_s": round(time.monotonic() - t0, 1),
        "load": os.getloadavg(),
    }
    print(json.dumps(result), flush=True)
    try:
        with tempfile.TemporaryDirectory() as d:
            work = Path(d)
            if not args.skip_copies:
                result["copies"] = copies(cluster, work)
            if not args.skip_turns:
                res = ",lane_resources.lane_slot=1,lane_resources.cpus=0"
                local = run_turns("local", args.turns, work, "")
                print(json.dumps(local), flush=True)
                remote = run_turns(f"ray={cluster.address}", args.turns, work, res)
                print(json.dumps(remote), flush=True)
                result["turns"] = [local, remote]
                result["overhead_per_remote_turn_ms"] = (
                    remote["median_turn_ms"] - local["median_turn_ms"]
                )
                result["breakdown"] = breakdown(cluster, args.turns, work)
                print(json.dumps(result["breakdown"]), flush=True)
            if not args.skip_tree:
                result["tree_copies"] = tree_copies(cluster, work)
                res = ",lane_resources.lane_slot=1,lane_resources.cpus=0,ray.lane_1=node"
                here = tree_turns("local", args.turns, work, "")
                print(json.dumps(here), flush=True)
                there = tree_turns(f"ray={cluster.address}", args.turns, work, res)
                print(json.dumps(there), flush=True)
                result["tree_turns"] = [here, there]
                result["overhead_per_tree_turn_ms"] = (
                    there["median_turn_ms"] - here["median_turn_ms"]
                )
    finally:
        cluster.stop()
    result["load_after"] = os.getloadavg()
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
