"""Fixtures for the real-CLI tests: the scripted server, a private HOME, flamechase runs."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.realcli.clis import realcli_env
from tests.realcli.server import ModelServer


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as s:
        yield s
        # A CLI that tried to leave loopback (through the proxy the server also is) is a bug
        # in our configuration of it: every test checks.
        assert s.outbound() == [], f"a CLI tried to reach the internet: {s.outbound()}"


@pytest.fixture
def env(tmp_path: Path, server: ModelServer) -> dict[str, str]:
    return realcli_env(tmp_path / "home", server.url)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("sample\n")
    (ws / "TASK.md").write_text("add a line to NOTES.md\n")
    return ws


class Flamechase:
    """`flamechase` as a user runs it, in the workspace, with the real-CLI environment."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.env = env
        self.cwd = cwd

    def __call__(
        self, *args: str, timeout: float = 240, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "flamechase", *args],
            cwd=self.cwd,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def status(self) -> dict[str, Any]:
        done = self("status", "last", "--json")
        assert done.returncode == 0, done.stderr
        data: dict[str, Any] = json.loads(done.stdout)
        return data

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        done = self("events", "last", "--json")
        assert done.returncode == 0, done.stderr
        out = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        return [e for e in out if kind is None or e["kind"] == kind]


@pytest.fixture
def flamechase(env: dict[str, str], workspace: Path) -> Flamechase:
    return Flamechase(env, workspace)
