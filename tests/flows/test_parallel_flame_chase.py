"""parallel_flame_chase through the real CLI: roles, params, lanes, alternation, holds, the
source lock, control paths and the large-copy check.

Every role runs the shared `exec:` actor (tests/flows/pfc_actor.py); a per-test hook decides
what each invocation does. Runs usually end deterministically by having every lane report
`blocked` at some turn: all lanes held -> status `held`, exit 3.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from tests.flows.pfc import (
    RUN_ID_RE,
    Team,
    db_rows,
    lane_of,
    roles,
    run_dir,
    turn_events,
)
from tests.helpers import cli, events, status

STOP_AT_2 = 'if c.turn >= 2:\n    return c.ok("blocked", "stop here")'


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.fixture
def ws(source_tree: Path) -> Path:
    return source_tree


# ---- roles and params ----------------------------------------------------------------------


def test_positional_agents_fill_the_roles_in_order(ws: Path, tmp_path: Path) -> None:
    team = Team(tmp_path / "team", STOP_AT_2)
    scripts = []
    for i in range(7):
        p = team.dir / f"r{i}.py"
        shutil.copyfile(team.actor, p)
        p.chmod(0o755)
        scripts.append(f"exec:{p}")
    proc = team.run(ws, agents=scripts)
    assert proc.returncode == 3, proc.stderr
    order = roles(3)
    assert order == [
        "coordinator",
        "lane_1_actor_a",
        "lane_1_actor_b",
        "lane_2_actor_a",
        "lane_2_actor_b",
        "lane_3_actor_a",
        "lane_3_actor_b",
    ]
    seen = {e["role"]: e["script"] for e in team.log()}
    assert seen == {role: f"r{i}.py" for i, role in enumerate(order)}
    created = next(e for e in events(ws) if e["kind"] == "run_created")["payload"]
    assert list(created["agents"]) == order
    assert created["lanes"] == ["lane-1", "lane-2", "lane-3"]


def test_named_agents_and_role_errors(ws: Path, tmp_path: Path, state_home: Path) -> None:
    team = Team(tmp_path / "team", STOP_AT_2)
    spec = f"exec:{team.actor}"
    named = ",".join(f"{r}={spec}" for r in roles(3))
    proc = team.run(ws, agents=[named])
    assert proc.returncode == 3, proc.stderr
    assert {e["role"] for e in team.log()} == set(roles(3))
    shutil.rmtree(state_home)
    bad = [
        ([spec] * 6, "lane_3_actor_b"),  # one missing
        ([spec] * 8, "8 positional"),  # one too many
        ([named + f",lane_4_actor_a={spec}"], "lane_4_actor_a"),  # a lane that does not exist
        ([f"lane_1_actor_a={spec}", spec], "mixing"),
    ]
    for agents, fragment in bad:
        proc = team.run(ws, agents=agents, task="other task")
        assert proc.returncode == 2, (agents, proc.stderr)
        assert fragment in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    assert not state_home.exists()


@pytest.mark.parametrize("n", [1, 5])
def test_lanes_param_sets_lanes_and_roles(ws: Path, tmp_path: Path, n: int) -> None:
    team = Team(tmp_path / "team", STOP_AT_2)
    proc = team.run(ws, f"lanes={n}")
    assert proc.returncode == 3, proc.stderr
    assert {e["role"] for e in team.log()} == set(roles(n))
    assert len(roles(n)) == 1 + 2 * n
    st = status(ws)
    assert [ln["lane"] for ln in st["lanes"]] == [f"lane-{i}" for i in range(1, n + 1)]
    assert [b["lane"] for b in st["plan"]["lanes"]] == [f"lane-{i}" for i in range(1, n + 1)]
    coord = team.coordinator_log()[0]
    assert coord["lanes"] == ",".join(f"lane-{i}" for i in range(1, n + 1))
    # Lane 1 in the source, every other lane in its own private copy.
    cwds = {e["lane"]: e["cwd"] for e in team.log() if e["lane"]}
    assert cwds["lane-1"] == str(ws)
    private = [cwds[f"lane-{i}"] for i in range(2, n + 1)]
    assert len(set(private)) == n - 1
    assert all(str(run_dir(tmp_path / "fc-home", ws)) in p for p in private)


@pytest.mark.parametrize(
    "param, fragment",
    [
        ("rest_seconds=0.01", "rest_seconds"),
        ("rest_seconds=61", "rest_seconds"),
        ("resume_mode=sometimes", "resume_mode"),
        ("confirm_large_workspace_copies=maybe", "confirm_large_workspace_copies"),
        ("workspace_file_warning_threshold=0", "workspace_file_warning_threshold"),
        ("workspace_file_warning_threshold=100000001", "workspace_file_warning_threshold"),
        ("workspace_copy_warning_threshold_bytes=0", "workspace_copy_warning_threshold_bytes"),
        (
            "workspace_copy_warning_threshold_bytes=1000000000000000001",
            "workspace_copy_warning_threshold_bytes",
        ),
        ("lanes=0", "lanes"),
        ("lanes=9", "lanes"),
        ("no_such_param=1", "no_such_param"),
        ("metric_pattern=SCORE", "metric_pattern"),
        ("direction=up", "direction"),
    ],
)
def test_bad_params_are_refused_before_anything_is_written(
    ws: Path, tmp_path: Path, state_home: Path, param: str, fragment: str
) -> None:
    team = Team(tmp_path / "team")
    before = _tree(ws)
    proc = team.run(ws, param, "budget.turns=3", lanes=3)
    assert proc.returncode == 2, proc.stderr
    assert fragment in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not state_home.exists()
    assert team.log() == []
    assert _tree(ws) == before


def test_param_defaults_and_run_id(ws: Path, tmp_path: Path, state_home: Path) -> None:
    team = Team(tmp_path / "team", STOP_AT_2)
    # The rest is given explicitly by Team.run; everything else keeps its default.
    assert team.run(ws).returncode == 3
    st = status(ws)
    assert RUN_ID_RE.match(st["id"]), st["id"]
    assert st["flow"] == "parallel_flame_chase"
    params = json.loads(db_rows(state_home, ws, "SELECT params FROM run")[0]["params"])
    assert params["rest_seconds"] == 0.05
    assert {
        k: params[k]
        for k in (
            "resume_mode",
            "confirm_large_workspace_copies",
            "workspace_file_warning_threshold",
            "workspace_copy_warning_threshold_bytes",
            "lanes",
        )
    } == {
        "resume_mode": "auto",
        "confirm_large_workspace_copies": False,
        "workspace_file_warning_threshold": 5000,
        "workspace_copy_warning_threshold_bytes": 1073741824,
        "lanes": 3,
    }


# ---- lanes ---------------------------------------------------------------------------------


def test_lane_1_works_in_the_source_others_in_private_snapshots(
    ws: Path, tmp_path: Path, state_home: Path
) -> None:
    team = Team(
        tmp_path / "team",
        """
        (c.ws / f"written-by-{c.lane}-{c.turn}.txt").write_text(c.role)
        if c.lane != "lane-1":
            (c.ws / "README.md").write_text("changed by " + c.lane)
            (c.ws / "pkg" / "mod.py").unlink(missing_ok=True)
        if c.turn >= 2:
            return c.ok("blocked", "stop here")
    """,
    )
    (ws / "tool.sh").write_text("#!/bin/sh\n")
    (ws / "tool.sh").chmod(0o755)
    (ws / "readme-link").symlink_to("README.md")
    before = _tree(ws)
    # Copies kept on the tree they began on (refreshing them: test_pfc_lane_refresh.py).
    assert team.run(ws, "lane_refresh=never").returncode == 3
    root = run_dir(state_home, ws)
    for e in team.log():
        if not e["lane"]:
            continue
        assert e["workspace"] == e["cwd"]
        if e["lane"] == "lane-1":
            assert e["cwd"] == str(ws)
        else:
            assert e["cwd"] == str(root / "lanes" / e["lane"] / "workspace")
    st = status(ws)
    assert [ln["workspace"] for ln in st["lanes"]] == [
        str(ws),
        str(root / "lanes/lane-2/workspace"),
        str(root / "lanes/lane-3/workspace"),
    ]
    # The snapshots started as full copies of the source.
    for lane in ("lane-2", "lane-3"):
        snap = root / "lanes" / lane / "workspace"
        assert (snap / "TASK.md").read_bytes() == before["TASK.md"]
        assert (snap / "README.md").read_text() == f"changed by {lane}"
        assert sorted(p.name for p in snap.glob("written-by-*")) == [
            f"written-by-{lane}-1.txt",
            f"written-by-{lane}-2.txt",
        ]
        # A copy with the tree's links and modes, renamed into place whole.
        assert os.readlink(snap / "readme-link") == "README.md"
        assert os.access(snap / "tool.sh", os.X_OK)
        assert [p.name for p in snap.parent.iterdir() if "partial" in p.name] == []
    # Only lane 1 wrote the source; nothing else changed in it.
    after = _tree(ws)
    added = sorted(set(after) - set(before))
    assert added == ["written-by-lane-1-1.txt", "written-by-lane-1-2.txt"]
    assert {k: after[k] for k in before} == before


def test_actors_alternate_per_lane_whatever_the_outcome(ws: Path, tmp_path: Path) -> None:
    team = Team(
        tmp_path / "team",
        """
        if c.lane == "lane-2" and c.turn == 1:
            sys.exit(1)
        if c.lane == "lane-3" and c.turn == 2:
            return "not json"
        if c.lane == "lane-1" and c.turn == 3:
            return c.ok("no_result", "that direction is exhausted")
        if c.turn >= 4:
            return c.ok("blocked", "stop here")
    """,
    )
    assert team.run(ws).returncode == 3
    st, evs = status(ws), events(ws)
    for n in (1, 2, 3):
        lane = f"lane-{n}"
        got = [(e["turn"], e["role"]) for e in team.lane_log(lane)]
        assert got == [
            (1, f"lane_{n}_actor_a"),
            (2, f"lane_{n}_actor_b"),
            (3, f"lane_{n}_actor_a"),
            (4, f"lane_{n}_actor_b"),
        ], lane
        assert lane_of(st, lane)["next_role"] == f"lane_{n}_actor_a"
        assert lane_of(st, lane)["turns"] == 4
    assert [e["kind"] for e in turn_events(evs, "lane-2")][:2] == ["turn_failed", "turn_valid"]
    assert [e["kind"] for e in turn_events(evs, "lane-3")][:2] == ["turn_valid", "turn_failed"]
    # Every turn is a fresh program run.
    assert len({e["pid"] for e in team.log()}) == len(team.log())


def test_lanes_run_concurrently_with_one_turn_in_flight_each(ws: Path, tmp_path: Path) -> None:
    team = Team(
        tmp_path / "team",
        """
        busy = c.scratch / "busy"
        try:
            os.close(os.open(busy, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            c.save(f"overlap-{c.turn}", "two turns at once")
        try:
            if c.turn == 1:
                everyone = lambda log: {e["lane"] for e in log if e["turn"] == 1} >= {
                    "lane-1", "lane-2", "lane-3"}
                if not c.wait(everyone, timeout=15):
                    c.save("not-concurrent", c.lane)
            time.sleep(0.1)
        finally:
            busy.unlink()
        if c.turn >= 3:
            return c.ok("blocked", "stop here")
    """,
    )
    assert team.run(ws).returncode == 3
    assert not team.has("not-concurrent")
    assert not any(team.has(f"overlap-{n}") for n in (1, 2, 3))
    assert len([e for e in team.log() if e["lane"]]) == 9


def test_exit_crash_or_timeout_fails_the_turn_without_repair(ws: Path, tmp_path: Path) -> None:
    team = Team(
        tmp_path / "team",
        """
        if c.turn == 1:
            if c.lane == "lane-1":
                print("disk on fire", file=sys.stderr)
                sys.exit(3)
            if c.lane == "lane-2":
                os.kill(os.getpid(), signal.SIGSEGV)
            if c.lane == "lane-3":
                time.sleep(300)
        return c.ok("blocked", "stop here")
    """,
    )
    (team.dir / "hook.py").write_text("import signal\n" + (team.dir / "hook.py").read_text())
    t0 = time.monotonic()
    assert team.run(ws, "turn_timeout=2").returncode == 3
    assert time.monotonic() - t0 < 150  # lane 3 was cut, not waited for (300 s)
    evs = events(ws)
    reasons = {"lane-1": "disk on fire", "lane-2": "SIGSEGV", "lane-3": "turn_timeout"}
    for lane, reason in reasons.items():
        # One program run for the failed turn (no repair), one for the next turn.
        assert [e["turn"] for e in team.lane_log(lane, repairs=True)] == [1, 2], lane
        failed = turn_events(evs, lane)[0]
        assert failed["kind"] == "turn_failed", lane
        assert reason in failed["payload"]["error"], lane
        assert failed["payload"]["repairs"] == 0
    assert turn_events(evs, "lane-1")[0]["payload"]["exit_code"] == 3


def test_sigint_lets_turns_in_flight_land_then_stops(ws: Path, tmp_path: Path) -> None:
    team = Team(
        tmp_path / "team",
        """
        c.wait(lambda _: c.flag("signalled"), timeout=20)
        time.sleep(0.3)
    """,
    )
    engine = team.popen(ws)
    end = time.time() + 30
    while time.time() < end and len([e for e in team.log() if e["lane"]]) < 3:
        time.sleep(0.05)
    engine.send_signal(signal.SIGINT)
    team.set_flag("signalled")
    _, err = engine.communicate(timeout=60)
    assert engine.returncode == 130, err
    st = status(ws)
    assert st["status"] == "stopped"
    turns = turn_events(events(ws))
    assert sorted(e["lane"] for e in turns) == ["lane-1", "lane-2", "lane-3"]
    assert {e["kind"] for e in turns} == {"turn_valid"}
    assert len([e for e in team.log() if e["lane"]]) == 3
    # The lock went with the engine.
    again = Team(tmp_path / "again", 'return c.ok("blocked", "stop")')
    assert again.run(ws, task="another task").returncode == 3


# ---- holding ---------------------------------------------------------------------------------


def test_two_failures_hold_a_lane_while_the_others_go_on(ws: Path, tmp_path: Path) -> None:
    team = Team(
        tmp_path / "team",
        """
        if c.lane == "lane-2":
            print(f"broken {c.role}", file=sys.stderr)
            sys.exit(1)
        if c.turn >= 4:
            return c.ok("blocked", "stop here")
    """,
    )
    proc = team.run(ws)
    assert proc.returncode == 3, proc.stderr
    assert [e["role"] for e in team.lane_log("lane-2")] == ["lane_2_actor_a", "lane_2_actor_b"]
    st, evs = status(ws), events(ws)
    assert [e["kind"] for e in turn_events(evs, "lane-2")] == ["turn_failed", "turn_failed"]
    l2 = lane_of(st, "lane-2")
    assert l2["held"] and l2["consecutive_failures"] == 2
    assert "2 failed turns" in l2["held_reason"]
    assert "broken lane_2_actor_b" in l2["last_error"]
    for lane in ("lane-1", "lane-3"):
        assert len(team.lane_log(lane)) == 4
        assert lane_of(st, lane)["consecutive_failures"] == 0
    held = [e for e in evs if e["kind"] == "lane_held"]
    assert [e["lane"] for e in held].count("lane-2") == 1
    # One held lane says what releases it: in the log, the live view's fold and `status`.
    assert "task `continue`" in held[0]["payload"]["remedy"]
    assert "lane-2 is HELD" in proc.stdout and "The other lanes go on" in proc.stdout
    assert "coordinator's next plan releases it" in l2["held_remedy"]
    text = cli("status", cwd=ws, check=True).stdout
    assert "to release it: the other lanes go on; the coordinator's next plan" in text


def test_a_blocked_report_holds_and_all_held_ends_the_run(ws: Path, tmp_path: Path) -> None:
    team = Team(
        tmp_path / "team",
        """
        if c.lane == "lane-2":
            return c.ok("blocked", "needs a licence key nobody has")
        if c.lane == "lane-3" and c.turn == 1:
            sys.exit(1)
        if c.turn >= 3:
            return c.ok("blocked", "stop here")
    """,
    )
    t0 = time.monotonic()
    proc = team.run(ws, "budget.duration=1h")
    assert proc.returncode == 3, proc.stderr
    assert time.monotonic() - t0 < 900  # ends by itself, long before the budget (1 h)
    assert "held" in proc.stderr.strip().splitlines()[-1]
    st, evs = status(ws), events(ws)
    assert st["status"] == "held"
    assert len(team.lane_log("lane-2")) == 1
    l2 = lane_of(st, "lane-2")
    assert l2["held"] and l2["last_status"] == "blocked" and l2["last_error"] is None
    assert "licence key" in l2["held_reason"]
    # lane-3: a failure, then a valid turn resets the count.
    kinds3 = [e["kind"] for e in turn_events(evs, "lane-3")]
    assert kinds3 == ["turn_failed", "turn_valid", "turn_valid"]
    l3 = lane_of(st, "lane-3")
    assert l3["consecutive_failures"] == 0 and l3["last_error"] is None
    assert "run_held" in [e["kind"] for e in evs]


def test_budget_lets_turns_in_flight_land(ws: Path, tmp_path: Path) -> None:
    # The budget is long enough for planning (and recording each copy's base) on a busy
    # machine; each lane's first turn outlasts it.
    team = Team(tmp_path / "team", "time.sleep(12)")
    proc = team.run(ws, "budget.duration=10s")
    assert proc.returncode == 0, proc.stderr
    st = status(ws)
    assert st["status"] == "finished"
    assert st["engine_running"] is None
    turns = turn_events(events(ws))
    assert len(turns) == 3
    assert {e["kind"] for e in turns} == {"turn_valid"}
    # The lock went with the run: another run may start at once.
    again = Team(tmp_path / "again", 'return c.ok("blocked", "stop")')
    assert again.run(ws, task="another task").returncode == 3


# ---- the source lock -------------------------------------------------------------------------


def test_a_second_run_on_the_same_tree_is_refused(
    ws: Path, tmp_path: Path, state_home: Path
) -> None:
    team = Team(
        tmp_path / "team",
        """
        c.wait(lambda _: c.flag("go"), timeout=60)
        return c.ok("blocked", "stop here")
    """,
    )
    first = team.popen(ws)
    try:
        end = time.time() + 30
        while time.time() < end and not any(e["lane"] for e in team.log()):
            time.sleep(0.05)
        run_id = status(ws)["id"]
        other = Team(tmp_path / "other")
        proc = other.run(ws, "budget.turns=3", task="a different task")
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
        assert run_id in proc.stderr
        assert not (other.dir / "log.jsonl").exists()
        # The lock is keyed by the resolved path: another name for the tree is the same tree.
        alias = tmp_path / "alias"
        alias.symlink_to(ws)
        proc = other.run(alias, "budget.turns=3", task="a third task")
        assert proc.returncode == 2 and run_id in proc.stderr
        assert [p.name for p in (state_home / "runs").iterdir()] == [run_id]
    finally:
        team.set_flag("go")
        first.communicate(timeout=60)
    assert first.returncode == 3


# ---- control paths ---------------------------------------------------------------------------

SWAP = {
    # what: (the lane that does it, the path, replaced by a link or by another directory).
    # Agents are jailed to their own place and lane directory; the database swap needs an
    # unjailed lane 1 (sandbox=off): the guard is what protects such a run.
    "artifact_root": ("lane-2", "Path(os.environ['FLAMECHASE_ARTIFACTS'])", "link"),
    "artifact_root_new_dir": ("lane-2", "Path(os.environ['FLAMECHASE_ARTIFACTS'])", "dir"),
    "snapshot_root": ("lane-2", "c.ws", "link"),
    "snapshot_root_new_dir": ("lane-3", "c.ws", "dir"),
    "turn_reports": ("lane-3", "Path(os.environ['FLAMECHASE_REPORT']).parent.parent", "link"),
    "database": ("lane-1", "Path(os.environ['FLAMECHASE_RUN_DIR']) / 'run.db'", "link"),
}


@pytest.mark.parametrize("what", sorted(SWAP))
def test_a_replaced_control_path_fails_the_run(ws: Path, tmp_path: Path, what: str) -> None:
    lane, target, how = SWAP[what]
    team = Team(
        tmp_path / "team",
        f"""
        if c.lane == {lane!r} and c.turn == 1:
            target = {target}
            moved = target.with_name(target.name + ".moved")
            os.rename(target, moved)
            if {how!r} == "link":
                os.symlink(moved, target)
            else:
                shutil.copytree(moved, target, symlinks=True)
            c.save("swapped", str(target))
            return c.ok()
        c.wait(lambda _: c.flag("swapped"), timeout=20)
        time.sleep(0.2)
        if c.turn >= 6:
            return c.ok("blocked", "stop here")
    """.replace("import json", ""),
    )
    (team.dir / "hook.py").write_text("import shutil\n" + (team.dir / "hook.py").read_text())
    proc = team.run(ws, *(["sandbox=off"] if what == "database" else []))
    assert proc.returncode == 1, proc.stderr
    path = team.saved("swapped")
    assert path in proc.stderr
    assert "replaced or linked" in proc.stderr
    evs = events(ws)
    failed = [e for e in evs if e["kind"] == "run_failed"]
    assert len(failed) == 1 and path in failed[0]["payload"]["message"]
    st = status(ws)
    assert st["status"] == "failed"
    assert path in st["last_error"]
    # That lane never took another turn there, and the check ran before the next write:
    # no turn ended after the swap (the swapping one included) was recorded.
    assert [e["turn"] for e in team.lane_log(lane)] == [1]
    assert turn_events(evs) == []


# ---- large copies ----------------------------------------------------------------------------


def test_large_copy_warning_is_printed_and_startup_continues(ws: Path, tmp_path: Path) -> None:
    team = Team(tmp_path / "team", 'return c.ok("blocked", "stop here")')
    proc = team.run(ws, "workspace_file_warning_threshold=1")
    assert proc.returncode == 3, proc.stderr
    err = proc.stderr
    assert err.startswith("WARNING")
    assert "regular files" in err and "apparent bytes" in err
    assert "3 workspace snapshots" in err
    assert "No copy has been made yet." in err
    assert "continuing" in err
    quiet = Team(tmp_path / "quiet", 'return c.ok("blocked", "stop here")')
    proc = quiet.run(ws, task="another task")
    assert "WARNING" not in proc.stderr


@pytest.mark.parametrize(
    "params, copies",
    [
        (("workspace_copy_warning_threshold_bytes=10",), 3),
        (("workspace_file_warning_threshold=2", "lanes=5"), 5),
    ],
)
def test_large_copy_confirmation_without_a_terminal_refuses(
    ws: Path, tmp_path: Path, state_home: Path, params: tuple[str, ...], copies: int
) -> None:
    team = Team(tmp_path / "team")
    before = _tree(ws)
    proc = team.run(ws, "confirm_large_workspace_copies=true", *params)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("WARNING")
    assert f"{copies} workspace snapshots" in proc.stderr
    assert lines[-1].startswith("flamechase exec: error:")
    assert "WARNING" not in lines[-1] and "confirm" in lines[-1]
    assert sum(1 for ln in lines if "error" in ln) == 1
    assert not state_home.exists()
    assert team.log() == []
    assert _tree(ws) == before
    assert not any(p.name.startswith(".") and "partial" in p.name for p in ws.parent.iterdir())


def test_large_copy_check_counts_before_the_lock(ws: Path, tmp_path: Path) -> None:
    """A refusal for large copies wins even while another run holds the tree."""
    team = Team(
        tmp_path / "team",
        """
        c.wait(lambda _: c.flag("go"), timeout=60)
        return c.ok("blocked", "stop here")
    """,
    )
    first = team.popen(ws)
    try:
        end = time.time() + 30
        while time.time() < end and not any(e["lane"] for e in team.log()):
            time.sleep(0.05)
        other = Team(tmp_path / "other")
        proc = other.run(
            ws,
            "confirm_large_workspace_copies=true",
            "workspace_file_warning_threshold=1",
            task="another task",
        )
        assert proc.returncode == 2
        assert proc.stderr.startswith("WARNING")
        assert "owns source" not in proc.stderr
    finally:
        team.set_flag("go")
        first.communicate(timeout=60)
    assert os.path.isdir(ws)
