"""Benchmark: count the primes below fixed inputs, check every answer, print total STEPS.

Prints `STEPS: <int>` and exits 0 only when every answer is right. A wrong answer prints what
went wrong on stderr and exits 1 without a STEPS line, so a wrong solver can never be ranked.
"""

from __future__ import annotations

import sys

sys.dont_write_bytecode = True  # keep the project tree free of __pycache__

# After the bytecode switch on purpose. The ignore is for flamechase's own type check,
# which sees this file as package data with no `solver` module beside it.
from solver import count_primes  # type: ignore[import-not-found, unused-ignore]  # noqa: E402

# n -> the number of primes below n (known values).
EXPECTED = {10: 4, 100: 25, 1000: 168, 2000: 303}


def main() -> int:
    total = 0
    for n, want in EXPECTED.items():
        got, steps = count_primes(n)
        if got != want:
            print(f"WRONG: count_primes({n}) = {got}, expected {want}", file=sys.stderr)
            return 1
        if type(steps) is not int or steps < 0:
            print(f"WRONG: count_primes({n}) reported steps={steps!r}", file=sys.stderr)
            return 1
        print(f"n={n} primes={got} steps={steps}")
        total += steps
    print(f"STEPS: {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
