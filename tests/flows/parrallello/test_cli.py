"""parrallello end to end through the real `flamechase` command: scripted builders and critics
(`exec:`), real gate scripts, real git, real places and jails."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from flamechase.view.renderables import dashboard
from flamechase.view.replay import load_run
from flamechase.view.state import RunFold
from tests.flows.parrallello.scripted import actors, git, repo
from tests.helpers import cli, events, status

FAST = "rest_seconds=0.05,prep=false,budget.turns=80"


def run(
    tmp: Path,
    ws: Path,
    config: dict[str, Any],
    *params: str,
    timeout: float = 240,
    lead: bool = False,
) -> Any:
    args, env = actors(tmp, config, lead=lead)
    return cli(
        "exec",
        "-f",
        "parrallello",
        *args,
        "-p",
        FAST,
        "-p",
        "plan=PLAN.yaml",
        *(x for p in params for x in ("-p", p)),
        "raise every VALUE",
        cwd=ws,
        env=env,
        timeout=timeout,
    )


def by_front(evs: list[dict[str, Any]], kind: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for e in evs:
        if e["kind"] == kind:
            out.setdefault(e["payload"]["front"], []).append(e["payload"])
    return out


def test_the_approval_truth_table_with_four_fronts_building_at_once(tmp_path: Path) -> None:
    fronts = {"A": {}, "B": {}, "C": {}, "D": {"target": 99}}
    ws = repo(tmp_path, fronts, blocks=1, rounds_per_block=1)
    everyone = [f"{f}.core" for f in fronts]
    config = {
        "A": {},
        "B": {"severity": "major"},
        "C": {"severity": "medium"},
        "D": {"approve": True},
    }
    for f in fronts:  # each builder waits until every other has started: all four at once
        config[f]["wait_for"] = [x for x in everyone if not x.startswith(f)]
    proc = run(tmp_path, ws, config)
    assert proc.returncode == 1, proc.stderr  # not every front was approved
    evs = events(ws)
    verdicts = {f: v[0] for f, v in by_front(evs, "verdict_recorded").items()}
    assert {f: v["approved"] for f, v in verdicts.items()} == {
        "A": True,
        "B": False,
        "C": False,
        "D": False,
    }
    assert (verdicts["B"]["majors"], verdicts["C"]["mediums"]) == (1, 1)
    assert verdicts["D"]["critic_approve"] is True and verdicts["D"]["gate"] == "1/2 FAIL"
    mismatch = [
        e["payload"]
        for e in evs
        if e["kind"] == "anomaly" and e["payload"]["what"] == "critic-rule-mismatch"
    ]
    assert [m["front"] for m in mismatch] == ["D"]
    # Only the approved front lands in the source, as one commit after the checkpoint.
    assert (ws / "src" / "A" / "core.py").read_text() == "VALUE = 2\n"
    assert (ws / "src" / "B" / "core.py").read_text() == "VALUE = 1\n"
    log = git(ws, "log", "--format=%s").splitlines()
    assert log[0] == "parrallello: front A approved (round 1)"
    tags = git(ws, "tag").splitlines()
    assert len(tags) == 1 and tags[0].startswith("pre-parrallello-")
    st = status(ws)
    assert st["fronts"]["A"]["status"] == "approved" and st["fronts"]["A"]["progress"] == 1.0
    assert st["fronts"]["D"]["status"] == "not_approved"
    assert [ln["front"] for ln in st["lanes"] if ln["lane"].endswith(".core")] == list(fronts)
    # One front of four approved: the run failed, and its bar never reads 100 %.
    assert st["progress"]["overall"] < 1 and st["progress"]["bar"].endswith("] 99%")
    assert st["fronts"]["D"]["stopped"]["round"] == 1  # where D stopped, in words for people
    assert [(a["what"], a["front"]) for a in st["anomalies"]] == [("critic-rule-mismatch", "D")]


def test_every_gate_failure_fails_closed(tmp_path: Path) -> None:
    modes = [
        "no-result",
        "bad-json",
        "empty",
        "no-summary",
        "summary-mismatch",
        "exit-mismatch",
        "crash",
        "timeout",
    ]
    fronts: dict[str, dict[str, Any]] = {
        f"G{i}": {"mode": m, "target": 99, "plan": {"gate_timeout": 3} if m == "timeout" else {}}
        for i, m in enumerate(modes)
    }
    ws = repo(tmp_path, fronts, blocks=1, rounds_per_block=1)
    config = {f: {"approve": True} for f in fronts}
    proc = run(tmp_path, ws, config, "budget.turns=40", timeout=400)
    assert proc.returncode == 1, proc.stderr
    gates = by_front(events(ws), "gate_ran")
    reasons = {f: [g["reason"] for g in runs] for f, runs in gates.items()}
    want = {
        "no-result": "no-result-line",
        "bad-json": "bad-json",
        "empty": "empty",
        "no-summary": "no-summary-line",
        "summary-mismatch": "inconsistent",
        "exit-mismatch": "inconsistent",
        "crash": "crash",
        "timeout": "timeout",
    }
    for i, mode in enumerate(modes):
        assert reasons[f"G{i}"] == [want[mode], want[mode]], (mode, reasons[f"G{i}"])
    verdicts = by_front(events(ws), "verdict_recorded")
    assert not any(v[0]["approved"] for v in verdicts.values())  # the critic said approve


def test_a_gate_that_silently_drops_items_fails_closed(tmp_path: Path) -> None:
    ws = repo(tmp_path, {"P": {"mode": "drop"}}, blocks=1, rounds_per_block=1)
    proc = run(tmp_path, ws, {"P": {"approve": True}})
    assert proc.returncode == 1, proc.stderr
    (baseline, rnd) = by_front(events(ws), "gate_ran")["P"]
    assert baseline["m"] == 2 and baseline["reason"] is None
    assert rnd["reason"] == "dropped-items" and rnd["m"] == 1 and not rnd["passed"]


def test_edits_outside_a_builders_files_are_reverted_and_a_gate_edit_refuses_the_round(
    tmp_path: Path,
) -> None:
    ws = repo(tmp_path, {"O": {}, "T": {}}, blocks=1, rounds_per_block=1)
    escape = ["RUN_DIR/fronts/O/workspace/escape.txt", str(ws / "escape.txt")]
    proc = run(tmp_path, ws, {"O": {"outside": True, "escape": escape}, "T": {"gate_edit": True}})
    assert proc.returncode == 1, proc.stderr
    evs = events(ws)
    checked = {f: c[0] for f, c in by_front(evs, "builder_checked").items()}
    assert checked["O"]["outside"] == ["README.md"] and checked["O"]["accepted"] == 1
    assert checked["O"]["failed_tickets"] == ["G-T.O.value"]
    assert checked["T"]["frozen"] == ["gates/T.py"]
    verdicts = {f: v[0] for f, v in by_front(evs, "verdict_recorded").items()}
    assert not verdicts["O"]["approved"] and verdicts["O"]["majors"] == 1
    assert not verdicts["T"]["approved"]
    assert any("edited the frozen gate" in r for r in verdicts["T"]["reasons"])
    places = {e["payload"]["place"]: e["payload"]["path"] for e in evs if e["kind"] == "place_made"}
    front_o, front_t = Path(places["fronts/O"]), Path(places["fronts/T"])
    assert (front_o / "README.md").read_text() == "the project\n"  # reverted by not taking
    assert (front_o / "src/O/core.py").read_text() == "VALUE = 2\n"  # its own file taken
    assert "target moved" not in (front_t / "gates/T.py").read_text()
    assert (front_t / "src/T/core.py").read_text() == "VALUE = 1\n"  # the round's work refused
    rounds = [
        e["payload"]["round"]
        for e in evs
        if e["kind"] == "gate_ran" and e["payload"]["front"] == "T"
    ]
    assert rounds == [0]  # the refused round was never gated nor reviewed
    assert (ws / "README.md").read_text() == "the project\n"
    # Builders run jailed: the front's tree and the source are out of their reach.
    assert not (front_o / "escape.txt").exists() and not (ws / "escape.txt").exists()
    # What the runtime detected is the run's state: `status` (both forms), the log, the views.
    st = status(ws)
    assert {(a["what"], a["front"], a["round"]) for a in st["anomalies"]} == {
        ("ownership-violation", "O", 1),
        ("critic-rule-mismatch", "O", 1),  # it approved a round with a major finding
        ("gate-tamper", "T", 1),
    }
    assert st["anomaly_count"] == 3
    assert any("Anomaly in front T, round 1: gate-tamper" in a for a in st["alerts"])
    human = cli("status", cwd=ws).stdout
    assert "anomalies: 3" in human and "gate-tamper (front T round 1)" in human
    log = cli("events", cwd=ws).stdout
    assert "Anomaly in front O, round 1: ownership-violation" in log
    # The refused round is said refused: its gate never ran, so no gate is said to fail.
    said = next(x for x in log.splitlines() if "Front T, round 1: REFUSED" in x)
    assert "edited the frozen gate (gates/T.py); nothing of it taken, its gate not run" in said
    assert "a gate does not PASS" not in said
    handoff = next(e["payload"] for e in evs if e["kind"] == "turn_valid" and e["lane"] == "O.core")
    assert "WROTE" not in json.dumps(handoff)


def test_the_round_and_block_ceilings_end_a_front_not_approved(tmp_path: Path) -> None:
    ws = repo(
        tmp_path,
        {"P": {"target": 99, "mode": "locked", "plan": {"exclusive": True}}},
        blocks=2,
        rounds_per_block=2,
    )
    proc = run(tmp_path, ws, {"P": {}})
    assert proc.returncode == 1, proc.stderr
    evs = events(ws)
    # A performance gate: the runtime measured it under the run's lock, every time.
    gates = [e["payload"] for e in evs if e["kind"] == "gate_ran"]
    assert len(gates) == 5 and all(g["reason"] is None and g["m"] == 2 for g in gates)
    assert [e["payload"]["round"] for e in evs if e["kind"] == "round_started"] == [1, 2, 3, 4]
    assert [
        (e["payload"]["block"], e["payload"]["rounds"]) for e in evs if e["kind"] == "block_ended"
    ] == [(1, 2), (2, 2)]
    (end,) = [e["payload"] for e in evs if e["kind"] == "front_ended"]
    assert (
        end["status"] == "not_approved" and "ceiling reached: 2 blocks of 2 rounds" in end["reason"]
    )
    assert [t["id"] for t in end["open_tickets"]] == ["G-T.P.value"]
    assert not any(e["kind"] == "turn_started" and e["payload"]["turn"] == 5 for e in evs)
    st = status(ws)
    assert st["fronts"]["P"]["status"] == "not_approved"
    # Where it stopped and where its work is, never a near-done 99 %.
    tree = Path(end["tree"])
    assert st["fronts"]["P"]["stopped"] == {"round": 4, "block": 2, "blocks": 2, "tree": str(tree)}
    assert (tree / "src/P/core.py").read_text() == "VALUE = 5\n"  # its four rounds' work
    human = cli("status", cwd=ws).stdout
    line = next(x for x in human.splitlines() if x.strip().startswith("P "))
    assert "NOT APPROVED" in line and "it stopped at round 4 (block 2 of 2)" in line, line
    assert f"its work stays in its tree: {tree}" in line and "%" not in line
    assert "overall: 0 of 1 front approved" in human and "99%" not in human
    log = cli("events", cwd=ws).stdout
    said = next(x for x in log.splitlines() if "Front P NOT APPROVED" in x)
    assert "It stopped at round 4 (block 2 of 2)" in said and "99%" not in said, said
    last = next(x for x in log.splitlines() if "Front P, round 4: not approved" in x)
    assert "The front's last round" in last and "99%" not in last, last


def test_a_run_killed_mid_block_resumes_at_the_same_round(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import time

    from tests.helpers import FLAMECHASE

    ws = repo(tmp_path, {"P": {"target": 4}}, blocks=2, rounds_per_block=2)
    args, env = actors(tmp_path, {"P": {"hang_round": 2}})
    cmd = [
        *FLAMECHASE,
        "exec",
        "-f",
        "parrallello",
        *args,
        "-p",
        FAST,
        "-p",
        "plan=PLAN.yaml",
        "raise every VALUE",
    ]
    engine = subprocess.Popen(
        cmd, cwd=ws, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    home = Path(os.environ["FLAMECHASE_HOME"])
    deadline = time.monotonic() + 120
    while not list(home.glob("runs/*/lanes/P.core/started-2")):  # round 2's builder hangs
        assert engine.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    mid = status(ws)["fronts"]["P"]
    assert (mid["block"], mid["round"], mid["phase"]) == (1, 2, "build")
    engine.send_signal(signal.SIGKILL)
    engine.wait()
    proc = cli(*cmd[len(FLAMECHASE) :], cwd=ws, env=env, timeout=240)
    assert proc.returncode == 0, proc.stderr
    evs = events(ws)
    assert [e["payload"]["round"] for e in evs if e["kind"] == "round_started"] == [1, 2, 3]
    assert [e["payload"]["round"] for e in evs if e["kind"] == "verdict_recorded"] == [1, 2, 3]
    retaken = [
        e
        for e in evs
        if e["kind"] == "turn_started" and e["lane"] == "P.core" and e["payload"]["turn"] == 2
    ]
    assert [e["payload"]["attempt"] for e in retaken] == [1, 2]
    assert any(e["kind"] == "run_resumed" for e in evs)
    assert (ws / "src" / "P" / "core.py").read_text() == "VALUE = 4\n"
    assert json.loads(cli("status", "--json", cwd=ws).stdout)["fronts"]["P"]["status"] == "approved"


def test_a_bad_plan_is_refused_in_one_clean_line_and_nothing_is_written(
    tmp_path: Path, state_home: Path
) -> None:
    ws = repo(tmp_path, {"A": {}, "B": {"plan": {"owners": {"core": ["src/**"]}}}})
    head = git(ws, "rev-parse", "HEAD")
    proc = run(tmp_path, ws, {})
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "flamechase exec: error: param plan=PLAN.yaml: wave 1: A.core (src/A/**) and B.core "
        "(src/**) both own src/A/a; give each file one writer"
    ]
    assert not (state_home / "runs").exists() or not any((state_home / "runs").iterdir())
    assert git(ws, "rev-parse", "HEAD") == head and git(ws, "tag") == ""
    assert git(ws, "status", "--porcelain") == ""


@pytest.mark.parametrize("sandbox", ["auto", "off"])
def test_a_job_a_builder_leaves_running_is_ended_at_the_rounds_end(
    tmp_path: Path, state_home: Path, sandbox: str
) -> None:
    # A sleep no other process on this machine runs: its argv names this test's run alone.
    seconds = f"300.{uuid.uuid4().int % 10**9:09d}"
    ws = repo(tmp_path, {"P": {}}, blocks=1, rounds_per_block=1)
    proc = run(tmp_path, ws, {"P": {"job": ["sleep", seconds]}}, f"sandbox={sandbox}")
    assert proc.returncode == 0, proc.stderr
    evs = events(ws)
    note = next(
        e["payload"]["result"]["handoff"]
        for e in evs
        if e["kind"] == "turn_valid" and e["lane"] == "P.core"
    )
    assert "JOB 0 orphan-1" in note  # the builder did leave a job behind
    (jobs,) = state_home.glob("runs/*/lanes/P.core/jobs")
    rows = json.loads(cli("job", "list", "--json", "--dir", str(jobs), cwd=ws).stdout)
    assert [(r["id"], r["argv"]) for r in rows] == [("orphan-1", ["sleep", seconds])]
    # Jailed, the job ended with its turn and the reap records it; unjailed, the reap ends it.
    assert rows[0]["state"] == ("killed" if sandbox == "off" else "reaped"), rows
    assert not _running(seconds)
    ran = [
        e["payload"]
        for e in evs
        if e["kind"] == "ran" and e["payload"]["key"] == "pll:P:reap:1:core"
    ]
    assert len(ran) == 1 and "orphan-1" in ran[0]["receipt"]["output"]


def _running(marker: str) -> list[int]:
    """Processes on this machine whose argv holds `marker`."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if marker.encode() in cmdline.read_bytes().split(b"\0"):
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found


