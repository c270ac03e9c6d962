"""Which supported agent CLIs are installed here: path, version and effort ladder of each.

Owns `list_agents()`, the data behind `flamechase agents`. A version is what `<cli> --version`
prints first (5 s at most, run for all CLIs at once); None when the CLI is missing, hangs or
fails. Must not change anything: it only looks.
"""

from __future__ import annotations

import concurrent.futures
import os
import shutil
import subprocess
from typing import Any

from flamechase.agents.efforts import efforts_of

__all__ = ["CLIS", "list_agents", "version_of"]

# Named CLIs flamechase drives (ACP agents are any command, so they are not listed here).
CLIS = ("claude", "codex", "gemini", "opencode")
VERSION_TIMEOUT = 5.0


def version_of(path: str, timeout: float = VERSION_TIMEOUT) -> str | None:
    """The first non-empty line `path --version` prints, or None."""
    try:
        done = subprocess.run(
            [path, "--version"],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
            # Its own session, so a CLI that spawns helpers cannot tie up our terminal.
            start_new_session=True,
            env={**os.environ, "NO_COLOR": "1"},
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if done.returncode != 0:
        return None
    for raw in (done.stdout + b"\n" + done.stderr).splitlines():
        line = raw.decode("utf-8", "replace").strip()
        if line:
            return line[:200]
    return None


def list_agents() -> list[dict[str, Any]]:
    """One entry per supported CLI: {"cli", "path" (None if absent), "version", "efforts"}."""
    paths = {cli: shutil.which(cli) for cli in CLIS}
    versions: dict[str, str | None] = dict.fromkeys(CLIS)
    present = {cli: path for cli, path in paths.items() if path is not None}
    if present:
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(present)) as pool:
            futures = {cli: pool.submit(version_of, path) for cli, path in present.items()}
            for cli, future in futures.items():
                versions[cli] = future.result()
    return [
        {"cli": cli, "path": paths[cli], "version": versions[cli], "efforts": efforts_of(cli)}
        for cli in CLIS
    ]
