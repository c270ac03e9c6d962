"""A namespace per lane, through the real CLI: two lanes start a server on their own port
blocks at the same time and each reaches its own and the other's; the turn's environment and
prompt name the block, a database prefix and its own TMPDIR, the same on the lane's next turn.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.flows.pfc import Team

# Lane turn 1: serve this lane's name on its first port, wait until the other lane serves
# too (both up at once), fetch both, and stay up until the other has fetched ours.
SERVE = r"""
import subprocess, urllib.request
env = os.environ
base = int(env["FLAMECHASE_PORT_BASE"])
seen = {k: env.get(k, "") for k in (
    "FLAMECHASE_LANE", "FLAMECHASE_PORT_BASE", "FLAMECHASE_PORT_COUNT",
    "FLAMECHASE_DB_PREFIX", "TMPDIR")}
seen["prompt_names_block"] = f"ports {base}-" in c.prompt
c.save(f"env-{c.turn}.json", json.dumps(seen))
if c.turn >= 2:
    return c.ok("blocked", "stop here")
page = c.scratch / "www"
page.mkdir(exist_ok=True)
(page / "who").write_text(c.lane)
srv = subprocess.Popen([sys.executable, "-m", "http.server", str(base), "--bind",
                        "127.0.0.1", "--directory", str(page)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def get(port):
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/who", timeout=2).read().decode()
    except OSError:
        return None
def until(pred, timeout=60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = pred()
        if got:
            return got
        time.sleep(0.05)
    return None
try:
    until(lambda: get(base))
    c.save("up", str(base))
    other = next(x for x in c.lanes if x != c.lane)
    up = c.scratch.parent.parent / other / "pfc" / "up"
    theirs = until(lambda: up.exists() and up.read_text())
    result = {"own": get(base), "other": get(int(theirs)) if theirs else None}
    c.save("fetched", json.dumps(result))
    done = c.scratch.parent.parent / other / "pfc" / "fetched"
    until(done.exists)
finally:
    srv.terminate()
    srv.wait()
return c.ok("progress", "served")
"""


def _saved(lane: str, name: str) -> dict[str, Any]:
    home = Path(os.environ["FLAMECHASE_HOME"])
    (path,) = home.glob(f"runs/*/lanes/{lane}/pfc/{name}")
    got: dict[str, Any] = json.loads(path.read_text())
    return got


def test_two_lanes_serve_on_their_own_port_blocks_at_once(
    source_tree: Path, tmp_path: Path
) -> None:
    team = Team(tmp_path / "team", SERVE)
    proc = team.run(source_tree, "lanes=2", timeout=180)
    assert proc.returncode == 3, proc.stderr
    fetched = {ln: _saved(ln, "fetched") for ln in ("lane-1", "lane-2")}
    assert fetched["lane-1"] == {"own": "lane-1", "other": "lane-2"}
    assert fetched["lane-2"] == {"own": "lane-2", "other": "lane-1"}
    envs = {(ln, t): _saved(ln, f"env-{t}.json") for ln in ("lane-1", "lane-2") for t in (1, 2)}
    one, two = envs[("lane-1", 1)], envs[("lane-2", 1)]
    assert one["FLAMECHASE_LANE"] == "lane-1" and two["FLAMECHASE_LANE"] == "lane-2"
    blocks = [
        set(
            range(
                int(e["FLAMECHASE_PORT_BASE"]),
                int(e["FLAMECHASE_PORT_BASE"]) + int(e["FLAMECHASE_PORT_COUNT"]),
            )
        )
        for e in (one, two)
    ]
    assert blocks[0] and not blocks[0] & blocks[1]
    assert one["FLAMECHASE_DB_PREFIX"] != two["FLAMECHASE_DB_PREFIX"]
    assert one["TMPDIR"].endswith("lanes/lane-1/tmp") and two["TMPDIR"].endswith("lanes/lane-2/tmp")
    assert one["prompt_names_block"] and two["prompt_names_block"]
    for ln in ("lane-1", "lane-2"):  # the lane's next turn keeps its namespace
        assert envs[(ln, 2)] == envs[(ln, 1)]