def test_a_builder_sitting_on_the_lock_cannot_fail_another_fronts_performance_gate(
    tmp_path: Path,
) -> None:
    # A's gate measures alone (and refuses to run outside the lock); H's builder takes the lock
    # once A's builder has started and keeps it (up to 50 s) while A's round is gated.
    fronts: dict[str, dict[str, Any]] = {
        "A": {"mode": "locked", "plan": {"exclusive": True, "gate_timeout": 20}},
        "H": {},
    }
    ws = repo(tmp_path, fronts, blocks=1, rounds_per_block=1)
    config = {"A": {"wait_for": ["H.core/holding"]}, "H": {"wait_for": ["A.core"], "hog": 50}}
    proc = run(tmp_path, ws, config)
    assert proc.returncode == 0, proc.stderr
    evs = events(ws)
    gates = by_front(evs, "gate_ran")["A"]
    assert [(g["round"], g["passed"], g["reason"]) for g in gates] == [
        (0, False, None),
        (1, True, None),
    ]
    # The runtime took the lock from the builder, which was told so when it let go.
    (ran,) = [
        e["payload"] for e in evs if e["kind"] == "ran" and e["payload"]["key"] == "pll:A:gate:1:"
    ]
    assert ran["receipt"]["lock"]["had"] is True and ran["receipt"]["lock"]["held_by"] == ["hog"]
    note = next(
        e["payload"]["result"]["handoff"]
        for e in evs
        if e["kind"] == "turn_valid" and e["lane"] == "H.core"
    )
    assert "HOG 0 RELEASE 76 " in note and "ended early for the runtime's gate" in note
    verdicts = {f: v[0]["approved"] for f, v in by_front(evs, "verdict_recorded").items()}
    assert verdicts == {"A": True, "H": True}


