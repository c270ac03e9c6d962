"""PUBLIC: how a flow ships a simulated actor for `sim/PROFILE` agents (`flamechase simulate`).

A flow's `simulator()` returns a `SimActor`, or None. For every turn a `sim/PROFILE` agent
takes, the `sim` backend decides what is generic (the profile's fate: crash, silence, an
invalid first result, a `blocked` report; the usage; the checkpoint; the repair; the cut)
and asks the actor for the work itself: `act(turn)` does the turn's work in
`turn.workspace` and returns its result, a JSON object the turn's `ResultSpec` accepts.
An actor that returns None (or a flow with no actor) leaves the turn to the backend's own
answer: for the built-in turn report a small, true piece of work (a line in NOTES.md and a
report saying so), for any other result schema a valid instance built from the schema.

Programs of the tree (its tests, a benchmark, git) run as the turn's own processes through
`turn.runner`: jailed as an agent's would be, recorded for the crash sweep, ended by a cut
(the runner then raises `Cut`; let it propagate). An actor never imports the engine or the
backends: everything it may use comes in `SimTurn`.

The actor object crosses to executors on other machines with the turn (as a `ResultSpec`'s
model does): keep it a plain, picklable object, importable from the flow's package or
defined in the flow's file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from flamechase.flow.commands import ResultSpec

__all__ = ["Check", "Cut", "Runner", "SimActor", "SimTurn"]


@dataclasses.dataclass(frozen=True, slots=True)
class Check:
    """One finished program: its exit code (None when it timed out) and its output (stdout
    and stderr merged)."""

    code: int | None
    output: str

    @property
    def ok(self) -> bool:
        return self.code == 0


class Cut(Exception):
    """The turn was cut (a budget's hard stop, the user): stop, and leave the tree as it was."""


class Runner(Protocol):
    """Runs programs as the turn's own processes, one at a time."""

    async def run(self, argv: Sequence[str], cwd: Path, *, timeout: float = 20.0) -> Check:
        """`argv` in `cwd`, in the turn's jail and environment; `Cut` once the turn is cut."""
        ...

    async def python(self, args: Sequence[str], cwd: Path, *, timeout: float = 20.0) -> Check:
        """This Python, without site-packages or bytecode (`-S -B`), on `args`."""
        ...


@dataclasses.dataclass(frozen=True, slots=True)
class SimTurn:
    """One turn as a simulated actor sees it.

    `lane`: None for a turn outside lanes. `number`: the turn's number (`StartTurn.number`).
    `seed`: the same for the same run, role, lane, number and attempt; draw every choice
    from it, so a run can be replayed. `env`: the variables an agent process of this turn
    gets (`FLAMECHASE_INBOX`, `FLAMECHASE_ARTIFACTS`, `FLAMECHASE_REQUESTS`, the turn's own
    `StartTurn.env`...). `result`: the schema the turn must end with. `blocked`: the
    `sim/blocked` profile asks this turn to stop on purpose (the backend answers that itself
    for lane turns ending with the turn report; other actors may honour it or not).
    """

    run_id: str
    flow: str
    role: str
    lane: str | None
    number: int
    attempt: int
    seed: int
    workspace: Path
    prompt: str
    env: Mapping[str, str]
    result: ResultSpec
    runner: Runner
    blocked: bool = False


class SimActor:
    """A flow's simulated agent. Subclass and override `act` (and `invalid` if you like)."""

    async def act(self, turn: SimTurn) -> dict[str, Any] | None:
        """Do the turn's work and return its result; None: let the backend answer."""
        return None

    def invalid(self, turn: SimTurn, good: Mapping[str, Any]) -> Any:
        """A wrong first result for `sim/flaky` (fixed when the engine asks for a repair);
        None: the backend breaks `good` against the schema itself."""
        return None
