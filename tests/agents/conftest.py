"""Fixtures for agent backend tests: fake CLIs first on PATH, turn requests, spawn records."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from flamechase.agents.backend import TurnRequest
from tests.agents.fakes import install_fakes, path_with
from tests.agents.helpers import NoSleep, Spawns


@pytest.fixture
def fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The fake CLIs first on PATH, with private state; no FAKE_* settings leak in."""
    for key in list(os.environ):
        if key.startswith("FAKE_") or key in ("FLAMECHASE_PRICES", "FLAMECHASE_RETRY_DELAYS"):
            monkeypatch.delenv(key)
    bin_dir = install_fakes(tmp_path / "bin")
    monkeypatch.setenv("PATH", path_with(bin_dir))
    monkeypatch.setenv("FAKE_STATE_DIR", str(tmp_path / "fake-state"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    yield bin_dir


@pytest.fixture
def cli_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[str], list[dict[str, Any]]]:
    """Turn on the fakes' logs; call with a CLI name to read what that fake saw."""
    paths = {}
    for cli in ("claude", "codex", "gemini", "opencode", "acp"):
        paths[cli] = tmp_path / f"{cli}.log"
        monkeypatch.setenv(f"FAKE_{cli.upper()}_LOG", str(paths[cli]))

    def read(cli: str) -> list[dict[str, Any]]:
        path = paths[cli]
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    return read


@pytest.fixture
def request_for(tmp_path: Path) -> Callable[..., TurnRequest]:
    """A TurnRequest factory with short timeouts; keyword arguments override fields."""

    def make(**overrides: Any) -> TurnRequest:
        workspace = tmp_path / "ws"
        workspace.mkdir(exist_ok=True)
        io_dir = overrides.pop("io_dir", tmp_path / "run" / "turns" / "lane-1-1")
        io_dir.mkdir(parents=True, exist_ok=True)
        fields: dict[str, Any] = {
            "run_id": "run-test",
            "run_dir": tmp_path / "run",
            "flow": "flame_chase",
            "role": "first_chaser",
            "lane": "lane-1",
            "turn": 1,
            "attempt": 1,
            "workspace": workspace,
            "io_dir": io_dir,
            "prompt": "Do the task. Write your report to the file named in $FLAMECHASE_REPORT.",
            "turn_timeout": 20.0,
            "silence_timeout": 10.0,
        }
        fields.update(overrides)
        return TurnRequest(**fields)

    return make


@pytest.fixture
def spawns() -> Spawns:
    return Spawns()


@pytest.fixture
def no_sleep() -> NoSleep:
    return NoSleep()
