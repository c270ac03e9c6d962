"""The programs a simulated turn runs (a tree's tests, its benchmark, git): real subprocesses.

They may run the tree's own code, so they run as an agent's processes do: through `procs`
(recorded with the engine before they run, so a crash's sweep finds them), in the turn's jail
and environment, one at a time, all ended by a cut. This is the `Runner` a flow's simulated
actor gets (`flamechase.flow.sim`). Imports nothing of any actor.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from flamechase import jail, procs
from flamechase.agents.backend import SpawnHook, TurnRequest
from flamechase.agents.turnio import agent_env
from flamechase.flow.sim import Check, Cut

__all__ = ["Checks"]


class Checks:
    """The programs of one turn: run one at a time, all ended by `cut`."""

    def __init__(self, request: TurnRequest, on_spawn: SpawnHook | None) -> None:
        self.request = request
        self.on_spawn = on_spawn
        self._procs: set[procs.Proc] = set()
        self._one_check = asyncio.Lock()
        self.was_cut = False

    async def python(self, args: Sequence[str], cwd: Path, *, timeout: float = 20.0) -> Check:
        # -S: skipping site start-up halves a short check's time; -B: no __pycache__ left in
        # the tree.
        return await self.run([sys.executable, "-S", "-B", *args], cwd, timeout=timeout)

    async def run(self, argv: Sequence[str], cwd: Path, *, timeout: float = 20.0) -> Check:
        """One program; `Cut` once the turn is cut."""
        # One at a time: the programs share the turn's process token, and ending one
        # (Proc.kill) ends every process carrying it, a concurrent one included.
        async with self._one_check:
            return await self._run_one(argv, cwd, timeout)

    async def _run_one(self, args: Sequence[str], cwd: Path, timeout: float) -> Check:
        if self.was_cut:
            raise Cut
        # The shell merges stderr into the output.
        argv = ["/bin/sh", "-c", 'exec "$@" 2>&1', "sh", *args]
        req = self.request
        proc = await procs.Proc.start(
            jail.wrap(argv, req.jail), cwd=cwd, env=self._env(), on_spawn=self.on_spawn
        )
        self._procs.add(proc)
        deadline = time.monotonic() + timeout
        lines: list[bytes] = []
        code: int | None
        try:
            while (line := await proc.next_line(deadline=deadline, silence=timeout)) is not None:
                lines.append(line)
            code = jail.decode_exit(
                await proc.wait_exit(deadline=deadline, silence=timeout), req.jail
            )
        except (procs.TurnTimeout, procs.SilenceTimeout):
            code = None
        finally:
            await proc.kill(grace=0)
            self._procs.discard(proc)
        if self.was_cut:
            raise Cut
        out = b"".join(ln if ln.endswith(b"\n") else ln + b"\n" for ln in lines)
        return Check(code=code, output=out.decode("utf-8", "replace"))

    def _env(self) -> dict[str, str]:
        env = agent_env(self.request)
        # PYTHONSAFEPATH would keep a script from importing the modules beside it.
        env.pop("PYTHONSAFEPATH", None)
        env["PYTHONHASHSEED"] = "0"
        if self.request.jail is not None:
            env["TMPDIR"] = str(self.request.jail.tmp)
        return env

    async def cut(self) -> None:
        self.was_cut = True
        await self.kill_all()

    async def kill_all(self) -> None:
        for proc in list(self._procs):
            with contextlib.suppress(Exception):
                await proc.kill(grace=0)
