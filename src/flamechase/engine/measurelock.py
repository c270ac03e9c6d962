"""The runtime's hold on a run's measurement lock (`flamechase lock`), ahead of every agent.

An exclusive `Run` (a performance gate) must measure alone, and must never fail because an
agent sits on the lock. So the runtime does not queue behind agents: it claims the lock
(`tools.locks.claim`, a file only the runtime can write), which ends agents' holds and keeps
new ones waiting, then waits at most `grace` seconds for the flock to come free and runs the
program either way. A holder that ignores the claim (a process holding the flock itself)
delays the gate by the grace at most; the receipt says whether the lock was had. Exclusive
programs run one at a time, in the order they asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from flamechase.tools import locks

__all__ = ["GRACE", "MeasurementLock"]

GRACE = 30.0  # seconds an agent's hold may outlive the runtime's claim: cooperating holders
# let go within a fraction of a second


class MeasurementLock:
    def __init__(self, grace: float = GRACE) -> None:
        self.grace = grace
        self._queue = asyncio.Lock()

    @contextlib.asynccontextmanager
    async def hold(self, target: Path, who: str) -> AsyncIterator[dict[str, Any]]:
        """Hold `target`'s lock as `who` for the body; yields what the receipt keeps: whether
        the flock was had, how long it took, and who held it when the runtime asked."""
        async with self._queue:
            t0 = time.monotonic()
            env = {"FLAMECHASE_RUN_DIR": str(target)}
            found = locks.status(target, env, mine=False)["holders"]
            locks.claim(target, who)
            fd = None
            try:
                while (fd := locks.try_take(target)) is None:
                    if time.monotonic() - t0 >= self.grace:
                        break
                    await asyncio.sleep(locks.POLL)
                yield {
                    "had": fd is not None,
                    "waited": round(time.monotonic() - t0, 3),
                    "held_by": [str(h.get("who"))[:100] for h in found],
                }
            finally:
                if fd is not None:
                    os.close(fd)
                locks.unclaim(target)
