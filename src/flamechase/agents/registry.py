"""Which backend runs which agent spec. Adding a CLI = one row in BACKENDS."""

from __future__ import annotations

import contextlib
import importlib
import os
from pathlib import Path

from flamechase.agents.backend import Backend
from flamechase.agents.spec import AgentSpec
from flamechase.errors import SpecError

# cli name -> "module:factory"; the factory takes the AgentSpec and returns a Backend.
# Imported lazily so `flamechase --help` and runs that use one CLI load nothing else.
BACKENDS: dict[str, str] = {
    "exec": "flamechase.agents.exec_backend:ExecBackend",
    "sim": "flamechase.agents.sim:SimBackend",
    "claude": "flamechase.agents.claude:ClaudeBackend",
    "codex": "flamechase.agents.codex:CodexBackend",
    "gemini": "flamechase.agents.gemini:GeminiBackend",
    "opencode": "flamechase.agents.opencode:OpencodeBackend",
    "acp": "flamechase.agents.acp:AcpBackend",
}


def known_clis() -> list[str]:
    return sorted(BACKENDS)


def backend_for(spec: AgentSpec) -> Backend:
    """The backend for `spec`; SpecError for an unknown CLI."""
    target = BACKENDS.get(spec.cli)
    if target is None:
        raise SpecError(
            f"agent spec {spec.text!r}: unknown CLI {spec.cli!r}; expected one of "
            f"{', '.join(known_clis())} (or exec:PATH, acp:COMMAND)"
        )
    module_name, _, attr = target.partition(":")
    factory = getattr(importlib.import_module(module_name), attr)
    backend: Backend = factory(spec)
    return backend


# Where each CLI keeps its own state (sessions, auth refresh, caches): a sandboxed lane's
# agent may write these, and nothing else outside its own directory.
STATE_PATHS: dict[str, tuple[str, ...]] = {
    "claude": ("~/.claude", "~/.claude.json", "~/.config/claude", "~/.cache/claude-cli-nodejs"),
    "codex": ("~/.codex",),
    "gemini": ("~/.gemini",),
    "opencode": (
        "~/.local/share/opencode",
        "~/.config/opencode",
        "~/.cache/opencode",
        "~/.local/state/opencode",
    ),
}


# Environment variables that move a CLI's state elsewhere; honoured when set.
STATE_ENV: dict[str, tuple[str, ...]] = {
    "claude": ("CLAUDE_CONFIG_DIR",),
    "codex": ("CODEX_HOME",),
    "gemini": ("GEMINI_CLI_HOME",),
}


def state_paths(cli: str) -> list[Path]:
    """The CLI's state paths, its directories created (0700) when they do not exist yet.

    A confined lane can only be granted what exists, and a CLI on a fresh home makes these
    on its first run: without them it fails every confined turn (`mkdir ... EACCES`).
    """
    paths = [Path(p).expanduser() for p in STATE_PATHS.get(cli, ())]
    paths += [Path(os.environ[v]) for v in STATE_ENV.get(cli, ()) if os.environ.get(v)]
    for path in paths:
        if path.suffix != ".json":
            with contextlib.suppress(OSError):  # a read-only home: the grant is dropped
                path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return paths
