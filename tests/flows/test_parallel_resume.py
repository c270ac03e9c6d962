"""parallel_flame_chase resume: same task -> same run without re-planning; `continue` with a
changed TASK.md -> re-plan in a fresh snapshot and release held lanes; otherwise a new run.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.flows.pfc import Team, of_kind, run_dir
from tests.helpers import cli, events, status, status_when_readable


@pytest.fixture
def ws(source_tree: Path) -> Path:
    return source_tree


def test_the_same_task_resumes_the_same_run(ws: Path, tmp_path: Path, state_home: Path) -> None:
    team = Team(tmp_path / "team")
    first = team.run(ws, "budget.turns=3")
    assert first.returncode == 0, first.stderr
    run_id = status(ws)["id"]
    assert [(e["lane"], e["turn"]) for e in team.log() if e["lane"]].count(("lane-1", 1)) == 1
    again = team.run(ws, "budget.turns=6")
    assert again.returncode == 0, again.stderr
    st = status(ws)
    assert st["id"] == run_id
    assert st["budget"]["turns"]["used"] == 6
    # The plan was kept: one coordinator session over both runs.
    assert len(team.coordinator_log()) == 1
    assert not (run_dir(state_home, ws) / "planning" / "2").exists()
    evs = events(ws)
    first_reports = {
        e["lane"]: e["payload"]["report_id"] for e in of_kind(evs, "report_published")[:3]
    }
    for n in (1, 2, 3):
        lane = f"lane-{n}"
        got = [(e["turn"], e["role"], e["attempt"]) for e in team.lane_log(lane)]
        assert got == [(1, f"lane_{n}_actor_a", 1), (2, f"lane_{n}_actor_b", 1)], lane
        # What the other lanes published in the first run was still waiting.
        second = team.lane_log(lane)[1]
        assert sorted(d["id"] for d in second["inbox"]) == sorted(
            rid for src, rid in first_reports.items() if src != lane
        )
    assert len(of_kind(evs, "run_resumed")) == 1
    assert len(of_kind(evs, "planned")) == 1


def test_continue_with_a_changed_task_md_replans_in_a_fresh_snapshot(
    ws: Path, tmp_path: Path, state_home: Path
) -> None:
    (ws / "TASK.md").write_text("first objective\n")
    team = Team(
        tmp_path / "team",
        """
        if c.flag("phase2"):
            return c.ok("blocked", "stop again")
        if c.lane == "lane-2":
            sys.exit(1)
        return c.ok("blocked", "stop here")
    """,
    )
    # 1. Every lane ends held: lane-2 after two failures, the others blocked.
    proc = team.run(ws, task="continue")
    assert proc.returncode == 3, proc.stderr
    st = status(ws)
    run_id = st["id"]
    assert st["task"] == "first objective"
    assert all(ln["held"] for ln in st["lanes"])
    turns_before = len([e for e in team.log() if e["lane"]])
    # 2. `continue` with TASK.md unchanged would change nothing: refused in one line that
    # says what held the run and what to type; nothing runs.
    proc = team.run(ws, task="Continue.")
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert f"run {run_id} on this task already held: every lane is held" in proc.stderr
    assert "change TASK.md" in proc.stderr and "-p resume_mode=fresh" in proc.stderr
    assert status(ws)["id"] == run_id
    assert len(team.coordinator_log()) == 1
    assert len([e for e in team.log() if e["lane"]]) == turns_before
    # 3. A changed TASK.md and a new file: re-plan in a snapshot of the current tree.
    (ws / "TASK.md").write_text("second objective\n")
    (ws / "NEW.txt").write_text("added after the first run\n")
    team.set_flag("phase2")
    proc = team.run(ws, task="continue")
    assert proc.returncode == 3, proc.stderr
    st = status(ws)
    assert st["id"] == run_id
    assert st["task"] == "second objective"
    coord = team.coordinator_log()
    assert len(coord) == 2
    planning = run_dir(state_home, ws) / "planning" / "2" / "workspace"
    assert coord[1]["cwd"] == str(planning)
    assert "NEW.txt" in coord[1]["listing"] and "NEW.txt" not in coord[0]["listing"]
    assert coord[1]["task_md"] == "second objective\n"
    # Both planners' snapshots went once each had planned.
    assert not planning.exists()
    assert not (run_dir(state_home, ws) / "planning" / "1" / "workspace").exists()
    evs = events(ws)
    replanned = of_kind(evs, "objective_replanned")
    assert len(replanned) == 1
    assert sorted(replanned[0]["payload"]["released"]) == ["lane-1", "lane-2", "lane-3"]
    # Released lanes took a turn again, with the right actor and turn number.
    after = [
        (e["lane"], e["turn"], e["role"])
        for e in team.log()
        if e["lane"] and e["t"] > coord[1]["t"]
    ]
    assert sorted(after) == [
        ("lane-1", 2, "lane_1_actor_b"),
        ("lane-2", 3, "lane_2_actor_a"),
        ("lane-3", 2, "lane_3_actor_b"),
    ]
    lane2 = next(ln for ln in st["lanes"] if ln["lane"] == "lane-2")
    assert lane2["consecutive_failures"] == 0 and lane2["last_status"] == "blocked"


def test_the_large_copy_check_counts_only_the_copies_a_resume_makes(
    ws: Path, tmp_path: Path, state_home: Path
) -> None:
    (ws / "TASK.md").write_text("first objective\n")
    team = Team(tmp_path / "team", 'return c.ok("blocked", "stop here")')
    assert team.run(ws, task="continue").returncode == 3
    run_id = status(ws)["id"]
    big = ("workspace_file_warning_threshold=1", "confirm_large_workspace_copies=true")
    # A plain `continue` would change nothing: refused before any copy is weighed.
    proc = team.run(ws, *big, task="continue")
    assert proc.returncode == 2, proc.stderr
    assert "WARNING" not in proc.stderr and "already held" in proc.stderr
    # A changed objective makes one planning copy: warned, and refused without a terminal.
    (ws / "TASK.md").write_text("second objective\n")
    proc = team.run(ws, *big, task="continue")
    assert proc.returncode == 2
    assert proc.stderr.startswith("WARNING") and "1 workspace snapshot" in proc.stderr
    assert not (run_dir(state_home, ws) / "planning" / "2").exists()
    assert len(team.coordinator_log()) == 1
    st = status(ws)
    assert st["id"] == run_id and st["task"] == "first objective"


def test_a_different_task_or_fresh_mode_starts_a_new_run(ws: Path, tmp_path: Path) -> None:
    team = Team(tmp_path / "team", 'return c.ok("blocked", "stop here")')
    ids = []
    for params, task in (((), "one"), ((), "two"), (("resume_mode=fresh",), "two")):
        proc = team.run(ws, *params, task=task)
        assert proc.returncode == 3, proc.stderr
        ids.append(status(ws)["id"])
    assert len(set(ids)) == 3
    assert len(team.coordinator_log()) == 3
    runs = json.loads(cli("runs", "--json", cwd=ws, check=True).stdout)
    assert sorted(r["id"] for r in runs) == sorted(ids)


def test_resume_cannot_change_the_number_of_lanes(ws: Path, tmp_path: Path) -> None:
    team = Team(tmp_path / "team")
    assert team.run(ws, "lanes=2", "budget.turns=2").returncode == 0
    run_id = status(ws)["id"]
    proc = team.run(ws, "lanes=3", "budget.turns=4")
    assert proc.returncode == 2
    assert "lanes" in proc.stderr and run_id in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    # Without the param the stored lane count holds: five roles, same run.
    proc = team.run(ws, "budget.turns=4", lanes=2)
    assert proc.returncode == 0, proc.stderr
    assert status(ws)["id"] == run_id
    assert [ln["lane"] for ln in status(ws)["lanes"]] == ["lane-1", "lane-2"]
    assert len(team.coordinator_log()) == 1


def test_continue_needs_task_md_or_a_run(ws: Path, tmp_path: Path, state_home: Path) -> None:
    (ws / "TASK.md").unlink()
    team = Team(tmp_path / "team")
    proc = team.run(ws, task="continue")
    assert proc.returncode == 2
    assert "TASK.md" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not state_home.exists()


def test_a_killed_engine_resumes_with_the_cut_turns_taken_again(ws: Path, tmp_path: Path) -> None:
    team = Team(
        tmp_path / "team",
        """
        if c.turn == 1 and c.attempt == 1:
            c.save("waiting", "")
            time.sleep(600)
        return c.ok("blocked", "stop here")
    """,
    )
    engine = team.popen(ws)
    try:
        end = time.time() + 30
        while time.time() < end and len([e for e in team.log() if e["lane"]]) < 3:
            time.sleep(0.05)
        time.sleep(0.3)
        os.kill(engine.pid, signal.SIGKILL)
    finally:
        engine.communicate(timeout=30)
    run_id = status(ws)["id"]
    t0 = time.monotonic()
    proc = team.run(ws)
    assert proc.returncode == 3, proc.stderr
    assert time.monotonic() - t0 < 300  # the leftovers (600 s) were ended, not waited for
    assert status(ws)["id"] == run_id
    for n in (1, 2, 3):
        got = [(e["turn"], e["attempt"], e["role"]) for e in team.lane_log(f"lane-{n}")]
        assert got == [(1, 1, f"lane_{n}_actor_a"), (1, 2, f"lane_{n}_actor_a")]
    assert len(of_kind(events(ws), "turn_interrupted")) == 3
    assert len(team.coordinator_log()) == 1


def test_a_turn_cut_by_a_crash_keeps_its_budget_slot_and_is_retaken(
    ws: Path, tmp_path: Path, state_home: Path
) -> None:
    """budget.turns=6 over three lanes; the engine is SIGKILLed while the last turn the budget
    allows runs; on --resume that turn is taken again by the same actor with the same number,
    and it counts once: no other lane gets its slot."""
    team = Team(
        tmp_path / "team",
        """
        if c.lane == "lane-3" and c.attempt == 1:
            c.wait(lambda _: c.flag("never"), timeout=60)
    """,
    )
    engine = team.popen(ws, "budget.turns=6")
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            st = status_when_readable(ws)
            if (
                st
                and st["budget"]["turns"]["used"] == 5
                and any(ln["in_flight"] for ln in st["lanes"] if ln["lane"] == "lane-3")
            ):
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the run never reached five turns with lane 3's under way")
        engine.send_signal(signal.SIGKILL)
        engine.wait(timeout=30)
    finally:
        if engine.poll() is None:
            engine.kill()
            engine.wait()
    before = {(e["lane"], e["turn"]) for e in team.log() if e["lane"]}
    proc = team.run(ws, "budget.turns=6")  # the same command: it picks the run up
    assert proc.returncode == 0, proc.stderr
    assert "budget turns is spent" in proc.stderr
    after = [
        e
        for e in team.log()
        if (e["lane"] and (e["lane"], e["turn"]) not in before)
        or (e["lane"] == "lane-3" and e["attempt"] == 2)
    ]
    assert [(e["lane"], e["turn"], e["role"], e["attempt"]) for e in after] == [
        ("lane-3", 1, "lane_3_actor_a", 2)
    ]
    st = status(ws)
    assert st["budget"]["turns"]["used"] == 6
    turns = [e for e in events(ws) if e["kind"] in ("turn_valid", "turn_failed") and e["lane"]]
    assert len(turns) == 6
