"""What a simulated turn will be, decided before any work: its seed, its fate, its usage.

Everything is drawn from a seed made of run id, role, lane, turn and attempt, so a run can be
replayed exactly. Imports nothing of any flow's actor.
"""

from __future__ import annotations

import hashlib
import random
from typing import Literal

from flamechase.agents.backend import TurnRequest, Usage

__all__ = ["Fate", "fate_of", "seed_of", "usage_of"]

Fate = Literal["work", "crash", "invalid_first", "silent", "blocked"]

# Fake prices (USD per token) so budgets and views have figures to show.
_PRICE_INPUT = 3.0 / 1_000_000
_PRICE_OUTPUT = 15.0 / 1_000_000
_PRICE_CACHE_READ = 0.3 / 1_000_000


def seed_of(request: TurnRequest) -> int:
    """The turn's seed: the same run, role, lane, turn and attempt always give the same one."""
    key = "\0".join(
        [request.run_id, request.role, request.lane, str(request.turn), str(request.attempt)]
    )
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")


def fate_of(profile: str, request: TurnRequest) -> Fate:
    """What a turn of `profile` will do, decided before any work (tests use it too)."""
    if profile == "silent":
        return "silent"
    # Its own second turn where a lane alternates two agents: the first takes lane turns
    # 1, 3, 5... and the second 2, 4, 6..., so either one's second is lane turn 3 or 4.
    if profile == "blocked" and request.lane and (request.turn + 1) // 2 == 2:
        return "blocked"
    if profile == "flaky":
        # Independent of the bits the usage figures are drawn from (those use the whole seed).
        roll = (seed_of(request) >> 40) % 4
        if roll == 0:
            return "crash"
        if roll == 1:
            return "invalid_first"
    return "work"


def usage_of(seed: int, ask: int, *, repair: bool) -> Usage:
    rng = random.Random(f"{seed}/{ask}")
    if repair:
        input_tokens = 1_500 + rng.randrange(2_500)
        output_tokens = 150 + rng.randrange(450)
    else:
        input_tokens = 9_000 + rng.randrange(27_000)
        output_tokens = 700 + rng.randrange(3_300)
    cache_read = rng.randrange(input_tokens)
    cost = (
        input_tokens * _PRICE_INPUT + output_tokens * _PRICE_OUTPUT + cache_read * _PRICE_CACHE_READ
    )
    return Usage(
        cost_usd=round(cost, 6),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        self_reported=True,
    )
