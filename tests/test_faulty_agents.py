"""Faulty agents: each turn ends within its timeouts, memory stays flat, nothing survives.

Issue 6, point 3. Everything goes through the real CLI: parallel_flame_chase with two lanes,
lane 1 a well-behaved `exec:` actor, both actors of lane 2 the same faulty one. For every
fault the run must finish (lane 1 keeps taking valid turns meanwhile), the faulty turn must
end within its timeouts with a clear one-line reason in `events --json`, the engine's peak
RSS must stay bounded, and no process of the run may survive it (checked with `pgrep -f`
on a marker unique to the test, so parallel tests never see each other's processes).
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from flamechase.procs import KILL_GRACE
from tests.helpers import FLAMECHASE, events, send_signal

TURN_TIMEOUT = 3.0
SILENCE_TIMEOUT = 1.5
RSS_LIMIT_KB = 150 * 1024
# A faulty turn may take its timeout, the kill grace (an agent ignoring SIGTERM), the settling
# of its pipes and, on a loaded machine, a little more.
SLACK = 4.0
STDOUT_BYTES = 300_000_000  # 1 GB takes ~5 s through the pipe on a busy 2-CPU box

GOOD = r"""#!/usr/bin/env python3
import json, os, sys
lane, report = os.environ["FLAMECHASE_LANE"], os.environ["FLAMECHASE_REPORT"]
if lane == "":
    plan = {"lanes": [{"lane": l, "mission": {"title": "t", "objective": "o",
            "success_criteria": ["c"]}} for l in os.environ["FLAMECHASE_LANES"].split(",")]}
    open(report, "w").write(json.dumps(plan)); sys.exit(0)
