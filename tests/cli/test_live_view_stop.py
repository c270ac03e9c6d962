"""Stopping a run from the live view, through a real pseudo-terminal: the first Ctrl-C says what
a second does, the second cuts, the run's end is said once, and what it says to type works."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pexpect

from tests.helpers import REPORT_OK, actor, cli, status

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]|\x1b[=>]")


def _screen(text: str) -> str:
    return ANSI.sub("", text).replace("\r", "")


def test_the_live_views_first_ctrl_c_says_a_second_cuts_and_the_end_is_said_once(
    source_tree: Path, tmp_path: Path
) -> None:
    gate = source_tree / "gate"  # in the tree: the jailed actor writes nothing outside it
    gate.mkdir()
    slow = actor(
        tmp_path,
        "slow.sh",
        f"touch {gate}/started\nwhile [ ! -f {gate}/never ]; do sleep 0.05; done\n{REPORT_OK}",
    )
    args = ["exec", "-f", "flame_chase", "-a", f"exec:{slow}", "-a", f"exec:{slow}"]
    args += ["-p", "budget.turns=3,rest_seconds=0.05", "hold on"]
    child = pexpect.spawn(
        sys.executable,
        ["-m", "flamechase", *args],
        cwd=str(source_tree),
        # 80 columns, the narrowest the view is made for: the way out must not be cut off.
        env={**os.environ, "TERM": "xterm", "COLUMNS": "80", "LINES": "40"},
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 80),
    )
    deadline = time.monotonic() + 60
    while not (gate / "started").exists():
        assert time.monotonic() < deadline, "the turn never started"
        time.sleep(0.05)
    child.sendintr()  # Ctrl-C as the terminal sends it, to the view's process group
    child.expect_exact("Stopping: Ctrl-C again cuts the 1 turn under way")
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    screen = _screen(child.before)
    run_id = status(source_tree)["id"]
    ends = [x for x in screen.splitlines() if x.startswith(f"flamechase: run {run_id}")]
    assert len(ends) == 1, screen[-2000:]
    assert "stopped: stopped by a signal" in ends[0]
    assert ends[0].endswith("; to go on, run the same command again"), ends[0]
    assert status(source_tree)["next"] == "to go on, run the same command again"
    # What it says to type picks the stopped run up.
    (gate / "never").touch()
    again = cli(*args, cwd=source_tree, timeout=120)
    assert again.returncode == 0, again.stderr
    st = status(source_tree)
    assert st["id"] == run_id and st["status"] == "finished"