def test_account_usage_from_a_probe_pauses_the_run_in_one_line(tmp_path: Path) -> None:
    ws = repo(tmp_path, {"P": {"target": 99}}, blocks=2, rounds_per_block=1)
    (ws / "usage.sh").write_text(
        'echo "asking the account"\necho \'{"weekly": 0.5, "extra_credit": 0.93}\'\n'
    )
    git(ws, "add", "usage.sh")
    git(ws, "-c", "user.email=u@example.invalid", "-c", "user.name=u", "commit", "-qm", "probe")
    proc = run(tmp_path, ws, {"P": {}}, "usage_probe=sh usage.sh")
    assert proc.returncode == 3, proc.stderr  # held: paused, as the seed says
    (read,) = [e["payload"] for e in events(ws) if e["kind"] == "usage_read"]
    assert read["shares"] == {"weekly": 0.5, "extra_credit": 0.93}
    said = (
        "extra credit at 93% of its ceiling (≥ 90%, from the probe): "
        "the run pauses at the end of the round"
    )
    assert read["pause"] == said
    st = status(ws)
    assert st["fronts"]["P"]["status"] == "waiting"  # no front opens on the pause
    assert st["usage"]["pause"] == said


def test_a_run_held_on_the_extra_credit_resumes_with_its_next_round(tmp_path: Path) -> None:
    ws = repo(tmp_path, {"P": {"target": 3}}, blocks=1, rounds_per_block=3)
    (ws / "usage.sh").write_text("cat account.json\n")  # the probe: reads what the test says
    git(ws, "add", "usage.sh")
    git(ws, "-c", "user.email=u@example.invalid", "-c", "user.name=u", "commit", "-qm", "probe")
    probe = "usage_probe=sh usage.sh"
    (ws / "account.json").write_text('{"extra_credit": 0.1}\n')
    # Round 1's critic (an exec agent) reports the extra credit at 93 %, as a CLI would.
    config = {"P": {"account": {"1": {"extra_credit": 0.93, "weekly": 0.3}}}}
    first = run(tmp_path, ws, config, probe)
    assert first.returncode == 3, first.stderr
    turn_ends = [e["payload"] for e in events(ws) if e["kind"] == "turn_valid"]
    assert {
        "usage_shares": {"extra_credit": 0.93, "weekly": 0.3},
        "usage_source": "exec",
    }.items() <= (next(t for t in turn_ends if t["usage_shares"]).items())
    st = status(ws)
    assert st["fronts"]["P"]["round"] == 1
    assert st["usage"]["pause"].startswith(
        "extra credit at 93% of its ceiling (≥ 90%, from exec at a critic turn)"
    )
    # The probe read after the round is the freshest word on the share, shown with its source.
    assert "usage: extra credit at 93%" in "\n".join(st["display"])
    assert st["usage"]["sources"] == {
        "extra_credit": "the probe",
        "weekly": "exec at a critic turn",
    }
    # Resumed by the same command while the probe still reads over 90 %: one line, held.
    (ws / "account.json").write_text('{"extra_credit": 0.95}\n')
    still = run(tmp_path, ws, {"P": {}}, probe)
    assert still.returncode == 3, still.stderr
    out = still.stdout + still.stderr
    assert "still held: extra credit at 95% of its ceiling (≥ 90%, from the probe)" in out
    # ... and once it reads below: round 2, not round 1 again, and the front is approved.
    (ws / "account.json").write_text('{"extra_credit": 0.2}\n')
    done = run(tmp_path, ws, {"P": {}}, probe)
    assert done.returncode == 0, done.stdout + done.stderr
    evs = events(ws)
    assert [e["payload"]["round"] for e in evs if e["kind"] == "round_started"] == [1, 2]
    assert status(ws)["fronts"]["P"]["status"] == "approved"


