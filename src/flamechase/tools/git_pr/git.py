"""git as the runtime runs it: its own config, its own identity, no hooks but the ones it means.

`GitError` carries git's last line of stderr. `Git(cwd)` runs git with the user's global and
system config switched off (GIT_CONFIG_GLOBAL=/dev/null, GIT_CONFIG_NOSYSTEM=1), no terminal
prompts, no replace refs (GIT_NO_REPLACE_OBJECTS), no inherited GIT_* variables that could
point it elsewhere, and options given on the command line (`-c`) that beat anything a
repository's own config says: the runtime's identity, no hooks, no fsmonitor, no signing.
`hooks=True` keeps a repository's hooks (the central repository's pre-receive hook runs when
the runtime pushes into it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

__all__ = ["IDENTITY", "NO_CONVERSION", "Git", "GitError", "done", "fail", "wipe"]

IDENTITY = ("flamechase", "runtime@flamechase.invalid")
# Checkouts and commits byte for byte: no end-of-line conversion, filter or keyword expansion,
# whatever the tree's own .gitattributes say (info/attributes wins over them).
NO_CONVERSION = "* -text -filter -ident -working-tree-encoding\n"
ZERO = "0" * 40
_FORCED = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "core.autocrlf=false",
    "advice.detachedHead=false",
    "safe.directory=*",
    "protocol.file.allow=always",
    "gc.auto=0",
    "maintenance.auto=false",
)


class GitError(Exception):
    """A git command failed; `str()` is git's last line of stderr (or the exit code)."""


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Our environment without GIT_* (which could redirect git), with git's config off."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            # Objects as they are: a refs/replace/* ref would rewrite them for every reader.
            "GIT_NO_REPLACE_OBJECTS": "1",
            "LC_ALL": "C",
        }
    )
    env.update(extra or {})
    return env


class Git:
    """git in `cwd` (or on `git_dir`), as the runtime runs it."""

    def __init__(
        self,
        cwd: Path,
        *,
        git_dir: Path | None = None,
        hooks: bool = False,
        identity: tuple[str, str] = IDENTITY,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.cwd = cwd
        self.git_dir = git_dir
        self.env = clean_env(env)
        forced = [o for o in _FORCED if hooks is False or not o.startswith("core.hooksPath")]
        forced += [f"user.name={identity[0]}", f"user.email={identity[1]}"]
        self.prefix = ["git", *(a for o in forced for a in ("-c", o))]
        if git_dir is not None:
            self.prefix += ["--git-dir", str(git_dir)]

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        check: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        proc = subprocess.run(
            [*self.prefix, *args],
            cwd=self.cwd,
            input=input,
            capture_output=True,
            env={**self.env, **(env or {})},
            check=False,
        )
        if check and proc.returncode != 0:
            raise GitError(last_line(proc.stderr) or f"git {args[0]} exited {proc.returncode}")
        return proc

    def out(
        self, *args: str, input: bytes | None = None, env: Mapping[str, str] | None = None
    ) -> str:
        """stdout of a git command that must succeed, stripped."""
        return self.run(*args, input=input, env=env).stdout.decode("utf-8", "replace").strip()

    def ok(self, *args: str) -> bool:
        return self.run(*args, check=False).returncode == 0

    def sha(self, rev: str) -> str | None:
        """The object `rev` names, or None."""
        proc = self.run("rev-parse", "-q", "--verify", f"{rev}^{{object}}", check=False)
        return proc.stdout.decode().strip() or None if proc.returncode == 0 else None

    def refs(self, prefix: str = "refs/") -> dict[str, str]:
        """ref -> object of every ref under `prefix`."""
        text = self.out("for-each-ref", "--format=%(refname) %(objectname)", prefix)
        return dict(line.split(" ", 1) for line in text.splitlines() if " " in line)


def last_line(data: bytes) -> str:
    lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def wipe(path: Path) -> None:
    """Empty the directory `path` (a place the runtime fills again), not following links."""
    path.mkdir(parents=True, exist_ok=True)
    for entry in os.scandir(path):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)


def done(result: Mapping[str, Any]) -> NoReturn:
    """Print the program's result as its last line and exit 0."""
    sys.stdout.write(json.dumps(dict(result), sort_keys=True, separators=(",", ":")) + "\n")
    sys.stdout.flush()
    raise SystemExit(0)


def fail(reason: str) -> NoReturn:
    """Print `{"error": reason}` (one line) as the last line and exit 1."""
    one = " ".join(str(reason).split())[:2000]
    sys.stdout.write(json.dumps({"error": one}, separators=(",", ":")) + "\n")
    sys.stdout.flush()
    raise SystemExit(1)


def write_text(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def paths_arg(values: Sequence[str] | None) -> list[str]:
    return [v for v in values or () if v]
