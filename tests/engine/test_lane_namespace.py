"""A namespace per lane, through the real CLI: two lanes start a server on their own port
blocks at the same time and each reaches its own and the other's; the turn's environment and
prompt name the block, a database prefix and its own TMPDIR, the same on the lane's next turn.
Under either jail a lane binding a port outside its block is refused (where Landlock can) and
goes on; without a jail (the block advised) a listener outside it is named.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.flows.pfc import Team
from tests.helpers import cli
from tests.jail.conftest import PROBE, needs_bwrap, needs_landlock

needs_ports = pytest.mark.skipif(
    not PROBE.landlock_ports, reason="Landlock ABI below 4: port blocks are only advised here"
)
JAILS = [
    pytest.param("bwrap", marks=[needs_bwrap, needs_ports]),
    pytest.param("landlock", marks=[needs_landlock, needs_ports]),
]

# The lanes' scripts wait for each other with this.
UNTIL = r"""
def until(pred, timeout=60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = pred()
        if got:
            return got
        time.sleep(0.05)
    return None
"""

# Lane turn 1: serve this lane's name on its first port, wait until the other lane serves
# too (both up at once), fetch both, and stay up until the other has fetched ours.
SERVE = (
    UNTIL
    + r"""
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
)


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
    # `status` says each lane's block.
    from tests.helpers import status

    shown = {ln["lane"]: ln["ports"] for ln in status(source_tree)["lanes"]}
    for ln, e in ((x, envs[(x, 1)]) for x in ("lane-1", "lane-2")):
        base, count = int(e["FLAMECHASE_PORT_BASE"]), int(e["FLAMECHASE_PORT_COUNT"])
        assert shown[ln] == f"{base}-{base + count - 1}"
    text = cli("status", "last", cwd=source_tree, check=True).stdout
    assert f"ports {shown['lane-2']}" in text


# Lane 1 listens on a port of its block and on one outside it, and stays up until the
# runtime says (in its turn's directory) that it saw the one outside; lane 2 listens only on
# its block, and stays up until lane 1 was seen.
STRAY = r"""
import socket
base = int(os.environ["FLAMECHASE_PORT_BASE"])
if c.turn >= 2:
    return c.ok("blocked", "stop here")
def listen(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past another test's TIME_WAIT
    s.bind(("127.0.0.1", port))
    s.listen()
    return s
count = int(os.environ["FLAMECHASE_PORT_COUNT"])
# The block is this lane's among the runs of its state home; other tests run with homes of
# their own (and the same blocks), so take a port of it that is free, from its top down.
for port in range(base + count - 1, base - 1, -1):
    try:
        inside = listen(port)
        break
    except OSError:
        continue
noticed = c.report_path.parent / "ports-outside-block.txt"
def until(pred, timeout=60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False
if c.lane == "lane-1":
    for port in range(15000, 16000):  # below every block and the ephemeral range
        try:
            outside = listen(port)
            break
        except OSError:
            continue
    c.save("outside", str(port))
    seen = until(noticed.exists)
    c.save("noticed", noticed.read_text() if seen else "")
else:
    other = c.scratch.parent.parent / "lane-1" / "pfc" / "noticed"
    until(other.exists)
    c.save("noticed", noticed.read_text() if noticed.exists() else "")
return c.ok("progress", "listened")
"""


