"""flame_chase end to end through the real CLI: alternation, budgets, failures, stop, resume.

Actors are `exec:` shell scripts; the database, processes and files are real.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import (
    FLAMECHASE,
    REPORT_OK,
    actor,
    cli,
    events,
    send_signal,
    status,
    wait_for_process,
)


def _exec(
    ws: Path, a: Path, b: Path, *params: str, task: str = "make notes", timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    args = ["exec", "-f", "flame_chase", "-a", f"exec:{a}", "-a", f"exec:{b}"]
    for p in params:
        args += ["-p", p]
    return cli(*args, task, cwd=ws, timeout=timeout)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    d = tmp_path / "ws"
    d.mkdir()
    return d


NOTE = 'echo "$FLAMECHASE_TURN $FLAMECHASE_ROLE $FLAMECHASE_ATTEMPT" >> NOTES\n' + REPORT_OK


def test_actors_alternate_and_turn_budget_is_exact(ws: Path, tmp_path: Path) -> None:
    a = actor(tmp_path, "a.sh", NOTE)
    proc = _exec(ws, a, a, "budget.turns=5,rest_seconds=0.05")
    assert proc.returncode == 0, proc.stderr
    lines = (ws / "NOTES").read_text().split("\n")[:-1]
    assert lines == [
        "1 first_chaser 1",
        "2 second_chaser 1",
        "3 first_chaser 1",
        "4 second_chaser 1",
        "5 first_chaser 1",
    ]
    st = status(ws)
    assert st["status"] == "finished"
    assert st["budget"]["turns"] == {"limit": 5, "used": 5}
    assert st["lanes"][0]["next_role"] == "second_chaser"


def test_exec_actor_gets_its_contract(ws: Path, tmp_path: Path) -> None:
    a = actor(
        tmp_path,
        "env.sh",
        """
        env | grep '^FLAMECHASE_' | sort > env.txt
        cat > stdin.txt
        pwd > cwd.txt
    """
        + REPORT_OK,
    )
    assert _exec(ws, a, a, "budget.turns=1", task="the objective").returncode == 0
    env = dict(line.split("=", 1) for line in (ws / "env.txt").read_text().splitlines())
    assert env["FLAMECHASE_FLOW"] == "flame_chase"
    assert env["FLAMECHASE_ROLE"] == "first_chaser"
    assert env["FLAMECHASE_LANE"] == "lane-1"
    assert env["FLAMECHASE_TURN"] == "1"
    assert env["FLAMECHASE_WORKSPACE"] == str(ws)
    assert env["FLAMECHASE_RUN_ID"] == status(ws)["id"]
    for key in ("FLAMECHASE_REPORT", "FLAMECHASE_USAGE", "FLAMECHASE_PROMPT", "FLAMECHASE_RUN_DIR"):
        assert env[key]
    assert "the objective" in (ws / "stdin.txt").read_text()
    # Once the turn is recorded its prompt is kept gzipped (engine/turnfiles.py).
    kept = Path(env["FLAMECHASE_PROMPT"] + ".gz").read_bytes()
    assert gzip.decompress(kept).decode() == (ws / "stdin.txt").read_text()
    assert (ws / "cwd.txt").read_text().strip() == str(ws)


def test_invalid_report_fails_only_that_turn(ws: Path, tmp_path: Path) -> None:
    bad = actor(tmp_path, "bad.sh", """echo 'not json' > "$FLAMECHASE_REPORT"\n""")
    shape = actor(
        tmp_path, "shape.sh", """echo '{"status":"done","summary":"x"}' > "$FLAMECHASE_REPORT"\n"""
    )
    # Every turn failed: the run did no valid work, so it failed (issue 11), and says so.
    proc = _exec(ws, bad, shape, "budget.turns=2")
    assert proc.returncode == 1 and "none of its 2 turns was valid" in proc.stderr
    # More budget would fail the same way: the advice is where the agents' errors are.
    run_id = status(ws)["id"]
    assert f"see why the agents failed: flamechase status {run_id}" in proc.stderr
    assert "larger -p budget" not in proc.stderr
    # Nor do `status` and the same command again advise more of the same budget.
    shown = cli("status", cwd=ws, check=True).stdout
    assert "next: see each lane's last error; once its agents work, start afresh with " in shown
    again = _exec(ws, bad, shape, "budget.turns=2")
    assert again.returncode == 2 and "resuming it would end the same way" in again.stderr
    assert "larger -p budget" not in shown + again.stderr
    turns = [e for e in events(ws) if e["kind"] == "turn_failed"]
    assert len(turns) == 2
    assert "not JSON" in turns[0]["payload"]["error"]
    assert "status" in turns[1]["payload"]["error"]
    # A failed turn still passes the baton and counts toward the budget.
    assert status(ws)["budget"]["turns"]["used"] == 2


def test_invalid_report_is_repaired_by_a_rerun(ws: Path, tmp_path: Path) -> None:
    fixer = actor(
        tmp_path,
        "fix.sh",
        """
        if [ -n "$FLAMECHASE_REPAIR" ]; then
          echo "$FLAMECHASE_REPAIR" > repair.txt
          echo '{"status":"progress","summary":"fixed"}' > "$FLAMECHASE_REPORT"
        else
          echo '{"status":"progress"}' > "$FLAMECHASE_REPORT"
        fi
    """,
    )
    assert _exec(ws, fixer, fixer, "budget.turns=1").returncode == 0
    assert "summary" in (ws / "repair.txt").read_text()
    valid = [e for e in events(ws) if e["kind"] == "turn_valid"]
    assert valid[0]["payload"]["repairs"] == 1


def test_failing_actor_is_recorded_with_exit_code_and_stderr(ws: Path, tmp_path: Path) -> None:
    boom = actor(tmp_path, "boom.sh", "echo 'disk on fire' >&2\nexit 3\n")
    assert _exec(ws, boom, boom, "budget.turns=1").returncode == 1  # no valid turn
    failed = [e for e in events(ws) if e["kind"] == "turn_failed"][0]["payload"]
    assert failed["exit_code"] == 3
    assert "disk on fire" in failed["error"]


def test_crash_mid_turn_then_resume_gives_cut_turn_to_same_actor(ws: Path, tmp_path: Path) -> None:
    marker = f"fc-cut-{os.getpid()}-{time.time_ns()}"
    slow = actor(
        tmp_path,
        "slow.sh",
        f"""
        echo "start $FLAMECHASE_TURN $FLAMECHASE_ROLE $FLAMECHASE_ATTEMPT" >> NOTES
        if [ "$FLAMECHASE_TURN" = 2 ] && [ "$FLAMECHASE_ATTEMPT" = 1 ]; then
          bash -c 'exec -a {marker} sleep 30'
        fi
    """
        + REPORT_OK,
    )
    p = subprocess.Popen(
        [
            *FLAMECHASE,
            "exec",
            "-f",
            "flame_chase",
            "-a",
            f"exec:{slow}",
            "-a",
            f"exec:{slow}",
            "-p",
            "budget.turns=3,rest_seconds=0.05",
            "t",
        ],
        cwd=ws,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 30
    while time.time() < deadline:
        if (ws / "NOTES").exists() and "start 2" in (ws / "NOTES").read_text():
            break
        time.sleep(0.05)
    wait_for_process(marker)  # the cut turn's own child is running: the resume must end it
    p.kill()
    p.wait()
    st = status(ws)
    assert st["status"] == "stopped"  # the engine is gone, whatever the row says
    assert st["lanes"][0]["turns"] == 1
    assert st["lanes"][0]["in_flight"]["role"] == "second_chaser"
    proc = _exec(ws, slow, slow, "rest_seconds=0.05", task="t")
    assert proc.returncode == 0, proc.stderr
    lines = (ws / "NOTES").read_text().split("\n")[:-1]
    assert lines == [
        "start 1 first_chaser 1",
        "start 2 second_chaser 1",
        "start 2 second_chaser 2",
        "start 3 first_chaser 1",
    ]
    st = status(ws)
    assert st["budget"]["turns"]["used"] == 3
    # The leftover `sleep 30` of the cut turn was ended by the resume.
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert out.stdout.strip() == ""
    kinds = [e["kind"] for e in events(ws)]
    assert kinds.count("turn_interrupted") == 1
    assert kinds.count("run_resumed") == 1


def _wait_for(path: Path, text: str, timeout: float = 20) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if path.exists() and text in path.read_text():
            return
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never appeared in {path}")


def test_sigint_lets_the_turn_finish_then_stops(ws: Path, tmp_path: Path) -> None:
    slow = actor(
        tmp_path, "slow.sh", "echo start >> NOTES\nsleep 1\necho end >> NOTES\n" + REPORT_OK
    )
    p = subprocess.Popen(
        [
            *FLAMECHASE,
            "exec",
            "-f",
            "flame_chase",
            "-a",
            f"exec:{slow}",
            "-a",
            f"exec:{slow}",
            "-p",
            "budget.turns=10",
            "t",
        ],
        cwd=ws,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(ws / "NOTES", "start")
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=20)
    assert p.returncode == 130, err
    assert (ws / "NOTES").read_text().split() == ["start", "end"]
    st = status(ws)
    assert st["status"] == "stopped"
    assert st["budget"]["turns"]["used"] == 1


def test_second_sigint_cuts_the_turn(ws: Path, tmp_path: Path) -> None:
    slow = actor(tmp_path, "slow.sh", "echo start >> NOTES\nsleep 20\n" + REPORT_OK)
    p = subprocess.Popen(
        [
            *FLAMECHASE,
            "exec",
            "-f",
            "flame_chase",
            "-a",
            f"exec:{slow}",
            "-a",
            f"exec:{slow}",
            "-p",
            "budget.turns=10",
            "t",
        ],
        cwd=ws,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(ws / "NOTES", "start")
    send_signal(p, signal.SIGINT)
    send_signal(p, signal.SIGINT)
    p.communicate(timeout=20)
    assert p.returncode == 130
    kinds = [e["kind"] for e in events(ws)]
    assert "turn_interrupted" in kinds
    assert status(ws)["budget"]["turns"]["used"] == 0


def test_graceful_false_cuts_turn_when_duration_runs_out(ws: Path, tmp_path: Path) -> None:
    slow = actor(tmp_path, "slow.sh", "sleep 300\n" + REPORT_OK)
    t0 = time.monotonic()
    proc = _exec(ws, slow, slow, "budget.duration=1s,budget.graceful=false")
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - t0 < 150  # cut, not waited for (300 s)
    assert "turn_interrupted" in [e["kind"] for e in events(ws)]
    assert status(ws)["status"] == "finished"


def test_resume_counts_budget_across_the_whole_run(ws: Path, tmp_path: Path) -> None:
    a = actor(tmp_path, "a.sh", NOTE)
    assert _exec(ws, a, a, "budget.turns=2,rest_seconds=0.05").returncode == 0
    first = status(ws)["id"]
    # Same task, no budget on the command line: the stored one is spent already, so resuming
    # would do nothing; the command says how to go on instead.
    again = _exec(ws, a, a, "rest_seconds=0.05")
    assert again.returncode == 2, again.stderr
    assert "larger -p budget.turns=… (it had 2)" in again.stderr
    assert status(ws)["id"] == first
    assert status(ws)["budget"]["turns"]["used"] == 2
    # Raising the budget on resume continues the same run with the right actor.
    more = _exec(ws, a, a, "budget.turns=3,rest_seconds=0.05")
    assert more.returncode == 0, more.stderr
    assert status(ws)["id"] == first
    lines = (ws / "NOTES").read_text().split("\n")[:-1]
    assert lines[-1] == "3 first_chaser 1"


def test_continue_reads_task_md_and_resumes(ws: Path, tmp_path: Path) -> None:
    (ws / "TASK.md").write_text("write notes\n")
    a = actor(tmp_path, "a.sh", NOTE)
    assert _exec(ws, a, a, "budget.turns=1", task="continue").returncode == 0
    first = status(ws)
    assert first["task"] == "write notes"
    assert _exec(ws, a, a, "budget.turns=2", task="Continue.").returncode == 0
    assert status(ws)["id"] == first["id"]


def test_other_task_or_fresh_mode_starts_a_new_run(ws: Path, tmp_path: Path) -> None:
    a = actor(tmp_path, "a.sh", NOTE)
    assert _exec(ws, a, a, "budget.turns=1", task="one").returncode == 0
    one = status(ws)["id"]
    assert _exec(ws, a, a, "budget.turns=1", task="two").returncode == 0
    two = status(ws)["id"]
    assert _exec(ws, a, a, "budget.turns=1,resume_mode=fresh", task="two").returncode == 0
    three = status(ws)["id"]
    assert len({one, two, three}) == 3


def test_a_different_backend_on_resume_is_recorded(ws: Path, tmp_path: Path) -> None:
    a = actor(tmp_path, "a.sh", NOTE)
    b = actor(tmp_path, "b.sh", NOTE)
    assert _exec(ws, a, a, "budget.turns=1").returncode == 0
    assert _exec(ws, a, b, "budget.turns=2").returncode == 0
    resumed = [e for e in events(ws) if e["kind"] == "run_resumed"][0]
    assert resumed["payload"]["changed_agents"] == {"second_chaser": [f"exec:{a}", f"exec:{b}"]}


def test_no_process_survives_a_run(ws: Path, tmp_path: Path) -> None:
    marker = f"fc-daemon-{os.getpid()}-{time.time_ns()}"
    d = actor(
        tmp_path,
        "daemon.sh",
        f"""
        (setsid bash -c 'exec -a {marker} sleep 300' &)
        bash -c 'exec -a {marker} sleep 300' &
    """
        + REPORT_OK,
    )
    assert _exec(ws, d, d, "budget.turns=2").returncode == 0
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert left.stdout.strip() == "", "a daemon outlived its turn"


def test_runs_and_status_json_shapes(ws: Path, tmp_path: Path) -> None:
    a = actor(tmp_path, "a.sh", NOTE)
    assert _exec(ws, a, a, "budget.turns=2,budget.duration=1h").returncode == 0
    runs = json.loads(cli("runs", "--json", cwd=ws, check=True).stdout)
    assert set(runs[0]) >= {"id", "flow", "workspace", "status", "created", "turns", "cost_usd"}
    st = status(ws, runs[0]["id"][:12])
    assert st["id"] == runs[0]["id"]
    assert set(st) >= {"id", "flow", "status", "budget", "lanes", "last_error"}
    assert set(st["lanes"][0]) >= {
        "lane",
        "turns",
        "next_role",
        "consecutive_failures",
        "held",
        "last_error",
    }
    assert st["budget"]["duration"]["limit"] == 3600
    evs = events(ws)
    assert evs[0]["kind"] == "run_created"
    assert {"seq", "at", "kind", "lane", "actor", "payload"} <= set(evs[0])
    assert cli("status", "nope", cwd=ws).returncode == 2


def test_state_home_and_run_dirs_are_private(ws: Path, tmp_path: Path, state_home: Path) -> None:
    a = actor(tmp_path, "a.sh", NOTE)
    assert _exec(ws, a, a, "budget.turns=1").returncode == 0
    run_dir = state_home / "runs" / status(ws)["id"]
    for d in (state_home, state_home / "runs", run_dir):
        assert d.stat().st_mode & 0o077 == 0, d
    assert (run_dir / "run.db").stat().st_mode & 0o077 == 0


def test_kill_grace_bounds_how_long_a_term_deaf_agent_lives(ws: Path, tmp_path: Path) -> None:
    deaf = actor(tmp_path, "deaf.sh", "trap '' TERM\nwhile :; do sleep 0.2; done\n")
    proc = _exec(ws, deaf, deaf, "budget.turns=1,silence_timeout=0.5,kill_grace=0.3")
    assert proc.returncode == 1, proc.stderr  # its one turn failed
    failed = [e for e in events(ws) if e["kind"] == "turn_failed"][0]["payload"]
    assert "no output" in failed["error"]
    # 0.5 s of silence + 0.3 s of grace; the default grace alone would be 5 s.
    assert failed["duration"] < 3.5
