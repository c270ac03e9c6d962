"""Running parallel_flame_chase:git_pr through the real CLI with scripted lane actors.

A `Team` puts the shared actor (`actor.py`) and a test's `hook.py` in a directory, makes the
user's source repository (git, with a score the evaluator prints, and any `files` a test
adds or replaces), and runs
`flamechase exec -f parallel_flame_chase:git_pr` with the actor in every role, jailed as the
engine jails lanes. The user has a git identity, global config and hooks of their own, which
nothing of the run may use or change.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.helpers import FLAMECHASE, cli, events, status

ACTOR = Path(__file__).with_name("actor.py")
# The evaluator: the sum of the numbers in a.txt and b.txt, lower is better. With a file
# `slow` in the tree it first waits for its lane to open a gate (`lanes/LANE/gate` in the
# run), so a test can keep a PR under evaluation (frozen) for as long as it needs.
SCORE = """\
import os, pathlib, sys, time
here = pathlib.Path.cwd()
if pathlib.Path("slow").exists():
    gate = here.parents[2] / "lanes" / here.parent.name / "gate"
    deadline = time.monotonic() + 90
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
total = sum(int(pathlib.Path(n).read_text()) for n in ("a.txt", "b.txt"))
print("SCORE:", total)
"""


class Team:
    def __init__(self, root: Path, hook: str, files: Mapping[str, str] | None = None) -> None:
        self.root = root
        self.dir = root / "team"
        self.dir.mkdir(parents=True)
        # This interpreter: the one with this flamechase (and `flamechase pr`) installed.
        body = ACTOR.read_text().split("\n", 1)[1]
        (self.dir / "actor.py").write_text(f"#!{sys.executable}\n" + body)
        (self.dir / "actor.py").chmod(0o755)
        (self.dir / "hook.py").write_text(
            "import json, time\n\n\ndef act(c):\n"
            + textwrap.indent(textwrap.dedent(hook).strip("\n"), "    ")
            + "\n"
        )
        self.home = root / "user-home"
        self.home.mkdir()
        (self.home / ".gitconfig").write_text(
            "[user]\n\tname = The User\n\temail = user@example.invalid\n"
            f"[core]\n\thooksPath = {self.home / 'hooks'}\n[commit]\n\tgpgsign = true\n"
            "[gpg]\n\tprogram = /nonexistent/gpg\n"
        )
        hooks = self.home / "hooks"
        hooks.mkdir()
        for name in (
            "pre-commit",
            "post-commit",
            "pre-push",
            "reference-transaction",
            "pre-receive",
            "post-checkout",
        ):
            (hooks / name).write_text(f"#!/bin/sh\necho {name} >> '{self.home / 'ran'}'\n")
            (hooks / name).chmod(0o755)
        self.src = self._source(files or {})

    @property
    def env(self) -> dict[str, str]:
        return {"HOME": str(self.home)}

    def git(self, *args: str, cwd: Path | None = None) -> str:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd or self.src,
            capture_output=True,
            text=True,
            env={**_plain_env(), **self.env},
            check=True,
        )
        return proc.stdout.strip()

    def _source(self, files: Mapping[str, str]) -> Path:
        src = self.root / "src"
        src.mkdir()
        for name, text in {"score.py": SCORE, "a.txt": "30\n", "b.txt": "30\n", **files}.items():
            (src / name).write_text(text)
        self.git("init", "-q", "-b", "trunk", cwd=src)
        self.git("add", "-A", cwd=src)
        self.git("-c", "commit.gpgsign=false", "commit", "-qm", "the user's code", cwd=src)
        (self.home / "ran").unlink(missing_ok=True)
        return src

    def config_digest(self) -> str:
        return hashlib.sha256((self.home / ".gitconfig").read_bytes()).hexdigest()

    def user_hooks_ran(self) -> list[str]:
        ran = self.home / "ran"
        return ran.read_text().split() if ran.exists() else []

    def args(self, turns: int, lanes: int = 2) -> list[str]:
        agents = [a for _ in range(1 + 2 * lanes) for a in ("-a", f"exec:{self.dir / 'actor.py'}")]
        params = (
            f"budget.turns={turns},lanes={lanes},rest_seconds=0.05,"
            "evaluator=python3 score.py,metric_pattern=SCORE: (\\d+)"
        )
        return [
            "exec",
            "-f",
            "parallel_flame_chase:git_pr",
            *agents,
            "-p",
            params,
            "lower the score",
        ]

    def run(
        self, turns: int, lanes: int = 2, timeout: float = 240
    ) -> subprocess.CompletedProcess[str]:
        return cli(*self.args(turns, lanes), cwd=self.src, timeout=timeout, env=self.env)

    def start(self, turns: int, lanes: int = 2) -> subprocess.Popen[str]:
        """The same run in the background (the test acts while it goes on); its output goes
        to `out.txt` and `err.txt` in the team's directory (no pipe to fill up)."""
        with open(self.dir / "out.txt", "w") as out, open(self.dir / "err.txt", "w") as err:
            return subprocess.Popen(
                [*FLAMECHASE, *self.args(turns, lanes)],
                cwd=self.src,
                env={**os.environ, **self.env},
                stdout=out,
                stderr=err,
                text=True,
                stdin=subprocess.DEVNULL,
            )

    def status(self) -> dict[str, Any]:
        return status(self.src)

    def events(self) -> list[dict[str, Any]]:
        return events(self.src)

    def log(self, lane: str) -> list[dict[str, Any]]:
        run_dir = Path(self.status()["lanes"][0]["workspace"]).parents[2]
        path = run_dir / "lanes" / lane / "actor-log.jsonl"
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]

    def prs(self) -> dict[str, dict[str, Any]]:
        return {p["id"]: p for p in self.status()["pull_requests"]}


def _plain_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
