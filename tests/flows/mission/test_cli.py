"""parallel_flame_chase_mission end to end through `flamechase exec` with `exec:` actors:
lane 2's package accepted, re-hashed, integrated by lane 1, whose paused mission resumes and
ends the run by itself; an engine SIGKILLed while an audit is being decided resumes to the
same state, the audit decided once and nothing lost."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from flamechase.view.renderables import dashboard
from flamechase.view.replay import load_run
from flamechase.view.replay_pack import read_document
from flamechase.view.state import RunFold
from tests.helpers import FLAMECHASE, cli, events, status

ACTOR = Path(__file__).with_name("actor.py")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    tree = tmp_path / "ws"
    tree.mkdir()
    (tree / "README.md").write_text("a tree\n")
    return tree


@pytest.fixture
def actor(tmp_path: Path) -> Path:
    team = tmp_path / "team"
    team.mkdir()
    path = team / "actor.py"
    path.write_text(f"#!{sys.executable}\n" + ACTOR.read_text())
    path.chmod(0o755)
    return path


def _args(actor: Path) -> list[str]:
    out = ["exec", "-f", "parallel_flame_chase_mission"]
    for _ in range(5):
        out += ["-a", f"exec:{actor}"]
    return [*out, "-p", "lanes=2,rest_seconds=0.05,budget.duration=120s", "improve it"]


def _kinds(evs: list[dict[str, object]], kind: str) -> list[dict[str, object]]:
    return [e for e in evs if e["kind"] == kind]


def _packet(prompt: str) -> dict[str, Any]:
    start, end = prompt.index("Packet:\n") + 8, prompt.index("\n\nWrite the decision")
    return dict(json.loads(prompt[start:end]))


def _check_the_whole_run(ws: Path) -> None:
    evs = events(ws)
    decided = _kinds(evs, "audit_decided")
    ids = [e["payload"]["audit_id"] for e in decided]  # type: ignore[index]
    assert len(ids) == len(set(ids)) == 3  # lane 2's, lane 1's integration, lane 1's own
    items = [
        (e["payload"]["item_id"], e["payload"]["status"])  # type: ignore[index]
        for e in _kinds(evs, "integration_moved")
    ]
    assert items == [("I000001", "queued"), ("I000001", "active"), ("I000001", "accepted")]
    lane1 = [
        (e["payload"]["mission_id"], e["payload"]["to_status"])  # type: ignore[index]
        for e in _kinds(evs, "mission_moved")
        if e["lane"] == "lane-1"
    ]
    assert ("M000001", "paused") in lane1
    assert lane1[-3:] == [("M000001", "active"), ("M000001", "completed"), ("M000001", "accepted")]
    st = status(ws)
    assert st["status"] == "finished"
    assert (ws / ".integrated").exists()


def test_a_lane_2_package_is_integrated_by_lane_1_and_the_run_ends(
    ws: Path, actor: Path, state_home: Path
) -> None:
    proc = cli(*_args(actor), cwd=ws, timeout=150)
    assert proc.returncode == 0, proc.stderr
    _check_the_whole_run(ws)
    shown = cli("status", "last", cwd=ws, check=True).stdout
    assert "missions:" in shown and "audits:" in shown and "integration:" in shown


@pytest.mark.slow
def test_a_sigkill_while_an_audit_is_decided_loses_nothing(
    ws: Path, actor: Path, state_home: Path
) -> None:
    (actor.parent / "hang-audit").write_text("")
    engine = subprocess.Popen(
        [*FLAMECHASE, *_args(actor)],
        cwd=ws,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        end = time.time() + 90
        while time.time() < end and not list(state_home.glob("runs/*/**/audit-started")):
            time.sleep(0.1)
        assert list(state_home.glob("runs/*/**/audit-started")), "no audit session started"
        os.kill(engine.pid, signal.SIGKILL)
    finally:
        engine.communicate(timeout=30)
    (actor.parent / "hang-audit").unlink()
    before = events(ws)
    assert _kinds(before, "audit_deciding") and not _kinds(before, "audit_decided")
    run_id = status(ws)["id"]
    proc = cli(*_args(actor), cwd=ws, timeout=150)  # the same command picks the run up
    assert proc.returncode == 0, proc.stderr
    assert status(ws)["id"] == run_id
    _check_the_whole_run(ws)
    # The killed decision session was taken again (a fresh session of the same audit turn).
    starts = [e for e in _kinds(events(ws), "turn_started") if e["actor"] == "coordinator"]
    assert [(e["payload"]["turn"], e["payload"]["attempt"]) for e in starts][1:3] == [  # type: ignore[index]
        (1001, 1),
        (1001, 2),
    ]


def test_a_write_to_a_protected_path_opens_an_audit_the_packet_shows(
    ws: Path, actor: Path, state_home: Path
) -> None:
    (ws / "bench.py").write_text("print('score: 1')\n")
    (actor.parent / "edit-protected").write_text("")
    args = _args(actor)
    proc = cli(*args[:-1], "-p", 'protected_paths=["bench.py"]', args[-1], cwd=ws, timeout=150)
    assert proc.returncode == 0, proc.stderr
    evs = events(ws)
    opened = [e["payload"] for e in _kinds(evs, "audit_opened")]
    protected = [p for p in opened if p["trigger_kind"] == "protected_write"]  # type: ignore[index]
    assert protected and protected[0]["targets"] == ["lane-2"]  # type: ignore[index]
    assert "bench.py" in str(protected[0]["why"])  # type: ignore[index]
    # The runtime saw it from the tree, not from the lane's word: the report never says so.
    # A recorded turn's prompt is kept gzipped (engine/turnfiles.py).
    prompts = state_home.glob("runs/*/audits/*/attempts/*/prompt.md.gz")
    packets = [_packet(gzip.decompress(p.read_bytes()).decode()) for p in prompts]
    writes = [
        w
        for p in packets
        for m in p["missions"]
        if m["lane"] == "lane-2"
        for w in m["protected_writes"]
    ]
    assert writes and writes[0]["paths"] == ["bench.py"] and writes[0]["turn"] == 1
    assert not any(
        w
        for p in packets
        for m in p["missions"]
        if m["lane"] == "lane-1"
        for w in m["protected_writes"]
    )
    page = ws.parent / "replay.html"
    cli("show", "last", "--html", str(page), cwd=ws, check=True)
    shown_in_replay = json.dumps(read_document(page.read_text()), ensure_ascii=False)
    assert "protected_write" in shown_in_replay and "changed protected bench.py" in shown_in_replay
    assert status(ws)["status"] == "finished"
    # status and the live view show the audit with what opened it and why it was decided so.
    shown = cli("status", "last", cwd=ws, check=True).stdout
    assert "trigger protected_write: turn 1 changed protected bench.py" in shown
    assert "why lane-2: shown" in shown
    live = _live(next(state_home.glob("runs/*/run.db")).parent)
    assert "protected_write: turn 1 changed protected" in live and "M000002" in live


def _live(run_dir: Path) -> str:
    run, lanes, evs = load_run(run_dir)
    fold = RunFold.from_run(run, lanes)
    for e in evs:
        fold.apply(e)
    out = StringIO()
    Console(file=out, width=300, color_system=None).print(
        dashboard(fold.snapshot(), datetime.now(UTC))
    )
    return out.getvalue()


def test_a_redirected_lane_2_works_on_a_fresh_copy_of_lane_1s_tree(
    ws: Path, actor: Path, state_home: Path
) -> None:
    (actor.parent / "redirect").write_text("")
    proc = cli(*_args(actor), cwd=ws, timeout=150)
    assert proc.returncode == 0, proc.stderr
    evs = events(ws)
    [refreshed] = _kinds(evs, "lane_refreshed")
    assert refreshed["lane"] == "lane-2"
    decided: list[Any] = [e["payload"] for e in _kinds(evs, "audit_decided")]
    verdicts = [v["verdict"] for d in decided for v in d["verdicts"]]
    assert "redirect" in verdicts
    said = [
        e["payload"]["summary"]  # type: ignore[index]
        for e in _kinds(evs, "turn_valid")
        if e["lane"] == "lane-2" and e["seq"] > refreshed["seq"]  # type: ignore[operator]
    ]
    # The redirected mission's first turn: lane 1's file is there, the old copy's edit is not.
    assert said[0] == "tree has: added_by_lane1.txt"
    assert status(ws)["status"] == "finished"
    assert (ws / "added_by_lane1.txt").exists() and not (ws / "stray").exists()
