"""The port watch with real processes and sockets: a turn's process listening outside its
block is named (once), one inside it, one the kernel picked and one that listened before the
turn began are not, and a turn in a network namespace of its own is said to be so instead."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from flamechase import procs
from flamechase.engine.portwatch import NOTICED_FILE, PortNotices, PortWatch

LISTEN = """
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
print(s.getsockname()[1], flush=True)
time.sleep(60)
"""


def _free_port(start: int) -> int:
    for port in range(start, start + 1000):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free port")


class Turn:
    """Processes started as a turn's are: their own group, the turn's token."""

    def __init__(self, tmp: Path, block: range) -> None:
        self.token = uuid.uuid4().hex
        self.env = {
            **os.environ,
            procs.TOKEN_VAR: self.token,
            "FLAMECHASE_PORT_BASE": str(block.start),
            "FLAMECHASE_PORT_COUNT": str(len(block)),
        }
        self.procs: list[subprocess.Popen[str]] = []
        watch = PortWatch.of(self.env, tmp, procs.boot_ticks())
        assert watch is not None
        self.watch = watch

    def listen(self, port: int, *prefix: str) -> int:
        p = subprocess.Popen(
            [*prefix, sys.executable, "-c", LISTEN, str(port)],
            env=self.env,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.procs.append(p)
        self.watch.spawned(p.pid)
        assert p.stdout is not None
        return int(p.stdout.readline())

    def end(self) -> None:
        for p in self.procs:
            p.kill()
            p.wait()


@pytest.fixture
def turn(tmp_path: Path) -> Iterator[Turn]:
    base = _free_port(21000)
    t = Turn(tmp_path, range(base, base + 1))
    yield t
    t.end()


def test_a_listener_outside_the_block_is_named_and_told_to_the_turn(
    turn: Turn, tmp_path: Path
) -> None:
    turn.listen(turn.watch.block.start)  # inside: fine
    stray = turn.listen(_free_port(15000))
    turn.listen(0)  # the kernel's pick (ephemeral): cannot collide
    turn.watch.scan()
    turn.watch.scan()  # seen again: not said again
    assert turn.watch.outside == {stray}
    assert (tmp_path / NOTICED_FILE).read_text() == f"{stray}\n"
    assert not turn.watch.own_netns


def test_a_listener_there_before_the_turn_is_not_the_turns(tmp_path: Path) -> None:
    with socket.socket() as before:
        before.bind(("127.0.0.1", _free_port(16000)))
        before.listen()
        base = _free_port(21000)
        t = Turn(tmp_path, range(base, base + 1))
        try:
            t.listen(base)
            t.watch.scan()
            assert t.watch.outside == set()
        finally:
            t.end()


def test_a_process_that_is_not_the_turns_is_not_named(turn: Turn) -> None:
    other = subprocess.Popen(
        [sys.executable, "-c", LISTEN, str(_free_port(17000))],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert other.stdout is not None and other.stdout.readline()
        turn.listen(turn.watch.block.start)
        turn.watch.scan()
        assert turn.watch.outside == set()
    finally:
        other.kill()
        other.wait()


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare(1)")
def test_a_turn_in_its_own_network_namespace_is_said_to_be_instead(turn: Turn) -> None:
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("no network namespaces here")
    turn.listen(_free_port(15000))  # in our namespace: named
    # In a namespace of its own it listens on loopback there; make ours see a listener on
    # the same port too (a stranger's), so the scan has a fresh one to look at.
    port = _free_port(18000)
    turn.listen(port, "unshare", "-rn", "sh", "-c", 'ip link set lo up 2>/dev/null; exec "$@"', "-")
    with socket.socket() as stranger:
        stranger.bind(("127.0.0.1", port))
        stranger.listen()
        time.sleep(0.05)
        turn.watch.scan()
    assert turn.watch.own_netns
    assert port not in turn.watch.outside


def test_notices_say_each_lane_and_port_once() -> None:
    said = PortNotices()
    first = said.of("lane-2", range(20020, 20040), (8080, 9000), own_netns=False)
    assert [n.message.split(",")[0] for n in first] == [
        "lane-2 listened on port 8080",
        "lane-2 listened on port 9000",
    ]
    assert "outside its block 20020-20039" in first[0].message
    assert said.of("lane-2", range(20020, 20040), (8080,), own_netns=False) == []
    assert len(said.of("lane-3", range(20040, 20060), (8080,), own_netns=False)) == 1
    (ns,) = said.of("lane-4", None, (), own_netns=True)
    assert "network namespace of its own" in ns.message
