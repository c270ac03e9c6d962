"""A user with a git identity, global config and hooks of their own, and a source repository.

The runtime's programs must not use or change any of it: their git runs with its own config.
The user's global config would break them if it applied (every commit signed with a key that
does not exist), and the user's hooks leave a mark when they run.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


class User:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.hooks = home / "hooks"
        self.marks = home / "hook-ran"

    def git(self, cwd: Path, *args: str, check: bool = True) -> str:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f"git {args}: {proc.stderr}")
        return proc.stdout.strip()

    def config_digest(self) -> str:
        return hashlib.sha256((self.home / ".gitconfig").read_bytes()).hexdigest()

    def hooks_ran(self) -> list[str]:
        return self.marks.read_text().split() if self.marks.exists() else []


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[User]:
    home = tmp_path / "user-home"
    hooks = home / "hooks"
    hooks.mkdir(parents=True)
    for name in (
        "pre-commit",
        "commit-msg",
        "post-commit",
        "pre-push",
        "post-checkout",
        "reference-transaction",
    ):
        hook = hooks / name
        hook.write_text(f"#!/bin/sh\necho {name} >> '{home / 'hook-ran'}'\n")
        hook.chmod(0o755)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = The User\n\temail = user@example.invalid\n"
        f"[core]\n\thooksPath = {hooks}\n"
        "[commit]\n\tgpgsign = true\n[gpg]\n\tprogram = /nonexistent/gpg\n"
        "[init]\n\tdefaultBranch = trunk\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    for key in [k for k in os.environ if k.startswith("GIT_")]:
        monkeypatch.delenv(key)
    yield User(home)


def source_repo(user: User, root: Path, files: dict[str, str]) -> Path:
    """A git work tree of the user's, one commit of `files` on branch trunk (their hooks run
    for their own commits: the marks are cleared afterwards)."""
    root.mkdir(parents=True)
    user.git(root, "init", "-q")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    user.git(root, "add", "-A")
    user.git(root, "-c", "commit.gpgsign=false", "commit", "-qm", "the user's commit")
    user.marks.unlink(missing_ok=True)
    return root


def tool(name: str, *args: str, cwd: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run `python -I -m flamechase.tools.NAME ARGS` in `cwd` (git_pr's programs by their
    own names: `gitpr`, `publish`); its last line, parsed."""
    import json

    group = "git_pr." if name in ("gitpr", "publish", "central", "clones", "hook") else ""
    proc = subprocess.run(
        [sys.executable, "-I", "-m", f"flamechase.tools.{group}{name}", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    assert lines, proc.stderr
    result: dict[str, Any] = json.loads(lines[-1])
    assert (proc.returncode == 0) == ("error" not in result), (proc.returncode, result)
    return result


def python_in(tree: Path) -> tuple[Path, str]:
    """A virtual environment made inside `tree` (as a user's project often has one) that runs
    this flamechase: (its python, its site-packages relative to `tree`)."""
    import flamechase

    venv = tree / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site = venv / "lib" / version / "site-packages"
    (site / "flamechase-src.pth").write_text(str(Path(flamechase.__file__).parents[1]) + "\n")
    return venv / "bin" / "python", str(site.relative_to(tree))
