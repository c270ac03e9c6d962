"""Every CLI test keeps its profiles in its own config directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "config"
    monkeypatch.setenv("FLAMECHASE_CONFIG", str(path))
    yield path