open(report, "w").write(json.dumps({"status": "progress", "summary": lane + " did a turn"}))
"""
GOOD_SH = r"""#!/bin/bash
if [ -z "$FLAMECHASE_LANE" ]; then
  sep=; printf '{"lanes":[' > "$FLAMECHASE_REPORT"
  for l in ${FLAMECHASE_LANES//,/ }; do
    printf '%s{"lane":"%s","mission":{"title":"t","objective":"o","success_criteria":["c"]}}' \
      "$sep" "$l" >> "$FLAMECHASE_REPORT"; sep=,
  done
  printf ']}' >> "$FLAMECHASE_REPORT"; exit 0
fi
echo '{"status":"progress","summary":"did a turn"}' > "$FLAMECHASE_REPORT"
"""
REPORT = """echo '{"status":"progress","summary":"done"}' > "$FLAMECHASE_REPORT"\n"""


@dataclasses.dataclass(frozen=True)
class Fault:
    name: str
    body: str  # bash; {marker} is the test's unique marker
    reason: str | None  # in the turn_failed error; None: the turn stands (valid)
    slow: bool = False  # the fault takes a timeout: lane 1 must take turns meanwhile
    cut_by: float = TURN_TIMEOUT  # the timeout that ends it
    params: str = ""


FAULTS = [
    Fault(
        "crash",
        'echo "fatal: disk on fire" >&2\nexit 1\n',
        "exited with code 1: fatal: disk on fire",
    ),
    Fault("segfault", "kill -SEGV $$\n", "killed by SIGSEGV"),
    Fault(
        "silent_hang",
        "exec -a {marker} sleep 300\n",
        "turn cut: no output for",
        slow=True,
        cut_by=SILENCE_TIMEOUT,
    ),
    Fault(
        "chatty_hang",
        "while :; do echo still thinking >&2; sleep 0.2; done\n",
        f"ran past turn_timeout {TURN_TIMEOUT:g}s",
        slow=True,
    ),
    Fault(
        "stops_itself", "kill -STOP $$\n", "(silence_timeout)", slow=True, cut_by=SILENCE_TIMEOUT
    ),
    Fault(
        "closes_its_pipes_and_hangs",
        "exec >&- 2>&-\nexec -a {marker} sleep 300\n",
        "(silence_timeout)",
        slow=True,
        cut_by=SILENCE_TIMEOUT,
    ),
    Fault(
        "ignores_sigterm",
        "trap '' TERM\nexec -a {marker} sleep 300\n",
        "(silence_timeout)",
        slow=True,
        cut_by=SILENCE_TIMEOUT + KILL_GRACE,
    ),
    Fault(
        "exit_0_without_report", "echo 'all done, trust me'\nexit 0\n", "no report was written to"
    ),
    Fault(
        "report_of_100_mb",
        'truncate -s 100M "$FLAMECHASE_REPORT"\n',
        "is 104857600 bytes, over the 4194304-byte limit",
    ),
    Fault(
        "report_nested_too_deeply",
        # No Python: its start on a busy machine could outlast the silence window.
        """head -c 100000 /dev/zero | tr '\\0' '[' > "$FLAMECHASE_REPORT"\n""",
        "nested too deeply",
    ),
    Fault(
        "endless_stdout",
        "exec cat /dev/zero\n",
        f"ran past turn_timeout {TURN_TIMEOUT:g}s",
        slow=True,
    ),
    Fault(
        "stdout_300_mb",
        f"head -c {STDOUT_BYTES} /dev/zero\n" + REPORT,
        None,
        params=",turn_timeout=60",
    ),
    Fault(
        "forks_daemons",
        # One daemon leaves the session, one also ignores SIGTERM; both hold stdout open.
        "(setsid bash -c 'exec -a {marker} sleep 300' &)\n"
        "(setsid bash -c \"trap '' TERM; exec -a {marker} sleep 300\" &)\n"
        "bash -c 'exec -a {marker} sleep 300' &\n" + REPORT,
        None,
    ),
]


def _marker(name: str) -> str:
    return f"fc-faulty-{name}-{os.getpid()}-{time.time_ns()}"


def _survivors(marker: str, engine: int | None = None) -> list[str]:
    """Processes whose command line holds `marker` (the engine's own names the actor)."""
    out = subprocess.run(["pgrep", "-af", marker], check=False, capture_output=True, text=True)
    return [
        line
        for line in out.stdout.splitlines()
        if "pgrep" not in line and line.split()[0] != str(engine)
    ]


def _run_engine(ws: Path, args: list[str], timeout: float) -> tuple[int, str, int]:
    """Run `flamechase ARGS`; (exit code, stderr, peak RSS in KiB of the engine).

    The peak is the engine's own VmHWM, sampled while it runs: rusage's ru_maxrss would
    count the test worker's memory too (Linux charges the pre-exec copy of the parent's
    address space to the child), which made the figure depend on what the worker ran before.
    """
    err_path = ws.parent / f"stderr-{time.time_ns()}.txt"
    with open(err_path, "wb") as err:
        p = subprocess.Popen(
            [*FLAMECHASE, *args],
            cwd=ws,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    deadline = time.monotonic() + timeout
    peak = 0
    while True:
        peak = max(peak, _hwm_kb(p.pid))
        pid, status, _usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            p.kill()
            os.wait4(p.pid, 0)
            p.returncode = -9
            raise AssertionError(
                f"flamechase {args} did not end within {timeout}s:\n{err_path.read_text()[-2000:]}"
            )
        time.sleep(0.05)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, err_path.read_text(), peak


def _hwm_kb(pid: int) -> int:
    """The process's peak resident set (VmHWM) in KiB, 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _lane_turns(evs: list[dict[str, Any]], lane: str) -> list[dict[str, Any]]:
    return [e for e in evs if e["lane"] == lane and e["kind"] in ("turn_valid", "turn_failed")]


# Each fault alone, for a clear failure; all but the regression of a found bug are `slow`: the
# unmarked `test_seven_faults_at_once_in_eight_lanes` covers the same promises in one run.
UNMARKED = {"report_nested_too_deeply"}  # crashed the whole engine with a traceback once


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param(f, id=f.name, marks=() if f.name in UNMARKED else pytest.mark.slow)
        for f in FAULTS
    ],
)
def test_faulty_lane_two_turn_ends_and_lane_one_goes_on(tmp_path: Path, fault: Fault) -> None:
    marker = _marker(fault.name)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("source\n")
    good = tmp_path / "good.sh"  # bash, not python: within the silence window on a busy machine
    good.write_text(GOOD_SH)
    good.chmod(0o755)
    bad = tmp_path / f"{marker}.sh"  # the marker is in every actor process's command line
    bad.write_text("#!/bin/bash\n" + fault.body.replace("{marker}", marker))
    bad.chmod(0o755)
    code, err, rss_kb = _run_engine(
        ws,
        [
            "exec",
            "-f",
            "parallel_flame_chase",
            "-a",
            f"coordinator=exec:{good}",
            "-a",
            f"lane_1_actor_a=exec:{good},lane_1_actor_b=exec:{good}",
            "-a",
            f"lane_2_actor_a=exec:{bad},lane_2_actor_b=exec:{bad}",
            "-p",
            f"lanes=2,budget.turns=6,rest_seconds=0.05,turn_timeout={TURN_TIMEOUT:g},"
            f"silence_timeout={SILENCE_TIMEOUT:g}{fault.params}",
            "faulty agents",
        ],
        timeout=300,
    )
    assert code == 0, err
    assert "Traceback" not in err, err

    # No process of the run survives it.
    assert _survivors(marker) == []

    # Memory stayed bounded (the engine and everything it reaped).
    assert rss_kb < RSS_LIMIT_KB, f"peak RSS {rss_kb // 1024} MiB"

    evs = events(ws)
    lane2 = _lane_turns(evs, "lane-2")
    assert lane2, "lane 2 never finished a turn"
    for e in lane2:
        p = e["payload"]
        assert p["duration"] <= fault.cut_by + SLACK, (fault.name, p["duration"])
        if fault.reason is None:
            assert e["kind"] == "turn_valid", p
        else:
            assert e["kind"] == "turn_failed", p
            assert fault.reason in p["error"], p["error"]
            assert len(p["error"].splitlines()) == 1, p["error"]

    # Lane 1 kept taking valid turns, and never failed one.
    lane1 = _lane_turns(evs, "lane-1")
    assert all(e["kind"] == "turn_valid" for e in lane1)
    assert len(lane1) >= 6 - len(lane2) >= 3
    if fault.slow:
        first = next(e for e in evs if e["lane"] == "lane-2" and e["kind"] == "turn_started")
        during = [e for e in lane1 if first["seq"] < e["seq"] < lane2[0]["seq"]]
        assert len(during) >= 2, "lane 1 stalled while lane 2 hung"
    if fault.reason is not None and len(lane2) >= 2:
        # Two failed turns in a row hold lane 2; lane 1 spends the rest of the budget.
        assert [e["kind"] for e in evs].count("lane_held") == 1


FAULT = {f.name: f for f in FAULTS}
AT_ONCE = {  # lane -> fault; lane 1 is well behaved
    "lane-2": FAULT["crash"],
    "lane-3": FAULT["segfault"],
    "lane-4": FAULT["silent_hang"],
    "lane-5": FAULT["ignores_sigterm"],
    "lane-6": FAULT["exit_0_without_report"],
    "lane-7": FAULT["report_of_100_mb"],
    "lane-8": Fault(
        "stdout_300_mb_and_daemons",
        FAULT["stdout_300_mb"].body.replace(REPORT, "") + FAULT["forks_daemons"].body,
        None,
    ),
}


def test_seven_faults_at_once_in_eight_lanes(tmp_path: Path) -> None:
    """Lanes 2..8 each misbehave differently, at the same time; lane 1 goes on regardless."""
    marker = _marker("at-once")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("source\n")
    good = tmp_path / "good.sh"  # bash, not python: starts fast on a loaded machine
    good.write_text(GOOD_SH)
    good.chmod(0o755)
    agents = [
        "-a",
        f"coordinator=exec:{good}",
        "-a",
        f"lane_1_actor_a=exec:{good},lane_1_actor_b=exec:{good}",
    ]
    for lane, fault in AT_ONCE.items():
        bad = tmp_path / f"{marker}-{lane}.sh"
        bad.write_text("#!/bin/bash\n" + fault.body.replace("{marker}", marker))
        bad.chmod(0o755)
        n = lane.split("-")[1]
        agents += ["-a", f"lane_{n}_actor_a=exec:{bad},lane_{n}_actor_b=exec:{bad}"]
    turn_timeout = 30.0  # the 300 MB must get through on a loaded machine; hangs are silent
    code, err, rss_kb = _run_engine(
        ws,
        [
            "exec",
            "-f",
            "parallel_flame_chase",
            *agents,
            "-p",
            f"lanes=8,budget.turns=24,rest_seconds=0.05,turn_timeout={turn_timeout:g},"
            f"silence_timeout={SILENCE_TIMEOUT:g}",
            "faulty agents",
        ],
        timeout=120,
    )
    assert code == 0, err
    assert "Traceback" not in err, err
    assert _survivors(marker) == []
    assert rss_kb < RSS_LIMIT_KB, f"peak RSS {rss_kb // 1024} MiB"
    evs = events(ws)
    for lane, fault in AT_ONCE.items():
        turns = _lane_turns(evs, lane)
        assert turns, f"{lane} ({fault.name}) never finished a turn"
        for e in turns:
            p = e["payload"]
            cut_by = turn_timeout if fault.cut_by == TURN_TIMEOUT else fault.cut_by
            assert p["duration"] <= cut_by + SLACK, (lane, fault.name, p["duration"])
            if fault.reason is None:
                assert e["kind"] == "turn_valid", (lane, p)
            else:
                assert e["kind"] == "turn_failed", (lane, p)
                assert fault.reason in p["error"], (lane, p["error"])
                assert len(p["error"].splitlines()) == 1, p["error"]
    lane1 = _lane_turns(evs, "lane-1")
    assert len(lane1) >= 5
    assert all(e["kind"] == "turn_valid" for e in lane1)


@pytest.mark.slow
def test_a_stopped_engine_leaves_no_faulty_agent_behind(tmp_path: Path) -> None:
    """SIGTERM to the engine while lane 2 ignores SIGTERM: the run stops, the agent dies."""
    marker = _marker("engine-term")
    ws = tmp_path / "ws"
    ws.mkdir()
    good = tmp_path / "good.py"
    good.write_text(GOOD)
    good.chmod(0o755)
    bad = tmp_path / f"{marker}.sh"
    bad.write_text(
        f"#!/bin/bash\ntrap '' TERM\nwhile :; do echo busy >&2; sleep 0.2; done &\n"
        f"exec -a {marker} sleep 300\n"
    )
    bad.chmod(0o755)
    p = subprocess.Popen(
        [
            *FLAMECHASE,
            "exec",
            "-f",
            "parallel_flame_chase",
            "-a",
            f"coordinator=exec:{good}",
            "-a",
            f"lane_1_actor_a=exec:{good},lane_1_actor_b=exec:{good}",
            "-a",
            f"lane_2_actor_a=exec:{bad},lane_2_actor_b=exec:{bad}",
            "-p",
            "lanes=2,budget.turns=50,rest_seconds=0.05,turn_timeout=600,silence_timeout=600",
            "faulty agents",
        ],
        cwd=ws,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not _survivors(marker, p.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _survivors(marker, p.pid), "lane 2 never started"
    send_signal(p, signal.SIGTERM)
    send_signal(p, signal.SIGTERM)  # the second signal cuts the turns under way
    _, err = p.communicate(timeout=KILL_GRACE + 20)
    assert p.returncode == 130, err
    assert _survivors(marker) == []
    kinds = [e["kind"] for e in events(ws)]
    assert "turn_interrupted" in kinds
    assert kinds[-1] == "run_stopped"
