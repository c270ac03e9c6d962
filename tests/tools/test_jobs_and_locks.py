"""`flamechase job` and `flamechase lock` through the real command: background work that keeps
its logs and its exit code, and an exclusive lock a dead holder frees."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from flamechase.tools import locks
from tests.helpers import FLAMECHASE, cli


def test_a_job_runs_in_the_background_and_wait_returns_its_exit_code(tmp_path: Path) -> None:
    env = {"FLAMECHASE_JOBS": str(tmp_path / "jobs")}
    started = cli(
        "job",
        "start",
        "--name",
        "build",
        "--",
        "sh",
        "-c",
        "echo building; read x < /dev/null; exit 3",
        cwd=tmp_path,
        env=env,
    )
    assert started.returncode == 0, started.stderr
    job = started.stdout.strip()
    assert job == "build-1"
    waited = cli("job", "wait", job, "--max", "30", cwd=tmp_path, env=env)
    assert waited.returncode == 3 and "failed rc=3" in waited.stdout
    assert cli("job", "logs", job, cwd=tmp_path, env=env).stdout.strip() == "building"
    rows = json.loads(cli("job", "list", "--json", cwd=tmp_path, env=env).stdout)
    assert [(r["id"], r["state"], r["rc"]) for r in rows] == [("build-1", "failed", 3)]


def test_wait_gives_up_after_max_and_kill_ends_the_group(tmp_path: Path) -> None:
    env = {"FLAMECHASE_JOBS": str(tmp_path / "jobs")}
    job = cli(
        "job", "start", "--", "sh", "-c", "sleep 300 & wait", cwd=tmp_path, env=env
    ).stdout.strip()
    waited = cli("job", "wait", job, "--max", "0.2", cwd=tmp_path, env=env)
    assert waited.returncode == 124 and "running" in waited.stdout
    killed = cli("job", "kill", job, cwd=tmp_path, env=env)
    assert killed.stdout.strip() == f"{job}: killed"
    pid = int((tmp_path / "jobs" / job / "pid").read_text())
    try:
        os.killpg(pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive  # the sleep its shell started went too


def test_a_job_whose_processes_vanished_reads_lost_and_reap_records_it(tmp_path: Path) -> None:
    env = {"FLAMECHASE_JOBS": str(tmp_path / "jobs")}
    job = cli("job", "start", "--", "sleep", "300", cwd=tmp_path, env=env).stdout.strip()
    d = tmp_path / "jobs" / job
    for name in ("supervisor", "pid"):  # what a torn-down jail does to a turn's processes
        os.kill(int((d / name).read_text()), signal.SIGKILL)
    rows = json.loads(cli("job", "list", "--json", cwd=tmp_path, env=env).stdout)
    assert rows[0]["state"] == "lost"
    reaped = cli("job", "reap", cwd=tmp_path, env=env).stdout
    assert json.loads(reaped.removeprefix("JOBS "))["reaped"] == [job]
    assert (
        json.loads(cli("job", "list", "--json", cwd=tmp_path, env=env).stdout)[0]["state"]
        == "reaped"
    )


def test_job_outside_a_turn_without_a_directory_is_refused(tmp_path: Path) -> None:
    env = {k: "" for k in ("FLAMECHASE_JOBS", "FLAMECHASE_RUN_DIR", "FLAMECHASE_LANE")}
    proc = cli("job", "list", cwd=tmp_path, env=env)
    assert proc.returncode == 2 and "no job directory" in proc.stderr


def test_the_lock_serialises_and_a_timeout_runs_nothing(tmp_path: Path) -> None:
    lock = tmp_path / "lockdir"
    lock.mkdir()
    held = cli(
        "lock", "acquire", "--who", "perf-a", "--max", "60", "--dir", str(lock), cwd=tmp_path
    )
    assert held.returncode == 0, held.stderr
    status = cli("lock", "status", "--json", "--dir", str(lock), cwd=tmp_path)
    st = json.loads(status.stdout)
    assert st["held"] and st["holders"][0]["who"] == "perf-a"
    marker = tmp_path / "ran"
    blocked = cli(
        "lock",
        "run",
        "--who",
        "perf-b",
        "--wait",
        "0.3",
        "--dir",
        str(lock),
        "--",
        "touch",
        str(marker),
        cwd=tmp_path,
    )
    assert blocked.returncode == 75 and not marker.exists()
    assert cli("lock", "release", "--dir", str(lock), cwd=tmp_path).returncode == 0
    ran = cli(
        "lock",
        "run",
        "--who",
        "perf-b",
        "--dir",
        str(lock),
        "--",
        "sh",
        "-c",
        "touch " + str(marker) + "; exit 5",
        cwd=tmp_path,
    )
    assert ran.returncode == 5 and marker.exists()
    assert not json.loads(cli("lock", "status", "--json", "--dir", str(lock), cwd=tmp_path).stdout)[
        "held"
    ]


def test_a_killed_holder_frees_the_lock_and_nested_runs_pass_through(tmp_path: Path) -> None:
    lock = tmp_path / "lockdir"
    lock.mkdir()
    holder = subprocess.Popen(
        [
            *FLAMECHASE,
            "lock",
            "run",
            "--who",
            "outer",
            "--dir",
            str(lock),
            "--",
            "sh",
            "-c",
            f"{' '.join(FLAMECHASE)} lock run --who inner --wait 0 "
            f"--dir {lock} -- true && echo nested-ok && sleep 300",
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        start_new_session=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "nested-ok"  # no deadlock on its parent's lock
    os.killpg(holder.pid, signal.SIGKILL)
    holder.wait()
    took = cli(
        "lock",
        "run",
        "--who",
        "next",
        "--wait",
        "30",
        "--dir",
        str(lock),
        "--",
        "true",
        cwd=tmp_path,
    )
    assert took.returncode == 0


def test_an_acquired_lock_expires_after_its_max_and_the_next_waiter_gets_it(tmp_path: Path) -> None:
    lock = tmp_path / "lockdir"
    lock.mkdir()
    held = cli(
        "lock", "acquire", "--who", "forgetful", "--max", "1", "--dir", str(lock), cwd=tmp_path
    )
    assert held.returncode == 0, held.stderr
    holder = int(held.stdout.rsplit("pid ", 1)[1].rstrip(")\n"))
    marker = tmp_path / "ran"
    # Nobody releases: the waiter gets the lock only because the hold expires.
    took = cli(
        "lock",
        "run",
        "--who",
        "next",
        "--wait",
        "30",
        "--dir",
        str(lock),
        "--",
        "touch",
        str(marker),
        cwd=tmp_path,
    )
    assert took.returncode == 0, took.stderr
    assert marker.exists()
    st = json.loads(cli("lock", "status", "--json", "--dir", str(lock), cwd=tmp_path).stdout)
    assert not st["held"] and st["holders"] == []
    assert _gone(holder)  # the expired holder exited by itself
    assert cli("lock", "release", "--dir", str(lock), cwd=tmp_path).returncode == 1


def _gone(pid: int, within: float = 30.0) -> bool:
    """Whether `pid` exits within a generous bound (it may be finishing its exit right now)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:  # an exited process nobody reaped yet (a zombie) is gone too
            if "State:\tZ" in Path(f"/proc/{pid}/status").read_text():
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def _taken(lock: Path, within: float = 30.0) -> int:
    """The flock on `lock`, once whoever held it let go (within a generous bound)."""
    deadline = time.monotonic() + within
    while (fd := locks.try_take(lock)) is None:
        assert time.monotonic() < deadline, "the holder never let go"
        time.sleep(0.05)
    return fd


