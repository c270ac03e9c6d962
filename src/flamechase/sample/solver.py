"""Count the primes below n, and the STEPS it took.

STEPS is the cost measure of this project, counted by the code itself so that it is the same
on every machine: one step per loop iteration that does work (each candidate considered, each
divisibility test, each sieve cell read or written, each table update).
"""

from __future__ import annotations

APPROACH = "naive-trial-division"


def count_primes(n: int) -> tuple[int, int]:
    """Return (how many primes p satisfy p < n, STEPS taken)."""
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
