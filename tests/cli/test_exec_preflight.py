"""`flamechase exec` refuses what the hostile-input probes found, in one line, exit 2, with
nothing written: non-UTF-8 task bytes, a deleted current directory, a FLAMECHASE_HOME that is
a file or inside the workspace, and `/`, a system directory or the home as the workspace."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.helpers import FLAMECHASE, REPORT_OK, actor, cli

BASE = ["exec", "-f", "flame_chase", "-p", "budget.turns=1"]


def _refused(proc: subprocess.CompletedProcess[str], needle: str, *unwritten: Path) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert needle in lines[0], lines[0]
    for path in unwritten:
        assert not path.exists(), f"a refusal wrote {path}"


def _agents(tmp_path: Path) -> list[str]:
    a = actor(tmp_path, "ok.sh", REPORT_OK)
    return ["-a", f"exec:{a}", "-a", f"exec:{a}"]


def test_a_task_with_bytes_that_are_not_utf8_is_refused(tmp_path: Path, state_home: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    argv = [os.fsencode(a) for a in [*FLAMECHASE, *BASE, *_agents(tmp_path)]]
    proc = subprocess.run(
        [*argv, b"speed \xff\xfe it up"],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    _refused(proc, "TASK is not valid UTF-8 (byte 0xff at position 6)", state_home)


def test_a_deleted_current_directory_is_refused(tmp_path: Path, state_home: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    script = 'cd "$1" && rmdir "$1" && shift && exec "$@"'
    proc = subprocess.run(
        ["/bin/sh", "-c", script, "sh", str(ws), *FLAMECHASE, *BASE, *_agents(tmp_path), "t"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    _refused(proc, "the current directory no longer exists", state_home)


def test_a_flamechase_home_that_is_a_file_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home-file"
    home.write_text("not a directory\n")
    proc = cli(*BASE, *_agents(tmp_path), "t", cwd=ws, env={"FLAMECHASE_HOME": str(home)})
    _refused(proc, f"FLAMECHASE_HOME={home} is a file")
    assert home.read_text() == "not a directory\n"


def test_a_flamechase_home_inside_the_workspace_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    home = ws / ".flamechase"
    proc = cli(*BASE, *_agents(tmp_path), "t", cwd=ws, env={"FLAMECHASE_HOME": str(home)})
    _refused(proc, "is inside the workspace", home)


def test_root_and_system_directories_are_refused_as_workspaces(
    tmp_path: Path, state_home: Path
) -> None:
    for where in ("/", "/usr", "/etc"):
        proc = cli(*BASE, *_agents(tmp_path), "t", cwd=Path(where))
        _refused(proc, "--allow-workspace", state_home)


def test_the_home_directory_is_a_workspace_only_when_allowed(
    tmp_path: Path, state_home: Path
) -> None:
    home = tmp_path / "user-home"
    home.mkdir()
    agents = _agents(tmp_path)
    proc = cli(*BASE, *agents, "t", cwd=home, env={"HOME": str(home)})
    _refused(proc, "your home directory", state_home)
    proc = cli(*BASE, "--allow-workspace", *agents, "t", cwd=home, env={"HOME": str(home)})
    assert proc.returncode == 0, proc.stderr
