"""`flamechase exec`'s own answers: the large-copy question on a terminal, and `-e`.

The question offers the seeds' two choices (start anyway, or stop), takes the answers people
give for each, and asks again on anything else; it is driven here through a real pseudo-
terminal. `-e`, the published runtime's environment flag, is answered with what flamechase
does instead, exit 2, nothing written.
"""

from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

import pytest

from flamechase.cli.exec_cmd import CHOICES, ask_start_or_stop, start_or_stop
from tests.flows.pfc import Team
from tests.helpers import FLAMECHASE, cli, status


@pytest.mark.parametrize(
    "answer",
    [
        "a",
        "A",
        "A. Start anyway",
        "a. start anyway",
        "Start anyway",
        "start",
        "yes",
        "Y",
        "1",
        "proceed",
        " yes \n",
        "继续",
    ],
)
def test_the_obvious_ways_to_say_start(answer: str) -> None:
    assert start_or_stop(answer) is True


@pytest.mark.parametrize(
    "answer", ["b", "B. Stop", "stop", "Stop!", "no", "n", "2", "cancel", "停止"]
)
def test_the_obvious_ways_to_say_stop(answer: str) -> None:
    assert start_or_stop(answer) is False


@pytest.mark.parametrize("answer", ["", "maybe", "ja", "start it later", "a b", "yess"])
def test_anything_else_is_neither(answer: str) -> None:
    assert start_or_stop(answer) is None


def test_the_question_asks_again_until_it_gets_an_answer() -> None:
    said: list[str] = []
    answers = io.StringIO("maybe\n\nwhat?\nB. Stop\n")
    assert ask_start_or_stop("Start anyway?", read=answers.readline, say=said.append) is False
    assert said[0] == f"Start anyway? {CHOICES} "
    assert said[1:] == ["Please answer A (start anyway) or B (stop): "] * 3


def test_no_answer_at_all_means_stop() -> None:
    said: list[str] = []
    assert ask_start_or_stop("Start?", read=io.StringIO("hmm\n").readline, say=said.append) is False


def _run_on_a_terminal(
    ws: Path, args: list[str], answers: list[bytes], timeout: float = 90
) -> tuple[int, str]:
    """`flamechase ARGS` with stdin and stderr on a pseudo-terminal; each answer is typed
    once the question (or its repeat) is on the screen. Returns (exit code, screen)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [*FLAMECHASE, *args],
        cwd=ws,
        stdin=slave,
        stderr=slave,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(slave)
    screen = b""
    pending = list(answers)
    asked = 0
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the program has ended and closed the terminal
                    break
                if not chunk:
                    break
                screen += chunk
            prompts = screen.count(CHOICES.encode()) + screen.count(b"Please answer A")
            if pending and prompts > asked:
                asked = prompts
                os.write(master, pending.pop(0))
            if not ready and proc.poll() is not None:
                break
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return code, screen.decode("utf-8", "replace")


LARGE = (
    "lanes=2",
    "budget.turns=2",
    "confirm_large_workspace_copies=true",
    "workspace_file_warning_threshold=2",
    "sandbox=off",
)


@pytest.fixture
def team(tmp_path: Path) -> Team:
    return Team(tmp_path / "team")


@pytest.fixture
def big_tree(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(5):
        (ws / f"f{i}.txt").write_text(f"{i}\n")
    return ws


def test_a_large_copy_starts_after_asking_again_on_a_stray_answer(
    team: Team, big_tree: Path, state_home: Path
) -> None:
    code, screen = _run_on_a_terminal(
        big_tree, team.args(*LARGE), [b"what do you mean\n", b"A. Start anyway\n"]
    )
    assert code == 0, screen
    assert screen.count(CHOICES) == 1
    assert screen.count("Please answer A (start anyway) or B (stop)") == 1
    assert "Traceback" not in screen and "Error" not in screen
    assert status(big_tree)["budget"]["turns"]["used"] == 2


@pytest.mark.parametrize("answer", [b"stop\n", b"n\n", b"\x04"])  # \x04: Ctrl-D, no answer
def test_a_large_copy_answered_stop_writes_nothing(
    team: Team, big_tree: Path, state_home: Path, answer: bytes
) -> None:
    code, screen = _run_on_a_terminal(big_tree, team.args(*LARGE), [answer])
    assert code == 2, screen
    assert "startup cancelled; no copy was made" in screen
    assert "Traceback" not in screen
    assert not (state_home / "runs").exists() or not any((state_home / "runs").iterdir())


@pytest.mark.parametrize("flag", [["-e", "workspace=docker"], ["--env", "ws=ssh@box"]])
def test_the_environment_flag_says_what_flamechase_offers_instead(
    tmp_path: Path, state_home: Path, flag: list[str]
) -> None:
    proc = cli(
        "exec",
        "-f",
        "parallel_flame_chase",
        *flag,
        "-a",
        "sim/steady",
        "-p",
        "budget.turns=1",
        "t",
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(
        f"flamechase exec: error: -e {flag[1]}: flamechase has no environments to choose"
    )
    assert "in the directory you start in" in lines[0] and "drop -e" in lines[0]
    assert "No such option" not in proc.stderr
    assert not state_home.exists()


def test_a_spent_budget_says_how_to_go_on_only_when_the_flow_can_resume(source_tree: Path) -> None:
    given = ["-p", "budget.turns=1,rest_seconds=0.05"]
    proc = cli(
        "exec",
        "-f",
        "flame_chase",
        "-a",
        "sim/steady",
        "-a",
        "sim/steady",
        *given,
        "t",
        cwd=source_tree,
    )
    assert proc.returncode == 0, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert re.search(
        r"finished: budget turns is spent; 1 of 1 turn valid\. Spent \$[0-9.]+ over 1 turn; "
        r"to go on, resume with a larger -p budget\.turns=…$",
        last,
    ), last
    # A flow that never resumes gets no such advice.
    relay = Path(__file__).parent / "simflows" / "relay.py"
    proc = cli(
        "exec",
        "-f",
        str(relay),
        "-a",
        "sim/steady",
        "-a",
        "sim/steady",
        *given,
        "t",
        cwd=source_tree,
    )
    last = proc.stderr.strip().splitlines()[-1]
    assert re.search(r"finished: budget turns is spent; 1 of 1 turn valid\. Spent [^;]+$", last)


@pytest.mark.parametrize("mode", [[], ["--json"]])
def test_the_end_of_a_run_is_said_once_on_stderr(source_tree: Path, mode: list[str]) -> None:
    # Before: the log's last line on stdout and a line on stderr both told the end.
    proc = cli(
        "exec",
        "-f",
        "flame_chase",
        "-a",
        "sim/steady",
        "-a",
        "sim/steady",
        "-p",
        "budget.turns=1,rest_seconds=0.05",
        *mode,
        "t",
        cwd=source_tree,
    )
    assert proc.returncode == 0, proc.stderr
    said = [line for line in (proc.stdout + proc.stderr).splitlines() if line[:1] != "{"]
    ends = [line for line in said if "budget turns is spent;" in line]  # the JSON's aside
    assert len(ends) == 1 and ends[0] in proc.stderr, said
    shape = r"flamechase: run \S+ finished: .+\. Spent \$[0-9.]+ over 1 turn; .+"
    assert re.fullmatch(shape, ends[0]), ends
    if mode:  # a program reading --json still gets the end as an event
        kinds = [json.loads(line)["kind"] for line in proc.stdout.splitlines()]
        assert kinds[-1] == "run_finished"
    else:
        assert "files a report" in proc.stdout.splitlines()[-1]  # the log's own last event
