"""Correctness of solver.count_primes (stdlib unittest: `python -m unittest`)."""

from __future__ import annotations

import unittest

from solver import count_primes  # type: ignore[import-not-found, unused-ignore]


def reference(n: int) -> int:
    """Primes below n, by the definition (slow, obviously right, small n only)."""
    return sum(1 for k in range(2, n) if all(k % d for d in range(2, k)))


class CountPrimesTest(unittest.TestCase):
    def test_small_values_match_the_definition(self) -> None:
        for n in range(60):
            with self.subTest(n=n):
                self.assertEqual(count_primes(n)[0], reference(n))

    def test_known_counts(self) -> None:
        for n, want in {100: 25, 541: 99, 542: 100, 1000: 168}.items():
            with self.subTest(n=n):
                self.assertEqual(count_primes(n)[0], want)

    def test_steps_is_a_non_negative_int(self) -> None:
        for n in (0, 1, 2, 3, 50):
            steps = count_primes(n)[1]
            self.assertIs(type(steps), int)
            self.assertGreaterEqual(steps, 0)


if __name__ == "__main__":
    unittest.main()
