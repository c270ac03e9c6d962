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
    keys = {"cli", "path", "version", "tested", "tested_range", "efforts"}
    assert [set(entry) for entry in data] == [keys] * 4


def test_agents_table_shows_each_cli(fake_bin: Path) -> None:
    result = CliRunner().invoke(command, [])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].split() == ["CLI", "PATH", "VERSION", "EFFORTS"]
    assert any(line.startswith("claude") and "ultracode" in line for line in lines)
    assert any(line.startswith("gemini") and "(no effort setting)" in line for line in lines)


def test_a_version_outside_the_tested_range_is_marked(fake_bin: Path) -> None:
    # The fakes print versions nobody ran the real-CLI tests at.
    agents = {a["cli"]: a for a in inventory.list_agents()}
    assert agents["claude"]["tested"] is False
    result = CliRunner().invoke(command, [])
    [claude] = [line for line in result.output.splitlines() if line.startswith("claude")]
    assert "2.1.300 (Claude Code) (untested: tested 2.1.332-2.1.332)" in claude


@pytest.mark.parametrize(
    ("cli", "version", "expected"),
    [
        ("claude", "2.1.332 (Claude Code)", True),
        ("codex", "codex-cli 0.171.0", True),
        ("codex", "codex-cli 0.99.0", False),
        ("gemini", "0.61.0", True),
        ("opencode", "1.18.34", False),
        ("gemini", None, None),
        ("gemini", "weird", None),
    ],
)
def test_tested_reads_the_number_each_cli_prints(
    cli: str, version: str | None, expected: bool | None
) -> None:
    assert inventory.tested(cli, version) is expected


def test_the_tested_range_covers_the_pinned_clis() -> None:
    pins = json.loads((Path(__file__).parents[1] / "realcli" / "package.json").read_text())
    packages = {
        "claude": "@anthropic-ai/claude-code",
        "codex": "@openai/codex",
        "gemini": "@google/gemini-cli",
        "opencode": "opencode-ai",
    }
    for cli, package in packages.items():
        assert inventory.tested(cli, pins["dependencies"][package]), cli
