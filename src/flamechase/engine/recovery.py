"""Ending what a crashed engine left running, before a resumed run starts anything.

A process group id recorded by a dead engine may since have been reused by an unrelated
program, so a group is signalled only when one of its members still carries the turn's
token in its environment; stray token carriers (daemons that left the group) are ended too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

from flamechase import procs


def sweep_leftovers(groups: list[tuple[int, str]]) -> int:
    """SIGKILL every leftover process of `groups` ((pgid, token)); how many were found."""
    found = 0
    for pgid, token in groups:
        for _ in range(5):
            carriers = procs.live_members(None, token)
            members = procs.live_members(pgid, token) if carriers else []
            if not carriers and not members:
                break
            found += len(set(carriers) | set(members))
            if carriers:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
            for pid in set(carriers) | set(members):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
    return found
