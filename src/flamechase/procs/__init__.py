"""Agent processes: the spawner (`spawn`: own group, streamed output, timeouts, an end that
leaves nothing behind), the reaper (`reap`: finding processes by token, now or in a
batched background sweep) and the sockets they listen on (`sockets`). Output is streamed,
never slurped; the exit of a process is observed directly, not through its pipes. Imports
nothing else of flamechase.
"""

from flamechase.procs.reap import (
    KILL_GRACE,
    SWEEP_PERIOD,
    TOKEN_VAR,
    Reaper,
    boot_ticks,
    end_group,
    end_group_now,
    find_carriers,
    live_members,
    members,
)
from flamechase.procs.spawn import (
    MAX_LINE,
    STDERR_TAIL,
    Proc,
    SilenceTimeout,
    TurnTimeout,
)

__all__ = [
    "KILL_GRACE",
    "MAX_LINE",
    "STDERR_TAIL",
    "SWEEP_PERIOD",
    "TOKEN_VAR",
    "Proc",
    "Reaper",
    "SilenceTimeout",
    "TurnTimeout",
    "boot_ticks",
    "end_group",
    "end_group_now",
    "find_carriers",
    "live_members",
    "members",
]
