"""Port blocks per lane: distinct among live lanes, stable across turns and resumes, never a
block someone listens on, and given back when every block is held and an owner is gone."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from flamechase.errors import PortsExhausted
from flamechase.store import ports


def test_lanes_of_live_runs_get_distinct_blocks_that_stay_theirs(tmp_path: Path) -> None:
    a = ports.allocate("run-a", "lane-1", home=tmp_path)
    b = ports.allocate("run-a", "lane-2", home=tmp_path)
    c = ports.allocate("run-b", "lane-1", home=tmp_path)
    assert len({a.base, b.base, c.base}) == 3
    assert not set(a.ports) & set(b.ports)
    assert ports.allocate("run-a", "lane-2", home=tmp_path) == b  # the next turn, a resume
    assert ports.held("run-a", home=tmp_path) == {"lane-1": a, "lane-2": b}


def test_a_block_something_listens_on_is_skipped(tmp_path: Path) -> None:
    first = ports.allocate("probe", "lane-1", home=tmp_path)
    ports.release_run("probe", home=tmp_path)
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        squatter.bind(("127.0.0.1", first.base + 3))
    except OSError:
        pytest.skip("the port is taken on this machine")
    squatter.listen()
    try:
        got = ports.allocate("run-a", "lane-1", home=tmp_path)
    finally:
        squatter.close()
    assert first.base + 3 not in got.ports


def test_when_every_block_is_held_a_dead_engines_blocks_are_given_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ports, "LAST", ports.FIRST + 2 * ports.SIZE - 1)  # two blocks
    ports.allocate("live", "lane-1", home=tmp_path)
    ports.allocate("dead", "lane-1", home=tmp_path)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    registry = tmp_path / "ports.json"
    entries = json.loads(registry.read_text())
    entries["dead/lane-1"]["pid"] = int(gone.stdout)  # its engine has exited
    registry.write_text(json.dumps(entries))
    dead_base = entries["dead/lane-1"]["base"]
    assert ports.allocate("new", "lane-1", home=tmp_path).base == dead_base
    with pytest.raises(PortsExhausted, match="held by a live lane"):
        ports.allocate("new", "lane-2", home=tmp_path)


def test_a_removed_runs_blocks_are_free_again(tmp_path: Path) -> None:
    a = ports.allocate("run-a", "lane-1", home=tmp_path)
    ports.release_run("run-a", home=tmp_path)
    assert ports.held("run-a", home=tmp_path) == {}
    assert ports.allocate("run-b", "lane-1", home=tmp_path) == a


def test_an_unreadable_registry_starts_again(tmp_path: Path) -> None:
    (tmp_path / "ports.json").write_text("{not json")
    assert ports.allocate("run-a", "lane-1", home=tmp_path).count == ports.SIZE


def test_a_lanes_first_turn_waits_on_no_disk_flush_for_its_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    flushed: list[int] = []
    monkeypatch.setattr(os, "fsync", flushed.append)
    block = ports.allocate("run-a", "lane-1", home=tmp_path)
    assert flushed == []
    assert ports.held("run-a", home=tmp_path) == {"lane-1": block}  # written all the same