def test_a_lane_listening_outside_its_block_is_named_and_one_inside_is_not(
    source_tree: Path, tmp_path: Path
) -> None:
    from tests.helpers import status

    # sandbox=off: the block is advised, as on a kernel whose Landlock has no port rules
    # (a jail there refuses the bind: the next test).
    team = Team(tmp_path / "team", STRAY)
    proc = team.run(source_tree, "lanes=2", "sandbox=off", timeout=180)
    assert proc.returncode == 3, proc.stderr
    home = Path(os.environ["FLAMECHASE_HOME"])
    (outside,) = home.glob("runs/*/lanes/lane-1/pfc/outside")
    port = int(outside.read_text())
    (one,) = home.glob("runs/*/lanes/lane-1/pfc/noticed")
    (two,) = home.glob("runs/*/lanes/lane-2/pfc/noticed")
    assert one.read_text() == f"{port}\n"  # the runtime saw it while the turn ran
    assert two.read_text() == ""
    notes = [n for n in status(source_tree)["notices"] if "outside its block" in n]
    (said,) = notes  # once, naming the lane, the port, its block and the remedy
    block = next(ln["ports"] for ln in status(source_tree)["lanes"] if ln["lane"] == "lane-1")
    assert said.startswith(f"lane-1 listened on port {port}, outside its block {block}: ")
    assert "$FLAMECHASE_PORT_BASE" in said and "\n" not in said
    log = cli("events", "last", cwd=source_tree, check=True).stdout
    assert f"Notice: lane-1 listened on port {port}" in log


NAMES = ("FLAMECHASE_LANE", "FLAMECHASE_PORT_BASE", "FLAMECHASE_PORT_COUNT", "FLAMECHASE_DB_PREFIX",
         "TMPDIR")  # fmt: skip

# Every invocation notes its namespace; turn 1 of each lane then waits for the test's `go`.
NOTE = r"""
with open(c.scratch / "envs.jsonl", "a") as f:
    f.write(json.dumps({k: os.environ.get(k, "") for k in NAMES}) + "\n")
if c.turn == 1:
    assert c.wait(lambda es: (GO).exists(), 120)
    return None
return c.ok("blocked", "stop here")
"""