def test_the_runtimes_claim_ends_an_acquired_hold_and_new_holds_wait_for_it(
    tmp_path: Path,
) -> None:
    lock = tmp_path / "lockdir"
    lock.mkdir()
    held = cli(
        "lock", "acquire", "--who", "perf-a", "--max", "300", "--dir", str(lock), cwd=tmp_path
    )
    assert held.returncode == 0, held.stderr
    locks.claim(lock, "runtime:gate")  # what the runtime does when one of its gates needs it
    fd = _taken(lock)
    try:
        st = json.loads(cli("lock", "status", "--json", "--dir", str(lock), cwd=tmp_path).stdout)
        assert st["held"] and st["holders"] == [
            {"who": "runtime:gate", "lane": None, "runtime": True}
        ]
        marker = tmp_path / "ran"
        blocked = cli(
            "lock", "run", "--who", "perf-b", "--wait", "0.3", "--dir", str(lock), "--",
            "touch", str(marker), cwd=tmp_path,
        )  # fmt: skip
        assert blocked.returncode == 75 and not marker.exists()
    finally:
        os.close(fd)
        locks.unclaim(lock)
    released = cli("lock", "release", "--dir", str(lock), cwd=tmp_path)
    assert released.returncode == 76
    assert "ended early for the runtime's gate (runtime:gate)" in released.stderr
    ran = cli("lock", "run", "--who", "perf-b", "--dir", str(lock), "--", "true", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr


def test_a_command_under_the_lock_is_ended_when_the_runtime_claims_it(tmp_path: Path) -> None:
    lock = tmp_path / "lockdir"
    lock.mkdir()
    pid_file = tmp_path / "pid"
    proc = subprocess.Popen(
        [*FLAMECHASE, "lock", "run", "--who", "perf", "--dir", str(lock), "--",
         "sh", "-c", f"echo $$ > {pid_file}.tmp && mv {pid_file}.tmp {pid_file} && exec sleep 300"],
        stderr=subprocess.PIPE, text=True, cwd=tmp_path, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        locks.claim(lock, "runtime:gate")
        code = proc.wait(timeout=60)
    finally:
        locks.unclaim(lock)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.stderr is not None
    assert code == 76 and "one of the runtime's gates needed the lock" in proc.stderr.read()
    assert _gone(int(pid_file.read_text()))  # CMD's group was ended with it
