"""Where flamechase keeps runs: $FLAMECHASE_HOME, else the platform's user state directory."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

HOME_VAR = "FLAMECHASE_HOME"


def state_home() -> Path:
    """The state home (not created here)."""
    explicit = os.environ.get(HOME_VAR)
    if explicit:
        return Path(explicit).expanduser().absolute()
    import platformdirs

    return Path(platformdirs.user_state_path("flamechase"))


def runs_dir(home: Path | None = None) -> Path:
    return (home or state_home()) / "runs"


def locks_dir(home: Path | None = None) -> Path:
    return (home or state_home()) / "locks"


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) mode 0700; tighten it if it already exists."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.stat().st_mode & 0o077:
        path.chmod(0o700)
    return path


@contextlib.contextmanager
def pointed_at(path: Path | None) -> Iterator[None]:
    """The state home is `path` for the duration (None: leave it as it is); restored after."""
    if path is None:
        yield
        return
    before = os.environ.get(HOME_VAR)
    os.environ[HOME_VAR] = str(path)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(HOME_VAR, None)
        else:
            os.environ[HOME_VAR] = before
