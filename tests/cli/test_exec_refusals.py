"""Every refusal of `flamechase exec` is one line on stderr, exit 2, and writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import REPORT_OK, actor, cli


@pytest.fixture
def good_actor(tmp_path: Path) -> Path:
    return actor(tmp_path, "ok.sh", REPORT_OK)


def _refused(proc: object, state_home: Path, needle: str) -> None:
    assert proc.returncode == 2, proc.stderr  # type: ignore[attr-defined]
    lines = proc.stderr.strip().splitlines()  # type: ignore[attr-defined]
    assert len(lines) == 1, proc.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in proc.stderr  # type: ignore[attr-defined]
    assert needle in lines[0], lines[0]
    assert not state_home.exists(), "a refusal wrote under the state home"


CASES = [
    (["-f", "no_such_flow", "-p", "budget.turns=1", "t"], "no flow called 'no_such_flow'"),
    (
        ["-f", "flame_chase", "-a", "nobody=exec:{a}", "-p", "budget.turns=1", "t"],
        "no agent role 'nobody'",
    ),
    (
        [
            "-f",
            "flame_chase",
            "-a",
            "first_chaser=exec:{a}",
            "-a",
            "first_chaser=exec:{a}",
            "-p",
            "budget.turns=1",
            "t",
        ],
        "given twice",
    ),
    (
        ["-f", "flame_chase", "-a", "first_chaser=exec:{a}", "-p", "budget.turns=1", "t"],
        "needs an agent for 'second_chaser'",
    ),
    (
        [
            "-f",
            "flame_chase",
            "-a",
            "first_chaser=exec:{a}",
            "-a",
            "exec:{a}",
            "-p",
            "budget.turns=1",
            "t",
        ],
        "mixing",
    ),
    (
        ["-f", "flame_chase", "-a", "claude/", "-a", "exec:{a}", "-p", "budget.turns=1", "t"],
        "claude/",
    ),
    (
        [
            "-f",
            "flame_chase",
            "-a",
            "exec:/nonexistent/actor",
            "-a",
            "exec:{a}",
            "-p",
            "budget.turns=1",
            "t",
        ],
        "/nonexistent/actor",
    ),
    (
        [
            "-f",
            "flame_chase",
            "-a",
            "exec:{a}",
            "-a",
            "exec:{a}",
            "-p",
            "budget.turns=1",
            "-p",
            "rest_seconds=100",
            "t",
        ],
        "rest_seconds",
    ),
    (
        [
            "-f",
            "flame_chase",
            "-a",
            "exec:{a}",
            "-a",
            "exec:{a}",
            "-p",
            "budget.turns=1",
            "-p",
            "colour=blue",
            "t",
        ],
        "colour",
    ),
    (
        [
            "-f",
            "flame_chase",
            "-a",
            "exec:{a}",
            "-a",
            "exec:{a}",
            "-p",
            "budget.duration=soon",
            "t",
        ],
        "budget.duration",
    ),
    (
        ["-f", "flame_chase", "-a", "exec:{a}", "-a", "exec:{a}", "-p", "budget.turns=1", "  "],
        "TASK is empty",
    ),
    (
        [
            "-f",
            "flame_chase",
            "-a",
            "exec:{a}",
            "-a",
            "exec:{a}",
            "-p",
            "budget.turns=1",
            "--resume",
            "never ran",
        ],
        "--resume",
    ),
    # A new user's slips, each answered in words that say what to give instead.
    (
        ["-f", "flame_chase", "-a", "exec:{a}", "-a", "exec:{a}", "-p", "budget.cost=-5", "t"],
        "budget.cost=-5: a budget must not be negative; give US dollars such as 5",
    ),
    (
        ["-f", "flame_chase", "-a", "exec:{a}", "-a", "exec:{a}", "-p", "rest_seconds=fast", "t"],
        "param rest_seconds=fast: must be a number (range 0.05–60)",
    ),
    (
        ["-f", "parallel_flame_chase", "-a", "exec:{a}", "-p", "lanes=two", "t"],
        "param lanes=two: must be a whole number (range 1–8)",
    ),
    (
        ["-f", "flame_chase", "-a", "claude@/opus", "-a", "exec:{a}", "t"],
        "the account after '@' is empty; expected CLI[@ACCOUNT]/MODEL[:EFFORT]",
    ),
]


@pytest.mark.parametrize(("args", "needle"), CASES)
def test_bad_input_is_refused_in_one_line_with_nothing_written(
    args: list[str], needle: str, good_actor: Path, tmp_path: Path, state_home: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = cli("exec", *[a.replace("{a}", str(good_actor)) for a in args], cwd=ws)
    _refused(proc, state_home, needle)
    assert list(ws.iterdir()) == []


def test_non_executable_exec_actor_is_refused(tmp_path: Path, state_home: Path) -> None:
    script = tmp_path / "noexec.sh"
    script.write_text("#!/bin/sh\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = cli(
        "exec",
        "-f",
        "flame_chase",
        "-a",
        f"exec:{script}",
        "-a",
        f"exec:{script}",
        "-p",
        "budget.turns=1",
        "t",
        cwd=ws,
    )
    _refused(proc, state_home, str(script))


def test_continue_without_task_md_or_run_is_refused(
    good_actor: Path, tmp_path: Path, state_home: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = cli(
        "exec",
        "-f",
        "flame_chase",
        "-a",
        f"exec:{good_actor}",
        "-a",
        f"exec:{good_actor}",
        "-p",
        "budget.turns=1",
        "continue",
        cwd=ws,
    )
    _refused(proc, state_home, "TASK.md")


def test_bad_config_file_is_refused(good_actor: Path, tmp_path: Path, state_home: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    cfg = tmp_path / "c.yaml"
    cfg.write_text("budget: [unclosed\n")
    proc = cli(
        "exec",
        "-f",
        "flame_chase",
        "-a",
        f"exec:{good_actor}",
        "-a",
        f"exec:{good_actor}",
        "-c",
        str(cfg),
        "t",
        cwd=ws,
    )
    _refused(proc, state_home, str(cfg.name))


def test_help_documents_exit_codes(tmp_path: Path) -> None:
    proc = cli("exec", "--help", cwd=tmp_path)
    assert proc.returncode == 0
    for code in ("130", "every lane is held", "refused before anything ran"):
        assert code in proc.stdout
