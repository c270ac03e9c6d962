"""Concurrency: one engine per source; readers never block or corrupt a live run.

Issue 6, point 7. Through the real CLI: two `flamechase exec` on one source started together
(exactly one runs, the other exits 2 naming the owner's run id), and `status`, `events
--follow`, `show --html`, `runs` and `artifacts` hammering a live run, which must finish with
every turn it was budgeted and its invariants intact, while a reader holding a read open
neither stops the engine committing nor sees anything but its snapshot. How quickly readers
answer and how little they delay scheduling is measured by `bench/readers.py`.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from flamechase.cli.runs import run_status
from flamechase.engine.invariants import check_run
from flamechase.errors import StoreError
from flamechase.store.reader import Reader
from tests.helpers import FLAMECHASE, actor, cli, events, status

GATED_TURN = """while [ ! -e "$GATE" ]; do sleep 0.05; done
echo '{"status":"progress","summary":"slow turn"}' > "$FLAMECHASE_REPORT"
"""

PFC_ACTOR = r"""#!/bin/bash
if [ -z "$FLAMECHASE_LANE" ]; then
  sep=; printf '{"lanes":[' > "$FLAMECHASE_REPORT"
  for l in ${FLAMECHASE_LANES//,/ }; do
    printf '%s{"lane":"%s","mission":{"title":"t","objective":"o","success_criteria":["c"]}}' \
      "$sep" "$l" >> "$FLAMECHASE_REPORT"; sep=,
  done
  printf ']}' >> "$FLAMECHASE_REPORT"; exit 0
fi
sleep 0.25
if [ "$FLAMECHASE_LANE" = lane-2 ] && [ $((FLAMECHASE_TURN % 2)) = 0 ]; then
  echo "package $FLAMECHASE_TURN" > "$FLAMECHASE_ARTIFACTS/p$FLAMECHASE_TURN.txt"
  cat > "$FLAMECHASE_REPORT" <<EOF
{"status":"deliverable_ready","summary":"package","deliverable":{"title":"p",
 "artifacts":[{"path":"p$FLAMECHASE_TURN.txt"}],"integration_notes":"copy it"}}
EOF
  exit 0
fi
echo '{"status":"progress","summary":"a turn"}' > "$FLAMECHASE_REPORT"
"""


def _popen(ws: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*FLAMECHASE, *args],
        cwd=ws,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, **(env or {})),
    )


def test_two_execs_on_one_source_exactly_one_runs(tmp_path: Path, state_home: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    gated = actor(tmp_path, "gated.sh", GATED_TURN)
    for i in range(3):
        # The turns wait for a gate opened only once one of the two has exited, so the two
        # overlap however slowly either starts.
        gate = tmp_path / f"gate-{i}"
        args = [
            "exec",
            "-f",
            "flame_chase",
            "-a",
            f"exec:{gated}",
            "-a",
            f"exec:{gated}",
            "-p",
            "budget.turns=2,rest_seconds=0.05",
            f"race {i}",
        ]
        both = [_popen(ws, *args, env={"GATE": str(gate)}) for _ in range(2)]
        deadline = time.monotonic() + 60
        while all(p.poll() is None for p in both) and time.monotonic() < deadline:
            time.sleep(0.05)
        gate.touch()
        outs = [p.communicate(timeout=90) for p in both]
        codes = sorted(p.returncode for p in both)
        assert codes == [0, 2], outs
        winner = next(o for p, o in zip(both, outs, strict=True) if p.returncode == 0)
        loser = next(o for p, o in zip(both, outs, strict=True) if p.returncode == 2)
        run_id = re.search(r"run (\S+) finished", winner[1])
        assert run_id, winner[1]
        # The refusal names who owns the source, in one line, and wrote nothing.
        assert f"another flamechase run (run {run_id.group(1)}, pid" in loser[1], loser[1]
        assert len(loser[1].strip().splitlines()) == 1, loser[1]
        assert len(list((state_home / "runs").iterdir())) == i + 1
        st = run_status(state_home / "runs" / run_id.group(1))
        assert st["status"] == "finished" and st["budget"]["turns"]["used"] == 2
        assert check_run(state_home / "runs" / st["id"]) == []


def _events_in(db: Path) -> list[dict[str, Any]]:
    try:
        with Reader(db) as r:
            return r.events()
    except StoreError:  # not created yet
        return []


def _wait_live(state_home: Path) -> Path:
    """The live run's database, once its turns have started."""
    deadline = time.monotonic() + 60  # a hang guard, not a speed requirement
    while time.monotonic() < deadline:
        dbs = list((state_home / "runs").glob("*/run.db"))
        if dbs and any(e["kind"] == "turn_started" for e in _events_in(dbs[0])):
            return dbs[0]
        time.sleep(0.05)
    raise AssertionError("the run never started turns")


def _count(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT count(*) FROM events").fetchone()
    return int(row[0])


def test_readers_never_block_or_corrupt_a_live_run(tmp_path: Path, state_home: Path) -> None:
    """Behaviour only: how fast readers answer is measured by bench/readers.py."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("source\n")
    a = tmp_path / "pfc.sh"
    a.write_text(PFC_ACTOR)
    a.chmod(0o755)
    turns = 40
    run = _popen(
        ws,
        "exec",
        "-f",
        "parallel_flame_chase",
        *(["-a", f"exec:{a}"] * 5),
        "-p",
        f"lanes=2,budget.turns={turns},rest_seconds=0.05,sandbox=off",
        "readers",
    )
    db = _wait_live(state_home)
    run_dir = db.parent
    follow = _popen(ws, "events", "--follow", "--json")

    # A reader holding a read transaction open does not stop the engine committing, and
    # keeps seeing the one consistent snapshot it started with.
    held = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
    fresh = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
    try:
        held.execute("BEGIN")
        frozen = _count(held)
        deadline = time.monotonic() + 60
        while _count(fresh) < frozen + 5 and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _count(fresh) >= frozen + 5, "the engine stopped committing under a read"
        assert _count(held) == frozen
        held.execute("COMMIT")
    finally:
        held.close()
        fresh.close()

    # Every reader command, over and over while the run goes on: each answers, none fails.
    seen: set[str] = set()
    html = tmp_path / "live.html"
    shown = None
    while run.poll() is None:
        st = cli("status", "--json", cwd=ws, timeout=60)
        assert st.returncode == 0, st.stderr
        doc = json.loads(st.stdout)
        seen.add(doc["status"])
        if doc["status"] == "running":
            assert doc["engine_running"] is True
        for _ in range(5):
            seen.add(run_status(run_dir)["status"])
        if shown is None:
            shown = cli("show", "last", "--html", str(html), cwd=ws, timeout=60)
            assert cli("runs", "--json", cwd=ws, timeout=60).returncode == 0
            assert cli("artifacts", "--json", cwd=ws, timeout=60).returncode == 0
    _, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    followed, ferr = follow.communicate(timeout=60)  # ends on its own with the run
    assert follow.returncode == 0, ferr

    # The run got every turn it was budgeted, and its record is sound.
    st = status(ws)
    assert st["status"] == "finished"
    assert st["budget"]["turns"]["used"] == turns
    assert sum(ln["turns"] for ln in st["lanes"]) == turns
    assert run_dir.name == st["id"]
    assert check_run(run_dir, turn_limit=turns) == []

    # `events --follow` saw exactly what the log holds, in order, through the end.
    evs = events(ws)
    assert [json.loads(line) for line in followed.splitlines()] == evs
    assert evs[-1]["kind"] == "run_finished"
    assert "running" in seen
    assert shown is not None and shown.returncode == 0, shown.stderr if shown else None
    assert html.stat().st_size > 1000


@pytest.mark.slow
def test_a_reader_probe_never_refuses_a_starting_run(tmp_path: Path, state_home: Path) -> None:
    """`status` probes the source lock for an instant; an `exec` starting then still runs."""
    ws = tmp_path / "ws"
    ws.mkdir()
    fast = actor(
        tmp_path,
        "fast.sh",
        """echo '{"status":"progress","summary":"t"}' > "$FLAMECHASE_REPORT"\n""",
    )
    assert (
        cli(
            "exec",
            "-f",
            "flame_chase",
            "-a",
            f"exec:{fast}",
            "-a",
            f"exec:{fast}",
            "-p",
            "budget.turns=1",
            "first",
            cwd=ws,
        ).returncode
        == 0
    )
    stop = tmp_path / "stop"
    prober = subprocess.Popen(
        [
            "bash",
            "-c",
            f"while [ ! -e {stop} ]; do {' '.join(FLAMECHASE)} status --json >/dev/null; done",
        ],
        cwd=ws,
        env=dict(os.environ),
    )
    try:
        for i in range(3):
            proc = cli(
                "exec",
                "-f",
                "flame_chase",
                "-a",
                f"exec:{fast}",
                "-a",
                f"exec:{fast}",
                "-p",
                "budget.turns=2,rest_seconds=0.05",
                f"probe {i}",
                cwd=ws,
            )
            assert proc.returncode == 0, proc.stderr
    finally:
        stop.touch()
        prober.wait(timeout=30)
