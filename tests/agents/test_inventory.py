"""`flamechase agents` lists every supported CLI: its path when on PATH (else null), the version
it prints (null when it fails or hangs past the timeout), and its effort ladder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from flamechase.agents import inventory
from flamechase.cli.agents import command


def test_list_agents_finds_the_fakes(fake_bin: Path) -> None:
    agents = {a["cli"]: a for a in inventory.list_agents()}
    assert list(agents) == ["claude", "codex", "gemini", "opencode"]
    assert agents["claude"]["path"] == str(fake_bin / "claude")
    assert agents["claude"]["version"] == "2.1.300 (Claude Code)"
    assert agents["codex"]["version"] == "codex-cli 0.160.1"
    assert agents["gemini"]["efforts"] == []
    assert agents["codex"]["efforts"][0] == "ultra"


def test_missing_clis_are_listed_with_null_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    for entry in inventory.list_agents():
        assert entry["path"] is None
        assert entry["version"] is None


def test_a_failing_or_hanging_version_is_null(tmp_path: Path) -> None:
    failing = tmp_path / "failing"
    failing.write_text("#!/bin/sh\necho broken >&2\nexit 3\n")
    failing.chmod(0o755)
    hanging = tmp_path / "hanging"
    hanging.write_text("#!/bin/sh\nsleep 30\n")
    hanging.chmod(0o755)
    assert inventory.version_of(str(failing)) is None
    assert inventory.version_of(str(hanging), timeout=0.2) is None
    assert inventory.version_of(str(tmp_path / "absent")) is None


def test_agents_json_is_a_list_of_four_keys(fake_bin: Path) -> None:
    result = CliRunner().invoke(command, ["--json"])
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert [set(entry) for entry in data] == [{"cli", "path", "version", "efforts"}] * 4


def test_agents_table_shows_each_cli(fake_bin: Path) -> None:
    result = CliRunner().invoke(command, [])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].split() == ["CLI", "PATH", "VERSION", "EFFORTS"]
    assert any(line.startswith("claude") and "ultracode" in line for line in lines)
    assert any(line.startswith("gemini") and "(no effort setting)" in line for line in lines)
