"""The improvement ladder the simulated lane actor climbs on the bundled sample repository.

Owns the known versions of the sample's `solver.py`, from the naive one the sample ships with
(rung 0) to the best one the simulator knows, each a complete file whose measured STEPS
(`python bench.py`) is strictly lower than the rung before. Kept out of the sample itself so
the sample does not ship its own answers. Pure data and string matching: no I/O.
"""

from __future__ import annotations

import dataclasses
import re

# The shared head of every rung; rung 0 with it is byte-for-byte the sample's solver.py.
_HEAD = '''"""Count the primes below n, and the STEPS it took.

STEPS is the cost measure of this project, counted by the code itself so that it is the same
on every machine: one step per loop iteration that does work (each candidate considered, each
divisibility test, each sieve cell read or written, each table update).
"""

from __future__ import annotations
{imports}
APPROACH = "{approach}"


def count_primes(n: int) -> tuple[int, int]:
    """Return (how many primes p satisfy p < n, STEPS taken)."""
'''

_NAIVE = """\
    steps = 0
    count = 0
    for k in range(2, n):
        steps += 1  # consider candidate k
        prime = True
        for d in range(2, k):
            steps += 1  # one divisibility test
            if k % d == 0:
                prime = False
                break
        if prime:
            count += 1
    return count, steps
"""

_ODD_CANDIDATES = """\
    if n < 3:
        return 0, 0
    steps = 0
    count = 1  # 2 is the only even prime; test odd candidates by odd divisors only
    for k in range(3, n, 2):
        steps += 1  # consider candidate k
        prime = True
        for d in range(3, k, 2):
            steps += 1  # one divisibility test
            if k % d == 0:
                prime = False
                break
        if prime:
            count += 1
    return count, steps
"""

_SQRT_BOUND = """\
    if n < 3:
        return 0, 0
    steps = 0
    count = 1  # 2 is the only even prime; test odd candidates by odd divisors only
    for k in range(3, n, 2):
        steps += 1  # consider candidate k
        prime = True
        d = 3
        while d * d <= k:  # a composite k has a divisor no larger than its square root
            steps += 1  # one divisibility test
            if k % d == 0:
                prime = False
                break
            d += 2
        if prime:
            count += 1
    return count, steps
"""

_SIEVE = """\
    if n < 3:
        return 0, 0
    steps = 0
    count = 0
    composite = bytearray(n)
    for p in range(2, n):
        steps += 1  # read cell p
        if composite[p]:
            continue
        count += 1
        for m in range(p * p, n, p):  # smaller multiples were marked by smaller primes
            steps += 1  # write cell m
            composite[m] = 1
    return count, steps
"""

_ODD_SIEVE = """\
    if n < 3:
        return 0, 0
    steps = 0
    count = 1  # 2; the sieve below holds odd numbers only
    composite = bytearray(n)
    for p in range(3, n, 2):
        steps += 1  # read cell p
        if composite[p]:
            continue
        count += 1
        for m in range(p * p, n, 2 * p):  # odd multiples only: even ones are never read
            steps += 1  # write cell m
            composite[m] = 1
    return count, steps
"""

# Lucy Hedgehog's prime counting: counts without listing the primes, about n**0.75 updates.
_LUCY = """\
    top = n - 1
    if top < 2:
        return 0, 0
    root = isqrt(top)
    values = [top // i for i in range(1, root + 1)]
    values += list(range(values[-1] - 1, 0, -1))
    # left[v] = how many numbers in 2..v survive sieving by the primes handled so far
    left = {v: v - 1 for v in values}
    steps = len(values)  # one table write per value
    for p in range(2, root + 1):
        steps += 1  # read the table at p
        if left[p] == left[p - 1]:
            continue  # p is composite
        below = left[p - 1]
        square = p * p
        for v in values:
            if v < square:
                break
            steps += 1  # one table update
            left[v] -= left[v // p] - below
    return left[top], steps
"""


@dataclasses.dataclass(frozen=True, slots=True)
class Rung:
    """One known version of solver.py."""

    approach: str  # the APPROACH marker in the file
    change: str  # what this rung changes, in one line, for reports
    source: str  # the whole file


def _rung(approach: str, change: str, body: str, imports: str = "") -> Rung:
    head = _HEAD.format(approach=approach, imports=imports)
    return Rung(approach=approach, change=change, source=head + body)


RUNGS: tuple[Rung, ...] = (
    _rung("naive-trial-division", "test every divisor below each candidate", _NAIVE),
    _rung("odd-candidates", "skip even candidates and even divisors", _ODD_CANDIDATES),
    _rung("sqrt-bound", "stop trial division at the square root", _SQRT_BOUND),
    _rung("sieve", "sieve of Eratosthenes, marking from p*p", _SIEVE),
    _rung("odd-sieve", "sieve over odd numbers only", _ODD_SIEVE),
    _rung(
        "lucy-prime-count",
        "Lucy Hedgehog prime counting (about n**0.75 updates)",
        _LUCY,
        imports="\nfrom math import isqrt\n",
    ),
)
TOP = len(RUNGS) - 1

_APPROACH = re.compile(r'^APPROACH = "([^"\n]+)"\s*$', re.MULTILINE)


def approach_of(source: str) -> str | None:
    """The APPROACH marker of a solver.py text, if it has one."""
    found = _APPROACH.search(source)
    return found.group(1) if found else None


def rung_of(source: str) -> int | None:
    """Which rung a solver.py text is, by its APPROACH marker; None when it is none of ours."""
    approach = approach_of(source)
    for index, rung in enumerate(RUNGS):
        if rung.approach == approach:
            return index
    return None


def next_rung(current: int | None, stride: int) -> int | None:
    """The rung `stride` steps up from `current` (capped at the top); None at the top.

    An unknown solver (edited by someone else) gets the best rung we know: only a measured
    improvement is ever kept, so trying the top costs one measurement at worst.
    """
    if current is None:
        return TOP
    if current >= TOP:
        return None
    return min(current + max(stride, 1), TOP)


def stride(lane: str) -> int:
    """Rungs per turn: lane 1 climbs one at a time, lane k (k >= 2) leaps k rungs.

    The exploring lanes diverge from each other and get ahead of lane 1, so lane 1 has
    better packages to integrate, as the flow intends.
    """
    found = re.fullmatch(r"lane-(\d+)", lane)
    return max(int(found.group(1)), 1) if found and lane != "lane-1" else 1