def test_weekly_usage_a_cli_reports_holds_the_run_after_its_block_and_the_same_command_resumes(
    tmp_path: Path, state_home: Path
) -> None:
    ws = repo(tmp_path, {"P": {"target": 3}}, blocks=2, rounds_per_block=1)
    # Round 1's critic (an exec agent) reports the weekly share at 93 %, as a CLI would.
    config = {"P": {"account": {"1": {"weekly": 0.93}}}}
    first = run(tmp_path, ws, config)
    assert first.returncode == 3, first.stderr  # held: wait mode until the reset
    said = "weekly usage at 93% (≥ 92%, from exec at a critic turn): no new block starts"
    wait = (
        f"Front P waits after block 1: {said}; no probe reads that share (-p usage_probe): "
        "the run is held once nothing runs; run the same command after the reset."
    )
    assert wait in first.stdout
    assert f"held: {said}; front P waits; to go on, run the same command again" in first.stderr
    st = status(ws)
    assert st["fronts"]["P"]["status"] == "building" and st["fronts"]["P"]["round"] == 1
    assert f"usage: {said}" in "\n".join(st["display"])
    assert wait.rstrip(".")[0].lower() + wait.rstrip(".")[1:] in st["alerts"]
    shown = cli("status", "last", cwd=ws, check=True).stdout
    assert "P: wave 1 · state waits for the usage reset" in shown
    live = _live(state_home)  # the live view: the fronts panel and the alert
    assert "waits for the usage reset" in live and wait.rstrip(".").lower()[:60] in live.lower()
    # After the reset: the same command picks it up with block 2, not block 1 again.
    done = run(tmp_path, ws, {"P": {}})
    assert done.returncode == 0, done.stdout + done.stderr
    evs = events(ws)
    assert [e["payload"]["round"] for e in evs if e["kind"] == "round_started"] == [1, 2]
    assert status(ws)["fronts"]["P"]["status"] == "approved"


def _live(state_home: Path) -> str:
    """The live view of the newest run, as text."""
    run, lanes, evs = load_run(next(state_home.glob("runs/*/run.db")).parent)
    fold = RunFold.from_run(run, lanes)
    for e in evs:
        fold.apply(e)
    out = StringIO()
    Console(file=out, width=400, color_system=None).print(
        dashboard(fold.snapshot(), datetime.now(UTC))
    )
    return out.getvalue()
