"""Ending what a crashed engine left running, before a resumed run starts anything.

A process group id recorded by a dead engine may since have been reused by an unrelated
program, so a group is signalled only when one of its members still carries the turn's
token in its environment; stray token carriers (daemons that left the group) are ended too.
One pass over /proc serves every recorded token.
"""

from __future__ import annotations

from flamechase import procs


def sweep_leftovers(groups: list[tuple[int | None, str]]) -> int:
    """SIGKILL every leftover process of `groups` ((pgid, token)); how many were found."""
    if not groups:
        return 0
    carriers = procs.find_carriers({token for _, token in groups})
    found = 0
    for pgid, token in groups:
        if token in carriers:
            found += len(carriers[token])
            procs.end_group_now(pgid, token)
    return found
