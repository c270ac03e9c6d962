"""Shared fixtures: every test gets its own state home; nothing touches the real one."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "fc-home"
    monkeypatch.setenv("FLAMECHASE_HOME", str(home))
    yield home


@pytest.fixture
def source_tree(tmp_path: Path) -> Path:
    """A small user repository to run flows on."""
    src = tmp_path / "src-tree"
    src.mkdir()
    (src / "README.md").write_text("sample\n")
    (src / "TASK.md").write_text("make it better\n")
    os.makedirs(src / "pkg")
    (src / "pkg" / "mod.py").write_text("X = 1\n")
    return src
