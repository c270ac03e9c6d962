"""Concurrency: one engine per source; readers never block or corrupt a live run.

Issue 6, point 7. Through the real CLI: two `flamechase exec` on one source started together
(exactly one runs, the other exits 2 naming the owner's run id), and `status`, `events
--follow`, `show --html`, `runs` and `artifacts` hammering a live run, which must finish with
every turn it was budgeted, its scheduling undisturbed and its invariants intact.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from flamechase.cli.runs import run_status
from flamechase.engine.invariants import check_run
from flamechase.errors import StoreError
from flamechase.store.db import Reader
from tests.helpers import FLAMECHASE, actor, cli, events, status

GATED_TURN = """while [ ! -e "$GATE" ]; do sleep 0.05; done
echo '{"status":"progress","summary":"slow turn"}' > "$FLAMECHASE_REPORT"
"""

PFC_ACTOR = r'''#!/bin/bash
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
'''


def _popen(ws: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([*FLAMECHASE, *args], cwd=ws, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **(env or {})))


def test_two_execs_on_one_source_exactly_one_runs(tmp_path: Path, state_home: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    gated = actor(tmp_path, "gated.sh", GATED_TURN)
    for i in range(3):
        # The turns wait for a gate opened only once one of the two has exited, so the two
        # overlap however slowly either starts.
        gate = tmp_path / f"gate-{i}"
        args = ["exec", "-f", "flame_chase", "-a", f"exec:{gated}", "-a", f"exec:{gated}",
                "-p", "budget.turns=2,rest_seconds=0.05", f"race {i}"]
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


def _parse(at: str) -> datetime:
    return datetime.fromisoformat(at.replace("Z", "+00:00"))


def _gaps(evs: list[dict[str, Any]]) -> list[float]:
    """Per lane: seconds from a turn's end to the next turn's start."""
    last_end: dict[str, datetime] = {}
    gaps = []
    for e in evs:
        lane = e["lane"]
        if e["kind"] == "turn_started" and lane in last_end:
            gaps.append((_parse(e["at"]) - last_end.pop(lane)).total_seconds())
        elif e["kind"] in ("turn_valid", "turn_failed"):
            last_end[lane] = _parse(e["at"])
    return gaps


def test_readers_never_block_or_corrupt_a_live_run(tmp_path: Path, state_home: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("source\n")
    a = tmp_path / "pfc.sh"
    a.write_text(PFC_ACTOR)
    a.chmod(0o755)
    turns = 40
    run = _popen(ws, "exec", "-f", "parallel_flame_chase", *(["-a", f"exec:{a}"] * 5),
                 "-p", f"lanes=2,budget.turns={turns},rest_seconds=0.05,sandbox=off",
                 "readers")
    # Wait until the run is live (its database exists and turns have started).
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        dbs = list((state_home / "runs").glob("*/run.db"))
        if dbs and '"turn_started"' in json.dumps(_events_in(dbs[0])):
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the run never started turns")
    follow = _popen(ws, "events", "--follow", "--json")
    run_dir = dbs[0].parent
    run_status(run_dir)  # imports what it needs once, outside the measurement
    status_times: list[float] = []  # `flamechase status --json`, a fresh interpreter each
    read_times: list[float] = []  # what it does once started: `run_status` in this process
    seen: set[str] = set()
    html = tmp_path / "live.html"
    shown = None
    start_times: list[float] = []  # `flamechase --version`: the interpreter starting alone
    while run.poll() is None:
        t0 = time.monotonic()
        assert cli("--version", cwd=ws, timeout=20).returncode == 0
        start_times.append(time.monotonic() - t0)
        t0 = time.monotonic()
        st = cli("status", "--json", cwd=ws, timeout=20)
        status_times.append(time.monotonic() - t0)
        assert st.returncode == 0, st.stderr
        doc = json.loads(st.stdout)
        seen.add(doc["status"])
        if doc["status"] == "running":
            assert doc["engine_running"] is True
        for _ in range(5):
            t0 = time.monotonic()
            seen.add(run_status(run_dir)["status"])
            read_times.append(time.monotonic() - t0)
        if shown is None:
            shown = cli("show", "last", "--html", str(html), cwd=ws, timeout=30)
            assert cli("runs", "--json", cwd=ws, timeout=20).returncode == 0
            assert cli("artifacts", "--json", cwd=ws, timeout=20).returncode == 0
    _, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    followed, ferr = follow.communicate(timeout=30)  # ends on its own with the run
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

    # Readers answered quickly while the run was busy, and saw it running.
    assert "running" in seen
    assert len(status_times) >= 2
    # `status` answers in ~0.8 s on a quiet machine, nearly all of it Python starting, and in
    # 2-3 s on a loaded 2-CPU box running this suite and the run. What the live run could add
    # (a lock wait, a busy database) shows beside `--version` measured at the same moments;
    # the read itself, in this process, takes milliseconds.
    def median(xs: list[float]) -> float:
        return sorted(xs)[len(xs) // 2]

    assert median(status_times) < 2.0 + median(start_times), (status_times, start_times)
    assert max(read_times) < 0.5, read_times
    # Scheduling was not held up by them: rest_seconds is 0.05.
    gaps = _gaps(evs)
    assert gaps and max(gaps) < 1.0, gaps
    assert shown is not None and shown.returncode == 0, shown.stderr if shown else None
    assert html.stat().st_size > 1000


@pytest.mark.slow
def test_a_reader_probe_never_refuses_a_starting_run(tmp_path: Path, state_home: Path) -> None:
    """`status` probes the source lock for an instant; an `exec` starting then still runs."""
    ws = tmp_path / "ws"
    ws.mkdir()
    fast = actor(tmp_path, "fast.sh",
                 """echo '{"status":"progress","summary":"t"}' > "$FLAMECHASE_REPORT"\n""")
    assert cli("exec", "-f", "flame_chase", "-a", f"exec:{fast}", "-a", f"exec:{fast}",
               "-p", "budget.turns=1", "first", cwd=ws).returncode == 0
    stop = tmp_path / "stop"
    prober = subprocess.Popen(
        ["bash", "-c", f"while [ ! -e {stop} ]; do {' '.join(FLAMECHASE)} status --json "
                       ">/dev/null; done"],
        cwd=ws, env=dict(os.environ))
    try:
        for i in range(3):
            proc = cli("exec", "-f", "flame_chase", "-a", f"exec:{fast}", "-a", f"exec:{fast}",
                       "-p", "budget.turns=2,rest_seconds=0.05", f"probe {i}", cwd=ws)
            assert proc.returncode == 0, proc.stderr
    finally:
        stop.touch()
        prober.wait(timeout=30)
