"""Port blocks per lane: distinct among live lanes, stable across turns and resumes, never a
block someone listens on, and given back when every block is held and an owner is gone."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flamechase.errors import PortsExhausted
from flamechase.store import ports


@pytest.fixture(autouse=True)
def quiet_range(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Blocks in the upper part of the range, fewer of which the runs other tests (and
    people) start on this machine can hold; every claim given back after the test."""
    monkeypatch.setattr(ports, "FIRST", 30000)
    yield
    for base in list(ports._CLAIMED):
        ports._unclaim(base)


def test_lanes_of_live_runs_get_distinct_blocks_that_stay_theirs(tmp_path: Path) -> None:
    a = ports.allocate("run-a", "lane-1", home=tmp_path)
    b = ports.allocate("run-a", "lane-2", home=tmp_path)
    c = ports.allocate("run-b", "lane-1", home=tmp_path)
    assert len({a.base, b.base, c.base}) == 3
    assert not set(a.ports) & set(b.ports)
    assert ports.allocate("run-a", "lane-2", home=tmp_path) == b  # the next turn, a resume
    assert ports.held("run-a", home=tmp_path) == {"lane-1": a, "lane-2": b}


def test_a_block_something_listens_on_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ports, "LAST", ports.FIRST + 2 * ports.SIZE - 1)  # two blocks
    first = ports._search_order("run-a/lane-1")[0]  # the block run-a's lane would get
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        squatter.bind(("127.0.0.1", first + 3))
    except OSError:
        pytest.skip("the port is taken on this machine")
    squatter.listen()
    try:
        got = ports.allocate("run-a", "lane-1", home=tmp_path)
    finally:
        squatter.close()
    assert first + 3 not in got.ports


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
    ports.let_go("dead")  # as its engine's death does
    dead_base = entries["dead/lane-1"]["base"]
    assert ports.allocate("new", "lane-1", home=tmp_path).base == dead_base
    with pytest.raises(PortsExhausted, match="held by a live lane"):
        ports.allocate("new", "lane-2", home=tmp_path)


def test_a_removed_runs_blocks_are_free_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ports, "LAST", ports.FIRST + ports.SIZE - 1)  # one block
    a = ports.allocate("run-a", "lane-1", home=tmp_path)
    ports.let_go("run-a")  # its engine is done
    ports.release_run("run-a", home=tmp_path)
    assert ports.held("run-a", home=tmp_path) == {}
    assert ports.allocate("run-b", "lane-1", home=tmp_path) == a


def test_an_unreadable_registry_starts_again(tmp_path: Path) -> None:
    (tmp_path / "ports.json").write_text("{not json")
    assert ports.allocate("run-a", "lane-1", home=tmp_path).count == ports.SIZE


def test_lanes_of_runs_in_two_state_homes_get_distinct_blocks(tmp_path: Path) -> None:
    """The registry is a state home's; the machine's ports are everyone's: a block a live
    engine holds for a run of one home is never handed to a run of another."""
    a = ports.allocate("run-a", "lane-1", home=tmp_path / "one")
    b = ports.allocate("run-b", "lane-1", home=tmp_path / "two")
    assert a != b
    # Another engine (another process) with a third home sees both claimed ...
    assert _elsewhere("allocate", tmp_path / "three") not in (a.base, b.base)
    assert _elsewhere("claim", a.base) == 0
    # ... until the engine lets go of them at its end; the run's home keeps the block for
    # the run, which its next engine claims again.
    ports.let_go("run-a")
    assert _elsewhere("claim", a.base) == 1
    assert ports.allocate("run-a", "lane-1", home=tmp_path / "one") == a


def _elsewhere(what: str, arg: object) -> int:
    """In another process: the base a run of a state home `arg` is given, or whether block
    `arg` can be claimed (1) or not (0)."""
    code = (
        "import sys\nfrom pathlib import Path\nfrom flamechase.store import ports\n"
        "ports.FIRST = 30000\n"
        + (
            'print(ports.allocate("run-x", "lane-1", home=Path(sys.argv[1])).base)'
            if what == "allocate"
            else 'print(int(ports._claim(int(sys.argv[1]), "x")))'
        )
    )
    got = subprocess.run(
        [sys.executable, "-c", code, str(arg)], capture_output=True, text=True, check=True
    )
    return int(got.stdout)


def test_a_block_claimed_elsewhere_while_its_run_was_stopped_is_replaced_on_resume(
    tmp_path: Path,
) -> None:
    a = ports.allocate("run-a", "lane-1", home=tmp_path)
    ports.let_go("run-a")  # its engine ended
    holder = subprocess.Popen(  # a live engine of another state home takes the block
        [sys.executable, "-c", _HOLD, str(a.base)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        again = ports.allocate("run-a", "lane-1", home=tmp_path)  # the run resumed
        assert again != a
        assert ports.held("run-a", home=tmp_path) == {"lane-1": again}
    finally:
        holder.kill()
        holder.wait()


def test_a_killed_engines_lane_gets_its_block_back_though_new_runs_started_meanwhile(
    tmp_path: Path,
) -> None:
    """A SIGKILLed engine's claim is given back by the kernel at once; a run that starts
    elsewhere before the resume does not go for the block it freed, as the lowest free one."""
    a = ports.allocate("run-a", "lane-1", home=tmp_path / "one")
    ports.let_go("run-a")  # as the engine's death does
    assert _elsewhere("allocate", tmp_path / "two") != a.base  # a new run of another home
    assert ports.allocate("run-a", "lane-1", home=tmp_path / "one") == a


_HOLD = """
import sys, time
from flamechase.store import ports
assert ports._claim(int(sys.argv[1]), "elsewhere")
print("held", flush=True)
time.sleep(60)
"""


def test_a_lanes_first_turn_waits_on_no_disk_flush_for_its_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    flushed: list[int] = []
    monkeypatch.setattr(os, "fsync", flushed.append)
    block = ports.allocate("run-a", "lane-1", home=tmp_path)
    assert flushed == []
    assert ports.held("run-a", home=tmp_path) == {"lane-1": block}  # written all the same
