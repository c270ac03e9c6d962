"""Time, as the engine sees it: a wall clock for records, a monotonic one for budgets, and a
way to sleep until something happens. Tests pass a `testing.FakeClock`, which jumps to the next
thing due instead of sleeping, so a twelve-hour budget runs in milliseconds."""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def time(self) -> float:
        """Seconds since the epoch (wall time, for records and for flows' `decide`)."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin; never goes back (budgets, rests, deadlines)."""
        ...

    async def wait(self, wake: asyncio.Event, timeout: float) -> None:
        """Return when `wake` is set or `timeout` seconds have passed, whichever is first."""
        ...


class RealClock:
    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def wait(self, wake: asyncio.Event, timeout: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), timeout=max(0.0, timeout))


def iso(seconds: float) -> str:
    """An event time: ISO 8601, UTC, milliseconds, `Z`."""
    return (
        datetime.fromtimestamp(seconds, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )
