"""Which supported agent CLIs are installed here: path, version and effort ladder of each.

Owns `list_agents()`, the data behind `flamechase agents`. A version is what `<cli> --version`
prints first (20 s at most, run for all CLIs at once: gemini takes 3-5 s to start, more on a
busy machine); None when the CLI is missing, hangs or fails. `TESTED` is the range of versions
the end-to-end tests ran each CLI at (tests/realcli pins them); a version outside it is marked.
Must not change anything: it only looks.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import shutil
import subprocess
from typing import Any

from flamechase.agents.efforts import efforts_of

__all__ = ["CLIS", "TESTED", "list_agents", "tested", "version_of"]

# Named CLIs flamechase drives (ACP agents are any command, so they are not listed here).
CLIS = ("claude", "codex", "gemini", "opencode")
VERSION_TIMEOUT = 20.0
# Oldest and newest version of each CLI the real-CLI tests (pytest -m realcli) passed with;
# widen a bound only after running them at the new version (tests/realcli/package.json).
TESTED: dict[str, tuple[str, str]] = {
    "claude": ("2.1.332", "2.1.332"),
    "codex": ("0.171.0", "0.171.0"),
    "gemini": ("0.61.0", "0.61.0"),
    "opencode": ("1.18.33", "1.18.33"),
}
_NUMBER = re.compile(r"\d+(?:\.\d+)+")


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


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def tested(cli: str, version: str | None) -> bool | None:
    """Whether `version` (as `--version` printed it) is within TESTED; None when unknown."""
    bounds = TESTED.get(cli)
    found = _NUMBER.search(version or "")
    if bounds is None or found is None:
        return None
    low, high = bounds
    return _key(low) <= _key(found.group()) <= _key(high)


def list_agents() -> list[dict[str, Any]]:
    """One entry per supported CLI: {"cli", "path" (None if absent), "version", "tested"
    (whether the version is in the tested range; None when unknown), "tested_range",
    "efforts"}."""
    paths = {cli: shutil.which(cli) for cli in CLIS}
    versions: dict[str, str | None] = dict.fromkeys(CLIS)
    present = {cli: path for cli, path in paths.items() if path is not None}
    if present:
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(present)) as pool:
            futures = {cli: pool.submit(version_of, path) for cli, path in present.items()}
            for cli, future in futures.items():
                versions[cli] = future.result()
    return [
        {
            "cli": cli,
            "path": paths[cli],
            "version": versions[cli],
            "tested": tested(cli, versions[cli]),
            "tested_range": "-".join(TESTED[cli]),
            "efforts": efforts_of(cli),
        }
        for cli in CLIS
    ]
