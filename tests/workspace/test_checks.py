"""Inputs a run must not start from are refused before anything is written, in one line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flamechase.errors import StateHomeInvalid, TaskError, UsageError, WorkspaceInvalid
from flamechase.workspace import checks


def test_text_from_bytes_that_are_not_utf8_is_refused_naming_the_byte() -> None:
    task = b"make it \xff faster".decode("utf-8", "surrogateescape")
    with pytest.raises(TaskError, match=r"TASK is not valid UTF-8 \(byte 0xff at position 8\)"):
        checks.check_utf8("TASK", task)
    with pytest.raises(UsageError, match="the argument"):
        checks.check_utf8("the argument", task)
    checks.check_utf8("TASK", "plain, and ünïcode")


@pytest.mark.parametrize(
    "path", ["/", "/usr", "/etc", "/var", "/usr/local", "/var/lib", "/tmp", "/home"]
)
def test_the_root_and_system_directories_are_refused_as_workspaces(path: str) -> None:
    with pytest.raises(WorkspaceInvalid, match="--allow-workspace"):
        checks.check_workspace(Path(path), allow=False)
    checks.check_workspace(Path(path), allow=True)


def test_the_home_directory_is_refused_unless_allowed(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceInvalid, match="your home directory"):
        checks.check_workspace(tmp_path, allow=False, home=tmp_path)
    checks.check_workspace(tmp_path, allow=True, home=tmp_path)
    checks.check_workspace(tmp_path / "project", allow=False, home=tmp_path)  # a project in it


def test_a_project_under_usr_src_or_var_www_is_a_workspace(tmp_path: Path) -> None:
    checks.check_workspace(Path("/usr/src/linux"), allow=False, home=tmp_path)
    checks.check_workspace(Path("/var/www/site"), allow=False, home=tmp_path)


def test_a_state_home_that_is_a_file_or_inside_one_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "home-file"
    file.write_text("")
    with pytest.raises(StateHomeInvalid, match=r"FLAMECHASE_HOME=.* is a file"):
        checks.check_state_home(file, tmp_path / "ws", from_env=True)
    with pytest.raises(StateHomeInvalid, match="is inside the file"):
        checks.check_state_home(file / "sub", tmp_path / "ws", from_env=True)
    checks.check_state_home(tmp_path / "not-yet", tmp_path / "ws", from_env=True)


def test_a_state_home_inside_the_workspace_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for home in (ws, ws / ".flamechase", ws / "a" / "b"):
        with pytest.raises(StateHomeInvalid, match="inside the workspace"):
            checks.check_state_home(home, ws, from_env=True)
    checks.check_state_home(tmp_path / "elsewhere", ws, from_env=False)


def test_a_deleted_current_directory_is_refused(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    here = os.getcwd()
    os.chdir(gone)
    try:
        gone.rmdir()
        with pytest.raises(WorkspaceInvalid, match="no longer exists"):
            checks.current_directory()
    finally:
        os.chdir(here)


def test_a_home_in_the_system_list_is_called_a_home() -> None:
    # root's home is /root: the user is told it is their home, not "a system directory".
    with pytest.raises(WorkspaceInvalid, match="your home directory"):
        checks.check_workspace(Path("/root"), allow=False, home=Path("/root"))
