"""The sample's checks as a simulated turn reads them: its tests' verdict and its bench's STEPS.

The programs themselves run through the turn's runner (`flamechase.flow.sim.Runner`); this
module only reads what they printed.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from flamechase.flow.sim import Check, Runner

__all__ = ["Attempt", "Bench", "bench", "tests", "tests_line"]

# The sample's bench takes well under a second; anything near this is a hung solver.
TIMEOUT = 20.0
_STEPS_LINE = re.compile(r"^STEPS: (\d+)\s*$", re.MULTILINE)
_RAN_LINE = re.compile(r"^Ran (\d+) tests?", re.MULTILINE)


@dataclasses.dataclass(frozen=True, slots=True)
class Bench:
    check: Check

    @property
    def steps(self) -> int | None:
        """The measured STEPS: only from a run that exited 0 and printed exactly one line."""
        if not self.check.ok:
            return None
        found = _STEPS_LINE.findall(self.check.output)
        return int(found[0]) if len(found) == 1 else None

    def line(self, label: str = "python bench.py") -> str:
        if self.check.code is None:
            return f"{label}: timed out after {TIMEOUT:.0f} s"
        if self.steps is not None:
            return f"{label}: STEPS: {self.steps} (exit 0)"
        return f"{label}: no STEPS (exit {self.check.code}): {_tail(self.check.output)}"


@dataclasses.dataclass(frozen=True, slots=True)
class Attempt:
    """A change tried in the tree: kept only when tests pass and STEPS went down."""

    kept: bool
    tests: Check
    bench: Bench


async def bench(runner: Runner, cwd: Path) -> Bench:
    return Bench(await runner.python(["bench.py"], cwd, timeout=TIMEOUT))


async def tests(runner: Runner, cwd: Path) -> Check:
    return await runner.python(["-m", "unittest", "-q"], cwd, timeout=TIMEOUT)


def tests_line(check: Check) -> str:
    ran = _RAN_LINE.search(check.output)
    count = f"{ran.group(1)} tests" if ran else "no test count"
    if check.code is None:
        return f"python -m unittest -q: timed out after {TIMEOUT:.0f} s"
    if check.ok:
        return f"python -m unittest -q: OK ({count})"
    return f"python -m unittest -q: FAILED, exit {check.code} ({count}): {_tail(check.output)}"


def _tail(text: str, limit: int = 300) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-3:])[-limit:] or "no output"
