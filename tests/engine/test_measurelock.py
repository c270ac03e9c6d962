"""The runtime's exclusive programs take the run's measurement lock ahead of every agent: an
agent's hold is ended, a holder that ignores the runtime delays them by a grace at most, and
they run one at a time. Real processes and real flocks."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from flamechase.engine.measurelock import MeasurementLock
from flamechase.tools import locks
from tests.helpers import cli

RAW_HOLDER = """\
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(300)
"""


def test_an_exclusive_program_takes_the_lock_from_an_agents_hold(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    env = {"FLAMECHASE_RUN_DIR": str(run_dir), "FLAMECHASE_LANE": "lane-1"}
    held = cli("lock", "acquire", "--who", "builder", "--max", "300", cwd=tmp_path, env=env)
    assert held.returncode == 0, held.stderr
    seen: list[object] = []

    async def gate() -> dict[str, object]:
        async with MeasurementLock().hold(run_dir, "runtime:gate") as note:
            st = cli("lock", "status", "--json", cwd=tmp_path, env=env)
            seen.append(json.loads(st.stdout)["holders"])
        return note

    note = asyncio.run(gate())
    assert note["had"] is True and note["held_by"] == ["builder"]
    assert seen == [[{"who": "runtime:gate", "lane": None, "runtime": True}]]
    assert locks.claimed(run_dir) is None  # the claim goes with the program
    released = cli("lock", "release", cwd=tmp_path, env=env)
    assert released.returncode == 76 and "runtime:gate" in released.stderr


def test_a_holder_that_ignores_the_runtime_delays_it_by_the_grace_at_most(tmp_path: Path) -> None:
    target = tmp_path / "run"
    target.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", RAW_HOLDER, str(target)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        ran: list[bool] = []

        async def gate() -> dict[str, object]:
            async with MeasurementLock(grace=0.2).hold(target, "runtime:gate") as note:
                ran.append(True)
            return note

        note = asyncio.run(gate())
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
    assert ran == [True] and note["had"] is False
    assert locks.claimed(target) is None


def test_exclusive_programs_run_one_at_a_time_in_the_order_they_asked(tmp_path: Path) -> None:
    order: list[str] = []

    async def gate(lock: MeasurementLock, name: str) -> None:
        async with lock.hold(tmp_path, f"runtime:{name}"):
            order.append(f"{name} in")
            for _ in range(5):
                await asyncio.sleep(0)
            order.append(f"{name} out")

    async def both() -> None:
        lock = MeasurementLock()
        await asyncio.gather(gate(lock, "a"), gate(lock, "b"))

    asyncio.run(both())
    assert order == ["a in", "a out", "b in", "b out"]


def test_stamps_a_lane_planted_neither_stall_nor_break_the_runtime(tmp_path: Path) -> None:
    """Who holds the lock is read from the lanes' own directories: files an agent writes."""
    run_dir = tmp_path / "run"
    tag = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:16]
    for lane in ("lane-2", "lane-3"):
        (run_dir / "lanes" / lane / "locks").mkdir(parents=True)
    os.mkfifo(run_dir / "lanes" / "lane-2" / "locks" / f"{tag}.json")  # would block a reader
    (run_dir / "lanes" / "lane-3" / "locks" / f"{tag}.json").write_text("[1, 2]")

    async def gate() -> dict[str, object]:
        async with MeasurementLock().hold(run_dir, "runtime:gate") as note:
            pass
        return note

    note = asyncio.run(asyncio.wait_for(gate(), timeout=60))
    assert note["had"] is True and note["held_by"] == []
