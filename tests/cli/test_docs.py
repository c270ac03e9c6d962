"""Every command has help text and is in the README's command list (docs kept honest)."""

from __future__ import annotations

from pathlib import Path

from flamechase.cli import _register, cli

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_command_has_help_and_is_documented() -> None:
    _register()
    text = README.read_text()
    for name, command in cli.commands.items():
        assert (command.help or "").strip(), f"{name} has no help text"
        assert f"flamechase {name}" in text, f"README does not mention `flamechase {name}`"