def _noted(home: Path, lane: str) -> list[dict[str, str]]:
    (path,) = home.glob(f"runs/*/lanes/{lane}/pfc/envs.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def _until(pred: Any, timeout: float = 150) -> None:
    import time

    end = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def _hook(go: Path) -> str:
    return NOTE.replace("NAMES", repr(NAMES)).replace("GO", f"Path({str(go)!r})")


def test_two_live_runs_of_two_state_homes_never_share_a_lanes_port_block(tmp_path: Path) -> None:
    import subprocess

    from tests.helpers import FLAMECHASE

    go = tmp_path / "go"
    runs = []
    for name in ("one", "two"):
        ws = tmp_path / f"ws-{name}"
        ws.mkdir()
        (ws / "README.md").write_text("sample\n")
        team = Team(tmp_path / f"team-{name}", _hook(go))
        home = tmp_path / f"home-{name}"
        env = {**os.environ, "FLAMECHASE_HOME": str(home)}
        args = team.args("lanes=2", "budget.duration=150s", lanes=2)
        proc = subprocess.Popen(
            [*FLAMECHASE, *args],
            cwd=ws,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        runs.append((home, proc))
    lanes = [(home, lane) for home, _ in runs for lane in ("lane-1", "lane-2")]
    # All four lanes are in their first turn at once: both runs live.
    _until(lambda: all(list(h.glob(f"runs/*/lanes/{ln}/pfc/envs.jsonl")) for h, ln in lanes))
    blocks = [
        range(int(e["FLAMECHASE_PORT_BASE"]), int(e["FLAMECHASE_PORT_BASE"]) + int(
            e["FLAMECHASE_PORT_COUNT"]))
        for e in (_noted(h, ln)[0] for h, ln in lanes)
    ]  # fmt: skip
    for i, a in enumerate(blocks):
        for b in blocks[i + 1 :]:
            assert not set(a) & set(b), blocks
    go.write_text("")
    for _, proc in runs:
        _, err = proc.communicate(timeout=150)
        assert proc.returncode == 3, err


def test_a_lanes_namespace_is_the_same_on_every_turn_and_after_a_resume(
    source_tree: Path, tmp_path: Path, state_home: Path
) -> None:
    import signal

    go = tmp_path / "go"
    team = Team(tmp_path / "team", _hook(go))
    engine = team.popen(source_tree, "lanes=2", "budget.duration=150s", lanes=2)
    _until(lambda: all(list(state_home.glob(f"runs/*/lanes/{ln}/pfc/envs.jsonl"))
                       for ln in ("lane-1", "lane-2")))  # fmt: skip
    first_run = {p.parent.name for p in state_home.glob("runs/*/lanes")}
    engine.send_signal(signal.SIGKILL)  # mid-turn: both lanes' turn 1 under way
    engine.wait(timeout=30)
    go.write_text("")
    again = team.run(source_tree, "lanes=2", "budget.duration=150s", lanes=2, timeout=150)
    assert again.returncode == 3, again.stderr
    assert {p.parent.name for p in state_home.glob("runs/*/lanes")} == first_run  # resumed
    for lane in ("lane-1", "lane-2"):
        noted = _noted(state_home, lane)
        assert len(noted) >= 3  # turn 1, turn 1 taken again after the resume, turn 2
        assert all(n == noted[0] for n in noted), noted
        assert noted[0]["FLAMECHASE_LANE"] == lane and noted[0]["TMPDIR"].endswith(f"{lane}/tmp")


# Each lane, turn 1: tries a port outside its block (refused, and it goes on), serves on a
# free port of its block, binds port 0, then fetches the other lane's server and waits until
# the other has fetched its own.
HOSTILE = (
    UNTIL
    + r"""
import errno, socket, threading
env = os.environ
base, count = int(env["FLAMECHASE_PORT_BASE"]), int(env["FLAMECHASE_PORT_COUNT"])
if c.turn >= 2:
    return c.ok("blocked", "stop here")
def bind(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port))
    except OSError as exc:
        s.close()
        return errno.errorcode.get(exc.errno, str(exc.errno)), None
    return s.getsockname()[1], s
seen = {"prompt_says_refused": "fails with 'Permission denied'" in c.prompt}
seen["outside"], _ = bind(15000 + 7 * c.lanes.index(c.lane))  # below every block
for port in range(base + count - 1, base - 1, -1):  # another test's home may hold some
    seen["inside"], server = bind(port)
    if server is not None:
        break
seen["ephemeral"], eph = bind(0)
server.listen()
def serve():
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            conn.sendall(c.lane.encode())
threading.Thread(target=serve, daemon=True).start()
c.save("up", str(seen["inside"]))
other = next(x for x in c.lanes if x != c.lane)
up = c.scratch.parent.parent / other / "pfc" / "up"
theirs = int(until(lambda: up.exists() and up.read_text()))
with socket.create_connection(("127.0.0.1", theirs), timeout=10) as conn:
    seen["other"] = conn.recv(64).decode()
c.save("seen", json.dumps(seen))
until((c.scratch.parent.parent / other / "pfc" / "seen").exists)
return c.ok("progress", "went on")
"""
)


@pytest.mark.parametrize("mode", JAILS)
def test_a_lane_binding_outside_its_block_is_refused_and_goes_on_under_either_jail(
    source_tree: Path, tmp_path: Path, mode: str
) -> None:
    from tests.helpers import status

    team = Team(tmp_path / "team", HOSTILE)
    proc = team.run(source_tree, "lanes=2", f"sandbox={mode}", timeout=180)
    assert proc.returncode == 3, proc.stderr
    for lane in ("lane-1", "lane-2"):
        seen = _saved(lane, "seen")
        other = "lane-2" if lane == "lane-1" else "lane-1"
        assert seen["outside"] in ("EACCES", "EPERM"), seen  # refused, and the turn went on
        assert isinstance(seen["inside"], int) and isinstance(seen["ephemeral"], int), seen
        assert seen["other"] == other  # connecting to another lane's server is free
        assert seen["prompt_says_refused"]
    shown = status(source_tree)
    assert not [n for n in shown["notices"] if "listened on port" in n]  # nothing got through
    (said,) = (n for n in shown["notices"] if n.startswith("every agent"))
    assert said.endswith("; lanes' port blocks enforced)")  # once, in its gist
    verbose = cli("status", "--verbose", "last", cwd=source_tree, check=True).stdout
    assert "a lane's turn binding a TCP port outside its block (port 0" in verbose
