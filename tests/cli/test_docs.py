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


def test_the_readme_says_what_a_new_user_would_otherwise_get_wrong() -> None:
    text = README.read_text()
    # `@` names a saved account of the CLI, not a provider.
    assert "CLI[@ACCOUNT]/MODEL[:EFFORT]" in text and "@PROVIDER" not in text
    # The profile example is whole: no line of it is left as a literal `...`.
    start = text.index("flamechase profile set parallel_flame_chase")
    example = text[start : text.index("```", start)]
    assert not any(line.rstrip().endswith("...") for line in example.splitlines()), example
    # The suite's second command says how long it takes.
    assert "runs the test suite, in about 15 minutes" in text
