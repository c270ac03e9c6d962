"""Effort ladders per CLI, install hints, and the checks every backend runs before a run.

Owns what `CLI/MODEL:EFFORT` may say after the colon for each supported CLI, how the effort
reaches the CLI (documented per backend), and the one-line refusals for an unknown effort or a
CLI missing from PATH (an unknown `@ACCOUNT` is refused by agents/accounts.py).
Omitting the effort, or writing `:auto`, sends none. Must not start processes.
"""

from __future__ import annotations

import shutil
from typing import Protocol

from flamechase.errors import BackendUnavailable

__all__ = ["INSTALL_HINTS", "LADDERS", "SpecLike", "check_effort", "check_installed", "efforts_of"]


class SpecLike(Protocol):
    """The fields of `agents.spec.AgentSpec` the backends read."""

    @property
    def text(self) -> str: ...
    @property
    def cli(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def provider(self) -> str | None: ...
    @property
    def effort(self) -> str | None: ...
    @property
    def path(self) -> str | None: ...


# Highest first. claude and codex: the published runtime's ladders (passed verbatim as
# `--effort` / turn/start `effort`). opencode: `run --variant`, which its docs describe as a
# provider-specific reasoning effort ("high, max, minimal"). gemini and ACP agents have no
# effort setting on the command line or the protocol, so any effort is refused.
LADDERS: dict[str, tuple[str, ...]] = {
    "claude": ("ultracode", "max", "xhigh", "high", "medium", "low"),
    "codex": ("ultra", "max", "xhigh", "high", "medium", "low"),
    "gemini": (),
    "opencode": ("max", "xhigh", "high", "medium", "low", "minimal"),
    "acp": (),
}

INSTALL_HINTS: dict[str, str] = {
    "claude": "npm install -g @anthropic-ai/claude-code",
    "codex": "npm install -g @openai/codex",
    "gemini": "npm install -g @google/gemini-cli",
    "opencode": "npm install -g opencode-ai",
}


def efforts_of(cli: str) -> list[str]:
    return list(LADDERS.get(cli, ()))


def check_effort(spec: SpecLike) -> None:
    """BackendUnavailable when `spec.effort` is not on its CLI's ladder (None is always fine)."""
    effort = spec.effort
    if effort is None or effort == "auto":
        return
    ladder = LADDERS.get(spec.cli, ())
    if effort in ladder:
        return
    if not ladder:
        raise BackendUnavailable(
            f"{spec.cli} cannot take effort {effort!r}; it has no effort setting, so drop "
            f"':{effort}' from {spec.text!r}"
        )
    raise BackendUnavailable(
        f"{spec.cli} cannot take effort {effort!r}; expected one of {', '.join(ladder)}"
    )


def check_installed(cli: str, program: str | None = None) -> str:
    """The path of `program` (default: `cli`) on PATH, or BackendUnavailable with the hint."""
    name = program or cli
    path = shutil.which(name)
    if path is None:
        hint = INSTALL_HINTS.get(cli)
        raise BackendUnavailable(
            f"{name} is not installed: {hint}" if hint else f"{name} is not found on PATH"
        )
    return path
