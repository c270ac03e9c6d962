"""At the prompt, a flow with no profile has its agents asked for by name (offering the CLIs
on PATH and saved accounts), then the answers may become its profile; Ctrl-C at any question
starts nothing. `/flow` walks the flowverses to an install. Through a real pseudo-terminal."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect
import pytest
from prompt_toolkit import PromptSession
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from flamechase.cli import prompt
from tests.engine.mistakes import Mistake, source
from tests.helpers import REPORT_OK, actor, cli

MARK = prompt.PROMPT.strip()
# A question's trailing space is drawn as a cursor move: expected without it.


@pytest.fixture
def relay(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A relay flow (author, reviewer; it finishes after two valid turns), an exec: agent,
    and a workspace; `claude` and `codex` on PATH (stand-ins: nothing runs them)."""
    flow = tmp_path / "relay.py"
    flow.write_text(source(Mistake("relay", {}, ())))
    script = actor(tmp_path, "agent.sh", REPORT_OK)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("claude", "codex"):
        actor(bin_dir, name, "exit 0")
    ws = tmp_path / "ws"
    ws.mkdir()
    return flow, script, ws


def _spawn(ws: Path, bin_dir: Path) -> pexpect.spawn:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "flamechase"],
        cwd=str(ws),
        env={
            **os.environ,
            "TERM": "xterm",
            "PROMPT_TOOLKIT_NO_CPR": "1",
            "PATH": f"{bin_dir}:{os.environ['PATH']}",
        },
        encoding="utf-8",
        timeout=90,
        dimensions=(40, 160),
    )
    child.expect_exact(MARK)
    return child


# Each role asked with what it is for: the relay says nothing of its roles, so its lane does.
AUTHOR = (
    "author (takes turns in lane-1, in turn with reviewer, on your tree) [claude/claude-opus-4-5]:"
)
REVIEWER = "takes turns in lane-1, in turn with author, on your tree"


