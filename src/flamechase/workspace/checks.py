"""Refusals before anything is written: inputs a run must not start from.

Each check raises a one-line UsageError (exit 2) naming the value and what to do:
a TASK (or any argument) whose bytes are not UTF-8; a current directory that was deleted;
a state home that is a file, or lies inside the workspace (lane 1 writes the workspace, so it
could rewrite the run store); a workspace that is `/`, a system directory or the user's home
(lane 1 would write all of it) unless the user says so (`--allow-workspace`).
"""

from __future__ import annotations

import os
from pathlib import Path

from flamechase.errors import StateHomeInvalid, TaskError, UsageError, WorkspaceInvalid

# Directories no project lives in directly; their children (/usr/local, /var/lib) too.
SYSTEM_DIRS = frozenset(
    {
        "/",
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/home",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/media",
        "/mnt",
        "/opt",
        "/proc",
        "/root",
        "/run",
        "/sbin",
        "/srv",
        "/sys",
        "/usr",
        "/var",
        "/tmp",  # noqa: S108 -- a name to refuse, not a file we create
    }
)
SYSTEM_PARENTS = frozenset({"/usr", "/var"})


def current_directory() -> Path:
    """The current directory, or WorkspaceInvalid when it no longer exists."""
    try:
        return Path(os.getcwd())
    except FileNotFoundError:
        raise WorkspaceInvalid(
            "the current directory no longer exists (it was deleted or moved); cd into your "
            "project and run the command again"
        ) from None
    except PermissionError:
        raise WorkspaceInvalid(
            "the current directory cannot be read (permission denied); cd into your project "
            "and run the command again"
        ) from None


def check_utf8(what: str, text: str) -> None:
    """TaskError (for the task) or UsageError when `text` came from bytes that are not UTF-8
    (the command line decodes them to lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        byte = ord(bad) - 0xDC00 if 0xDC80 <= ord(bad) <= 0xDCFF else None
        shown = f"byte 0x{byte:02x}" if byte is not None else f"character {bad!r}"
        error = TaskError if what == "TASK" else UsageError
        raise error(
            f"{what} is not valid UTF-8 ({shown} at position {exc.start}); give it as UTF-8 text"
        ) from None


def check_workspace(workspace: Path, *, allow: bool, home: Path | None = None) -> None:
    """WorkspaceInvalid for `/`, a system directory or the user's home, unless `allow`."""
    ws = workspace.resolve()
    check_utf8("the workspace path", str(ws))
    if allow:
        return
    user_home = (home or Path.home()).resolve()
    what = None
    if ws == user_home:  # first: a home such as /root is also in the system list
        what = "your home directory"
    elif str(ws) in SYSTEM_DIRS or str(ws.parent) in SYSTEM_PARENTS:
        what = "the root directory" if str(ws) == "/" else "a system directory"
    if what is not None:
        raise WorkspaceInvalid(
            f"the workspace is {ws}, {what}: lane 1 would write anything in it; run "
            "flamechase in a project directory, or pass --allow-workspace if you mean it"
        )


def check_state_home(state_home: Path, workspace: Path, *, from_env: bool) -> None:
    """StateHomeInvalid when the state home is (or is inside) a file, or inside the
    workspace. `from_env`: it came from FLAMECHASE_HOME (named so in the message)."""
    name = f"FLAMECHASE_HOME={state_home}" if from_env else f"the state home {state_home}"
    check_utf8(name, str(state_home))
    existing = state_home
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        where = "is a file" if existing == state_home else f"is inside the file {existing}"
        raise StateHomeInvalid(
            f"{name} {where}, not a directory; point FLAMECHASE_HOME at a directory (or unset it)"
        )
    home, ws = state_home.resolve(), workspace.resolve()
    if home == ws or ws in home.parents:
        raise StateHomeInvalid(
            f"{name} is inside the workspace {ws}: lane 1 writes the workspace and could "
            "rewrite the runs; set FLAMECHASE_HOME to a directory outside it"
        )
