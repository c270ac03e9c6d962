"""Crash-test hooks: `FLAMECHASE_FAULT=label:N` SIGKILLs this process the Nth time `label`
is reached (`any` matches every label).

For crash tests only, through the real CLI: SIGKILL, so nothing gets to clean up, exactly as
when the machine or an impatient user kills the process there. Unset, a hook is None and
costs nothing.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

__all__ = ["Hook", "env_hook"]

VAR = "FLAMECHASE_FAULT"

Hook = Callable[[str], None]


def env_hook() -> Hook | None:
    """The hook `FLAMECHASE_FAULT` asks for, or None."""
    spec = os.environ.get(VAR)
    if not spec:
        return None
    label, _, nth = spec.partition(":")
    target = int(nth or "1")
    seen = {"n": 0}

    def hook(at: str) -> None:
        if label in (at, "any"):
            seen["n"] += 1
            if seen["n"] == target:
                os.kill(os.getpid(), signal.SIGKILL)

    return hook