def test_a_flow_without_a_profile_asks_each_role_by_name_then_saves_and_runs(
    relay: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    flow, script, ws = relay
    child = _spawn(ws, tmp_path / "bin")
    child.send(f"${flow} make it better\r")
    child.expect_exact("has no profile; it needs 2 agent(s), asked by name")
    child.expect_exact("1) claude/claude-opus-4-5  2) codex/gpt-5.1-codex")
    child.expect_exact(AUTHOR)
    child.send("claude\r")  # not a spec: said why, asked again
    child.expect_exact("there is no '/' between the CLI and the model")
    child.expect_exact(AUTHOR)
    child.send(f"exec:{script}\r")
    # The default is the answer before.
    child.expect_exact(f"reviewer ({REVIEWER}) [exec:{script}]:")
    child.send("\r")
    child.expect_exact(f"save these as the profile for {flow}? [Y/n]:")
    child.send("\r")
    child.expect_exact(f"profile for {flow} saved in")
    child.expect(r"flamechase: run \S+ finished: ")
    child.expect_exact(MARK)
    child.send("exit\r")
    child.expect(pexpect.EOF)
    shown = cli("profile", "show", str(flow), cwd=tmp_path, check=True).stdout
    assert f"author=exec:{script}" in shown and f"reviewer=exec:{script}" in shown


def test_ctrl_c_at_a_question_starts_nothing(
    relay: tuple[Path, Path, Path], tmp_path: Path, state_home: Path
) -> None:
    flow, script, ws = relay
    child = _spawn(ws, tmp_path / "bin")
    child.send(f"${flow} make it better\r")
    child.expect_exact(AUTHOR)
    child.send(f"exec:{script}\r")
    child.expect_exact(f"reviewer ({REVIEWER}) [")
    child.sendintr()
    child.expect_exact(f"${flow}: nothing started")
    child.expect_exact(MARK)
    child.send("exit\r")
    child.expect(pexpect.EOF)
    assert not list((state_home / "runs").glob("*"))
    assert cli("profile", "show", str(flow), cwd=tmp_path).returncode == 2


def test_answers_not_saved_still_run(
    relay: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    flow, _script, ws = relay
    monkeypatch.chdir(ws)
    monkeypatch.setenv("PATH", f"{ws.parent / 'bin'}:{os.environ['PATH']}")
    ran: list[tuple[str, str, tuple[str, ...]]] = []

    def runner(flow_ref: str, task: str, agents: tuple[str, ...] = ()) -> int:
        ran.append((flow_ref, task, agents))
        return 0

    said: list[str] = []
    with create_pipe_input() as keys:
        keys.send_text(f"${flow} go\r2\r\rn\rexit\r")
        session: PromptSession[str] = PromptSession(input=keys, output=DummyOutput())
        assert prompt.repl(runner=runner, session=session, say=said.append) == 0
    assert ran == [
        (str(flow), "go", ("author=codex/gpt-5.1-codex", "reviewer=codex/gpt-5.1-codex"))
    ]
    assert not any("saved in" in line for line in said)


def test_slash_flow_walks_flowverses_to_an_install(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    child = _spawn(ws, tmp_path)
    child.send("/flow\r")
    child.expect_exact("flows here: flame_chase, parallel_flame_chase")
    child.expect_exact("Flowverses: 1) official")
    child.expect_exact("flowverse [1]:")
    child.send("\r")
    child.expect_exact("2) parallel_flame_chase  2 (with parallel_flame_chase:git_pr)")
    child.expect_exact("flow to install (Enter: back):")
    child.send("parallel_flame_chase\r")
    child.expect_exact("install parallel_flame_chase from official? [Y/n]:")
    child.send("y\r")
    child.expect_exact("installed parallel_flame_chase 2 from the official index")
    child.expect_exact("with parallel_flame_chase:git_pr")
    child.expect_exact(MARK)
    # Ctrl-C at any question of the walk: back to the prompt, nothing done.
    child.send("/flow\r")
    child.expect_exact("flowverse [1]:")
    child.sendintr()
    child.expect_exact(MARK)
    child.send("exit\r")
    child.expect(pexpect.EOF)
    rows = cli("flows", "list", cwd=tmp_path, check=True).stdout
    assert "built-in, installed from official" in rows


def test_parallel_flame_chase_asks_its_seven_roles_in_order_offering_a_saved_account(
    relay: tuple[Path, Path, Path], tmp_path: Path, state_home: Path
) -> None:
    _flow, script, ws = relay
    key = tmp_path / "key.txt"
    key.write_text("sk-test\n")
    cli("accounts", "add", "claude", "work", "--api-key-file", str(key), cwd=tmp_path, check=True)
    child = _spawn(ws, tmp_path / "bin")
    child.send("$parallel_flame_chase get the solver under 10 s\r")
    child.expect_exact("parallel_flame_chase has no profile; it needs 7 agent(s), asked by name")
    child.expect_exact(
        "1) claude/claude-opus-4-5  2) codex/gpt-5.1-codex  3) claude@work/claude-opus-4-5"
    )
    roles = ["coordinator"] + [f"lane_{n}_actor_{ab}" for n in (1, 2, 3) for ab in "ab"]
    # (answer, the default offered): a number, Enter for the answer before, a spec.
    asked = [
        ("3", "claude/claude-opus-4-5"),
        ("2", "claude@work/claude-opus-4-5"),
        ("", "codex/gpt-5.1-codex"),
        (f"exec:{script}", "codex/gpt-5.1-codex"),
        ("", None),
        ("", None),
        ("", None),
    ]
    for role, (given, default) in zip(roles, asked, strict=True):
        child.expect_exact(f"{role} (")
        if default is not None:
            child.expect_exact(f") [{default}]:")
        child.send(given + "\r")
    child.expect_exact("save these as the profile for parallel_flame_chase? [Y/n]:")
    child.sendintr()  # Ctrl-C at the last question too: nothing started, nothing saved
    child.expect_exact("$parallel_flame_chase: nothing started")
    child.expect_exact(MARK)
    child.send("exit\r")
    child.expect(pexpect.EOF)
    assert not list((state_home / "runs").glob("*"))
    assert cli("profile", "show", "parallel_flame_chase", cwd=tmp_path).returncode == 2
