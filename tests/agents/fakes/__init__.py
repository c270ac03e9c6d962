"""Fake agent CLIs that speak the real CLIs' documented protocols, for tests without models.

`install_fakes(bin_dir)` writes `claude`, `codex`, `gemini`, `opencode` and `fake-acp`
launchers into `bin_dir`; put it first on PATH and every backend (and `flamechase exec`)
drives the fakes exactly as it would drive the real programs.

Behaviour is chosen through the environment, so end-to-end runs can select it too:

- `FAKE_<CLI>_SCENARIO` (CLI = CLAUDE, CODEX, GEMINI, OPENCODE, ACP): a comma-separated list,
  one entry per ask of a session (the last entry repeats). Entries: `success` (default),
  `noreport`, `structured`, `limit`, `ratelimit`, `error`, `crash`, `exit1`, `hang`,
  `garbage`, `permission`, `sleep:<seconds>`, `replay:<file>` (a file in tests/agents/streams
  or an absolute path); claude also `limit_for:<seconds>` (a usage window that closes at the
  first ask meeting it and reopens that long after, kept in the fake's state per account).
  On a saved account NAME (`claude@NAME/...`), `FAKE_<CLI>_SCENARIO_<NAME>` wins when set.
- `FAKE_<CLI>_LOG`: a file the fake appends JSON lines to (`{"argv": ...}`, `{"stdin": ...}`).
- `FAKE_REPORT_JSON`: the report the fake writes to `$FLAMECHASE_REPORT` (default
  `{"status": "progress", "summary": "fake turn"}`); `FAKE_REPORT_<ROLE>` (say
  `FAKE_REPORT_COORDINATOR`, holding a plan) overrides it for one role.
- `FAKE_STATE_DIR`: where sessions live between runs (default: a per-user temp directory).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

FAKES_DIR = Path(__file__).resolve().parent
STREAMS_DIR = FAKES_DIR.parent / "streams"

LAUNCHERS = {
    "claude": "fake_claude.py",
    "codex": "fake_codex.py",
    "gemini": "fake_gemini.py",
    "opencode": "fake_opencode.py",
    "fake-acp": "fake_acp.py",
}


def install_fakes(bin_dir: Path) -> Path:
    """Write the launchers into `bin_dir` (created if needed) and return it."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, script in LAUNCHERS.items():
        path = bin_dir / name
        path.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "{FAKES_DIR / script}" "$@"\n')
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return bin_dir


def path_with(bin_dir: Path) -> str:
    """PATH with `bin_dir` first."""
    return f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
