"""The sample's checks a simulated turn runs: its tests and its bench, as real subprocesses.

They run the tree's own code, so they run as an agent's processes do: through `procs`
(recorded with the engine before they run, so a crash's sweep finds them) and in the turn's
jail, one at a time. Imports nothing of the simulated actor itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from flamechase import jail, procs
from flamechase.agents.backend import SpawnHook, TurnRequest

__all__ = ["Attempt", "Bench", "Check", "Checks", "CutError", "tests_line"]

# The sample's bench takes well under a second; anything near this is a hung solver.
_CHECK_TIMEOUT = 20.0
_STEPS_LINE = re.compile(r"^STEPS: (\d+)\s*$", re.MULTILINE)
_RAN_LINE = re.compile(r"^Ran (\d+) tests?", re.MULTILINE)


@dataclasses.dataclass(frozen=True, slots=True)
class Check:
    """One finished subprocess: exit code (None on timeout) and its merged output."""

    code: int | None
    output: str

    @property
    def ok(self) -> bool:
        return self.code == 0


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
            return f"{label}: timed out after {_CHECK_TIMEOUT:.0f} s"
        if self.steps is not None:
            return f"{label}: STEPS: {self.steps} (exit 0)"
        return f"{label}: no STEPS (exit {self.check.code}): {_tail(self.check.output)}"


def tests_line(check: Check) -> str:
    ran = _RAN_LINE.search(check.output)
    count = f"{ran.group(1)} tests" if ran else "no test count"
    if check.code is None:
        return f"python -m unittest -q: timed out after {_CHECK_TIMEOUT:.0f} s"
    if check.ok:
        return f"python -m unittest -q: OK ({count})"
    return f"python -m unittest -q: FAILED, exit {check.code} ({count}): {_tail(check.output)}"


def _tail(text: str, limit: int = 300) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-3:])[-limit:] or "no output"


@dataclasses.dataclass(frozen=True, slots=True)
class Attempt:
    """A change tried in the tree: kept only when tests pass and STEPS went down."""

    kept: bool
    tests: Check
    bench: Bench


class CutError(Exception):
    """cut() was called: stop the turn, leave the tree as it was."""


class Checks:
    """The checks of one turn: run one at a time, all ended by `cut`."""

    def __init__(self, request: TurnRequest, on_spawn: SpawnHook | None) -> None:
        self.request = request
        self.on_spawn = on_spawn
        self._procs: set[procs.Proc] = set()
        self._one_check = asyncio.Lock()
        self.was_cut = False

    async def bench(self, cwd: Path) -> Bench:
        return Bench(await self.run(["bench.py"], cwd))

    async def run(self, args: Sequence[str], cwd: Path) -> Check:
        """One check of the tree (its tests, its bench); CutError once the turn is cut."""
        # One check at a time: the checks share the turn's process token, and ending one
        # (Proc.kill) ends every process carrying it, a concurrent check included.
        async with self._one_check:
            return await self._run_one(args, cwd)

    async def _run_one(self, args: Sequence[str], cwd: Path) -> Check:
        if self.was_cut:
            raise CutError
        # -S: the sample is stdlib-only, and skipping site start-up halves each check's time;
        # -B: no __pycache__ left in the user's tree. The shell merges stderr into the output.
        argv = ["/bin/sh", "-c", 'exec "$@" 2>&1', "sh", sys.executable, "-S", "-B", *args]
        req = self.request
        proc = await procs.Proc.start(
            jail.wrap(argv, req.jail), cwd=cwd, env=self._env(), on_spawn=self.on_spawn
        )
        self._procs.add(proc)
        deadline = time.monotonic() + _CHECK_TIMEOUT
        lines: list[bytes] = []
        code: int | None
        try:
            while (
                line := await proc.next_line(deadline=deadline, silence=_CHECK_TIMEOUT)
            ) is not None:
                lines.append(line)
            code = jail.decode_exit(
                await proc.wait_exit(deadline=deadline, silence=_CHECK_TIMEOUT), req.jail
            )
        except (procs.TurnTimeout, procs.SilenceTimeout):
            code = None
        finally:
            await proc.kill(grace=0)
            self._procs.discard(proc)
        if self.was_cut:
            raise CutError
        out = b"".join(ln if ln.endswith(b"\n") else ln + b"\n" for ln in lines)
        return Check(code=code, output=out.decode("utf-8", "replace"))

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        # PYTHONSAFEPATH would keep bench.py from importing solver.py next to it.
        env.pop("PYTHONSAFEPATH", None)
        env["PYTHONHASHSEED"] = "0"
        if self.request.jail is not None:
            env["TMPDIR"] = str(self.request.jail.tmp)
        env.update(self.request.env)
        return env

    async def cut(self) -> None:
        self.was_cut = True
        await self.kill_all()

    async def kill_all(self) -> None:
        for proc in list(self._procs):
            with contextlib.suppress(Exception):
                await proc.kill(grace=0)
