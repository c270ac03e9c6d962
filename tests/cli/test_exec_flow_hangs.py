"""Flows whose code never returns, run by a real `flamechase exec`: SIGINT, SIGTERM and
`budget.duration` still stop the run, record why (with where the flow's code was), end the
turns under way, and a resume takes again what the flow never finished recording.

Each test waits for events (the flow's code saying where it is, the process's exit), never
for a time; the bounds on waits are generous and only stop a test that would hang."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.engine.mistakes import Mistake, flow_file, hanging
from tests.helpers import FLAMECHASE, REPORT_OK, actor, cli, events, send_signal, status

HANGS = hanging()
BOUND = 60  # seconds: only for a test that would otherwise hang


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[str]]]:
    """The processes a test starts; any still alive at its end is killed (before the fix a
    flow stuck in decide() made exec deaf to everything but SIGKILL)."""
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


def start(
    tmp_path: Path,
    m: Mistake,
    started: list[subprocess.Popen[str]],
    params: str = "",
    author: str = REPORT_OK,
) -> tuple[subprocess.Popen[str], Path, Path]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    mark = tmp_path / "mark"
    a = actor(tmp_path, "author.sh", author)
    r = actor(tmp_path, "reviewer.sh", REPORT_OK)
    p = subprocess.Popen(
        [
            *FLAMECHASE,
            "exec",
            "-f",
            str(flow_file(tmp_path, m)),
            "-a",
            f"author=exec:{a}",
            "-a",
            f"reviewer=exec:{r}",
            "-p",
            ",".join(x for x in ("budget.turns=6,rest_seconds=0.05,kill_grace=0.5", params) if x),
            "do it",
        ],
        cwd=ws,
        env={**os.environ, "FLOW_MARK": str(mark)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    started.append(p)
    return p, ws, mark


def arrived(mark: Path, p: subprocess.Popen[str]) -> str:
    """Where the flow's code says it is, once it says so."""
    deadline = time.monotonic() + BOUND
    while not mark.exists():
        assert p.poll() is None, p.communicate()[1]
        assert time.monotonic() < deadline, "the flow's code never got there"
        time.sleep(0.05)
    return mark.read_text()


def ended(p: subprocess.Popen[str]) -> str:
    try:
        _, err = p.communicate(timeout=BOUND)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGABRT)
        _, err = p.communicate(timeout=BOUND)
        raise AssertionError(err) from None
    return err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_a_run_whose_decide_never_returns(
    sig: int, tmp_path: Path, started: list[subprocess.Popen[str]]
) -> None:
    p, ws, mark = start(tmp_path, HANGS["decide_never_returns"], started)
    assert arrived(mark, p) == "decide"
    send_signal(p, sig)
    err = ended(p)
    assert p.returncode == 130, err
    st = status(ws)
    assert st["status"] == "stopped"
    assert "flow mistake's decide() did not return within 0.5s of a stop (signal)" in st["ended"]
    kept = tmp_path / "fc-home" / "runs" / st["id"] / "flow-traceback.txt"
    assert f"its traceback: {kept}" in err
    assert "while True" in kept.read_text() and "decide_never_returns.py" in kept.read_text()


def test_budget_duration_stops_a_run_whose_decide_never_returns(
    tmp_path: Path, started: list[subprocess.Popen[str]]
) -> None:
    p, ws, mark = start(tmp_path, HANGS["decide_never_returns"], started, "budget.duration=1s")
    err = ended(p)
    assert p.returncode == 1, err
    assert mark.read_text() == "decide"
    st = status(ws)
    assert st["status"] == "failed"
    assert "did not return within 0.5s of budget.duration running out" in st["last_error"]


def test_a_stop_while_evolve_never_returns_leaves_the_turn_to_take_again(
    tmp_path: Path, started: list[subprocess.Popen[str]]
) -> None:
    m = HANGS["evolve_never_returns_on_a_turn"]
    p, ws, mark = start(tmp_path, m, started)
    assert arrived(mark, p) == "evolve"  # inside the transaction that records turn 1
    send_signal(p, signal.SIGTERM)
    err = ended(p)
    assert p.returncode == 130, err
    st = status(ws)
    assert st["status"] == "stopped" and st["budget"]["turns"]["used"] == 0
    assert "evolve() of turn_valid did not return" in st["ended"]
    # The fixed flow resumes the run: the turn the flow never recorded is taken again.
    proc = run_fixed(tmp_path, ws, m.name, "--refresh")
    assert proc.returncode == 0, proc.stderr
    turns = [
        (e["payload"]["turn"], e["payload"]["attempt"])
        for e in events(ws)
        if e["kind"] == "turn_started"
    ]
    assert turns == [(1, 1), (1, 2), (2, 1)]
    assert status(ws)["id"] == st["id"]


def test_a_stop_while_decide_never_returns_ends_the_turn_under_way(
    tmp_path: Path, started: list[subprocess.Popen[str]]
) -> None:
    token = f"fc-slow-{os.getpid()}-{tmp_path.name}"
    slow = f"exec python3 -c 'import time; time.sleep(600)' {token}\n"
    p, ws, mark = start(tmp_path, HANGS["decide_never_returns_beside_a_turn"], started, author=slow)
    assert arrived(mark, p) == "decide"  # lane-2's turn is done; lane-1's still runs
    assert _running(token)
    send_signal(p, signal.SIGTERM)
    err = ended(p)
    assert p.returncode == 130, err
    deadline = time.monotonic() + BOUND
    while _running(token):
        assert time.monotonic() < deadline, "the turn under way outlived its run"
        time.sleep(0.05)
    assert status(ws)["status"] == "stopped"


def _running(token: str) -> bool:
    return subprocess.run(["pgrep", "-f", token], capture_output=True).returncode == 0


def run_fixed(tmp_path: Path, ws: Path, name: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """`exec` of the flow `name` with its mistake taken out: the relay as it should be."""
    flow = flow_file(tmp_path, Mistake(name, {}, ()))
    agent = actor(tmp_path, "agent.sh", REPORT_OK)
    return cli(
        "exec", "-f", str(flow), "-a", f"author=exec:{agent}", "-a", f"reviewer=exec:{agent}",
        "-p", "budget.turns=6,rest_seconds=0.05", *extra, "do it", cwd=ws, timeout=BOUND,
    )  # fmt: skip


def test_the_relay_without_its_mistake_runs(tmp_path: Path) -> None:
    """The flows above differ from a relay that works only where they hang."""
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = run_fixed(tmp_path, ws, "relay")
    assert proc.returncode == 0, proc.stderr
    assert "both turns done" in proc.stderr
