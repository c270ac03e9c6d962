"""A real multi-node Ray cluster on loopback, for the Ray executor's tests and bench/ray_lanes.py.

Ray's cluster utility (`ray.cluster_utils.Cluster`: a head and worker nodes, each with its own
raylet, object store and resources) runs in a child process that takes commands on stdin, so
the test process never imports Ray with the settings below and a node can be killed the way a
machine dies (`kill NAME`: SIGKILL to its raylet and everything of it; the workers it started
notice their raylet is gone and exit).

Loopback only: Ray avoids 127.0.0.1 on purpose (it advertises the address of the route out),
and `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0` is its switch for a one-machine cluster on loopback;
every process of the cluster and the driver (`flamechase exec`) get it, with usage stats and
the dashboard off. `ray start` refuses to add worker nodes in that mode, hence the utility.
The nodes keep lanes' copies under a state home of their own, removed with the cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

LOOPBACK = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_DISABLE_USAGE_STATS": "1",
}


def env() -> dict[str, str]:
    """The environment of anything that joins the cluster (the driver included)."""
    out = {**os.environ, **LOOPBACK}
    out.pop("RAY_ADDRESS", None)
    return out


class LoopbackCluster:
    """A head node (`head` resources) and worker nodes by name; `address` to join."""

    def __init__(
        self, head: dict[str, float], workers: dict[str, dict[str, float]], timeout: float = 240
    ) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="fcray-", dir="/tmp"))  # sockets: short path
        # The nodes' state home (lanes' copies live under it): never the real one.
        # Ray's own default temp directory goes there too: since Ray 2.5x, `Cluster.add_node`
        # writes the head's address to `<default temp>/ray/ray_current_cluster` whatever
        # `temp_dir` says, and /tmp/ray need not exist (nor be shared with other clusters).
        nodes_env = {
            **env(),
            "FLAMECHASE_HOME": str(self.tmp / "home"),
            "RAY_TMPDIR": str(self.tmp),
        }
        self.proc = subprocess.Popen(
            [sys.executable, __file__, str(self.tmp)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(self.tmp / "cluster.log", "wb"),  # noqa: SIM115
            env=nodes_env,
            text=True,
            start_new_session=True,
        )
        self.started = time.monotonic()
        hello = self._ask({"head": head, "workers": workers}, timeout)
        self.address: str = hello["address"]
        self.nodes: dict[str, str] = hello["nodes"]  # name -> node id (hex)
        self.seconds = time.monotonic() - self.started

    def _ask(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            log = (self.tmp / "cluster.log").read_text(errors="replace")[-4000:]
            raise AssertionError(f"the Ray cluster process ended:\n{log}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def kill(self, name: str, how: str = "node") -> None:
        """Node `name` dies at once: everything of it (`node`), or only its raylet
        (`raylet`: SIGKILLed and reaped, as a crash kills it; the node's workers are left
        running, to notice on their own, and Ray declares the node dead only later)."""
        self._ask({"kill": name, "how": how}, 120)

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _serve(tmp: str) -> None:
    from ray.cluster_utils import Cluster

    os.makedirs(os.path.join(tmp, "ray"), exist_ok=True)

    first = json.loads(sys.stdin.readline())
    cluster = Cluster(
        initialize_head=True,
        connect=False,
        head_node_args={
            "num_cpus": 1,
            "resources": first["head"],
            "include_dashboard": False,
            "temp_dir": tmp,
        },
    )
    nodes = {
        name: cluster.add_node(num_cpus=2, resources=res, wait=False)
        for name, res in first["workers"].items()
    }
    cluster.wait_for_nodes()
    print(
        json.dumps(
            {"address": cluster.address, "nodes": {n: node.node_id for n, node in nodes.items()}}
        ),
        flush=True,
    )
    try:
        for line in sys.stdin:
            order = json.loads(line)
            node = nodes.pop(order["kill"])
            if order.get("how") == "raylet":
                [raylet] = node.all_processes["raylet"]
                raylet.process.kill()
                raylet.process.wait()
            else:
                cluster.remove_node(node, allow_graceful=False)
            print(json.dumps({"killed": order["kill"]}), flush=True)
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    _serve(sys.argv[1])
