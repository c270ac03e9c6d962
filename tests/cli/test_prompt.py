"""The prompt a bare `flamechase` opens: through a real pseudo-terminal, and through
prompt_toolkit's pipe input (keys in, no terminal)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pexpect
import pytest
from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from flamechase.cli import prompt
from flamechase.cli.run_cmd import start
from tests.helpers import REPORT_OK, _pending, actor, cli, status

UP = "\x1b[A"
MARK = prompt.PROMPT.strip()  # on screen the space is a cursor move


@pytest.fixture
def profiled(tmp_path: Path) -> Path:
    """A workspace, and a flame_chase profile whose chasers are exec: scripts."""
    script = actor(tmp_path, "chaser.sh", REPORT_OK)
    cli(
        "profile",
        "set",
        "flame_chase",
        "-a",
        f"first_chaser=exec:{script},second_chaser=exec:{script}",
        "-p",
        "budget.turns=2,rest_seconds=0.05",
        cwd=tmp_path,
        check=True,
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def _spawn(ws: Path) -> pexpect.spawn:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "flamechase"],
        cwd=str(ws),
        # pexpect answers no cursor-position request: say so up front.
        env={**os.environ, "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1"},
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 100),
    )
    child.expect_exact(MARK)
    return child


def test_a_run_from_the_prompt_shows_its_view_and_comes_back(profiled: Path) -> None:
    child = _spawn(profiled)
    child.send("$flame_chase make it better\r")
    child.expect("lane-1")  # the live view, drawn in the terminal
    child.expect(r"flamechase: run \S+ finished: ")  # the end, said once (not again below)
    child.expect_exact(MARK)
    assert "ended with exit code" not in child.before
    st = status(profiled)
    assert (st["flow"], st["task"], st["status"]) == ("flame_chase", "make it better", "finished")
    # History: Up brings the last line back.
    child.send(UP)
    child.expect_exact("$flame_chase make it better")
    child.send("\x15")  # Ctrl-U clears the line
    # Tab completes a flow name after `$`.
    child.send("$flame_c\t")
    child.expect(r"flame_c(\x1b\[[0-9;?]*[A-Za-z])*hase")  # the rest of the name, drawn
    child.send("\x15exit\r")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_a_stopped_run_comes_back_to_the_prompt(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    gate = ws / "gate"  # in the tree: the jailed actor may write nothing outside it
    gate.mkdir(parents=True)
    script = actor(
        tmp_path,
        "held.sh",
        f"""
        touch {gate}/started
        while [ ! -f {gate}/release ]; do sleep 0.05; done
        {REPORT_OK}""",
    )
    cli(
        "profile",
        "set",
        "flame_chase",
        "-a",
        f"exec:{script}",
        "-a",
        f"exec:{script}",
        "-p",
        "budget.turns=5,rest_seconds=0.05",
        cwd=tmp_path,
        check=True,
    )
    child = _spawn(ws)
    child.send("$flame_chase make it better\r")
    _wait_for(gate / "started")
    # Ctrl-C as the terminal sends it; then the turn under way may finish.
    child.kill(signal.SIGINT)
    _delivered(child.pid, signal.SIGINT)
    (gate / "release").touch()
    child.expect(r"flamechase: run \S+ stopped: ")
    child.expect_exact(MARK)
    assert "ended with exit code" not in child.before
    assert status(ws)["status"] == "stopped"
    child.send("exit\r")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def _wait_for(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def _delivered(pid: int, sig: int, timeout: float = 20) -> None:
    """Wait until the kernel has handed `sig` to `pid` (it is no longer pending)."""
    deadline = time.monotonic() + timeout
    while _pending(pid) & (1 << (sig - 1)):
        assert time.monotonic() < deadline, f"signal {sig} still pending"
        time.sleep(0.01)


def test_a_refused_run_is_one_line_and_the_prompt_stays(profiled: Path) -> None:
    child = _spawn(profiled)
    child.send("$nope go\r")
    child.expect_exact("error: no flow called 'nope'")
    child.expect_exact("ended with exit code 2")
    child.expect_exact(MARK)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_without_a_terminal_a_bare_flamechase_prints_help(tmp_path: Path) -> None:
    proc = cli(cwd=tmp_path)
    assert "Usage: flamechase" in proc.stdout
    assert prompt.PROMPT not in proc.stdout


def test_dollar_completes_flow_names_only() -> None:
    completer = prompt.FlowCompleter(lambda: ["flame_chase", "parallel_flame_chase"])

    def words(text: str) -> list[str]:
        return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]

    assert words("$") == ["flame_chase", "parallel_flame_chase"]
    assert words("$par") == ["parallel_flame_chase"]
    assert words("$flame_chase fix") == []  # the task is free text
    assert words("fla") == []


def test_lines_are_read_as_flow_and_task() -> None:
    assert prompt.parse("$parallel_flame_chase get the solver under 10 s") == (
        "parallel_flame_chase",
        "get the solver under 10 s",
    )
    assert prompt.parse("  $flame_chase   x ") == ("flame_chase", "x")
    assert prompt.parse("flame_chase x") is None
    assert prompt.parse("$") is None


def test_the_prompt_reads_lines_from_a_pipe_and_keeps_them(
    profiled: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(profiled)
    history = tmp_path / "history"
    said: list[str] = []
    with create_pipe_input() as keys:
        keys.send_text("hello\r/nope now\r$flame_chase\r$flame_chase make it better\r")
        keys.send_text("exit\r")
        session: PromptSession[str] = PromptSession(
            input=keys, output=DummyOutput(), history=FileHistory(str(history))
        )
        assert prompt.repl(runner=start, session=session, say=said.append) == 0
    assert said[1].startswith("start a run with $FLOW TASK (flows: flame_chase,")
    assert said[2] == "no command /nope; /flow installs a flow, $FLOW TASK starts a run, help"
    assert said[3] == "$flame_chase: say what the agents should achieve"
    assert said[4:] == []  # the run said its end itself: once, on stderr
    assert "$flame_chase make it better" in history.read_text()
    out, err = capsys.readouterr()
    assert "budget turns is spent" not in out  # the log leaves the end line to stderr
    ends = [line for line in err.splitlines() if line.startswith("flamechase: run ")]
    assert len(ends) == 1 and " finished: budget turns is spent" in ends[0], err


def test_a_flow_that_exits_leaves_the_prompt_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: sys.exit() in a flow's code closed the prompt, as if the user had left.
    from tests.engine.mistakes import BY_NAME, Mistake, source

    flow = tmp_path / "relay.py"
    flow.write_text(source(Mistake("relay", {}, ())))
    script = actor(tmp_path, "agent.sh", REPORT_OK)
    agents = f"author=exec:{script},reviewer=exec:{script}"
    cli(
        "profile",
        "set",
        str(flow),
        "-a",
        agents,
        "-p",
        "rest_seconds=0.05",
        cwd=tmp_path,
        check=True,
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    said: list[str] = []
    with create_pipe_input() as keys:
        session: PromptSession[str] = PromptSession(input=keys, output=DummyOutput())
        flow.write_text(source(BY_NAME["exits_at_import"]))
        keys.send_text(f"${flow} one\r")
        keys.send_text("exit\r")
        assert prompt.repl(runner=start, session=session, say=said.append) == 0
    assert "failed to import: it called sys.exit(0)" in said[1]
    assert said[2] == f"flamechase: ${flow} ended with exit code 2"
    flow.write_text(source(BY_NAME["decide_exits"]))
    said.clear()
    with create_pipe_input() as keys:
        session = PromptSession(input=keys, output=DummyOutput())
        keys.send_text(f"${flow} two\rexit\r")
        assert prompt.repl(runner=start, session=session, say=said.append) == 0
    assert said[1:] == []  # the run's own end line says it failed
    err = capsys.readouterr().err
    assert "decide() called sys.exit(0)" in err and " failed: " in err
