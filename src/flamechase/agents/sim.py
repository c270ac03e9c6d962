"""The `sim/PROFILE` backend: a built-in, deterministic, offline simulated agent for any flow.

It runs in-process (no agent program, no network, no sleeping). What is generic lives here:
the profile's fate for each turn, its usage, the repair, the checkpoint, the cut. The work of
a turn is the flow's own simulated actor's (`Flow.simulator`, `flamechase.flow.sim`), which
the engine hands over in `TurnRequest.actor`; the actor gets the turn's seed, workspace,
environment and result schema, and a runner for the programs it starts (`sim_checks`: the
turn's jail, recorded, cut). Without an actor, or when it leaves a turn to the backend, the
backend answers itself: for the turn report, a line in NOTES.md and a true report of it
(`sim_answers`); for any other result schema, a valid instance built from it (`sim_schema`).

Everything is decided by a seed made of run id, role, lane, turn and attempt, so a run can be
replayed exactly: the same seed and the same tree give the same result and the same usage.

Profiles:
  steady   always does the work, and writes a checkpoint before the result of a lane turn
  flaky    by seed: ~25% of turns crash (no result), ~25% first write an invalid result and
           fix it when asked to repair, the rest behave like steady (without a checkpoint)
  blocked  on its own second turn in a lane (lane turn 3 or 4), a turn ending with the turn
           report reports `blocked`; otherwise like steady
  silent   does nothing and writes no result (the engine's failure path)
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from flamechase.agents import sim_answers, sim_schema
from flamechase.agents.backend import Answer, Backend, Session, SpawnHook, TurnRequest
from flamechase.agents.sim_checks import Checks
from flamechase.agents.sim_fate import Fate, fate_of, seed_of, usage_of
from flamechase.agents.spec import AgentSpec
from flamechase.errors import BackendUnavailable
from flamechase.flow.commands import REPORT, ResultSpec
from flamechase.flow.sim import Cut, SimTurn
from flamechase.fsutil import atomic_write

__all__ = ["PROFILES", "SimBackend", "SimSession", "fate_of", "seed_of"]

PROFILES = ("blocked", "flaky", "silent", "steady")


class SimBackend(Backend):
    """`sim/PROFILE`: one deterministic simulated agent per session."""

    self_reported = True
    simulated = True

    def __init__(self, spec: AgentSpec) -> None:
        # `sim/PROFILE` parses to model=PROFILE.
        self.profile = spec.model
        self.spec_text = spec.text

    def check(self) -> None:
        if self.profile not in PROFILES:
            raise BackendUnavailable(
                f"agent spec {self.spec_text!r}: unknown sim profile {self.profile!r}; "
                f"expected one of {', '.join(PROFILES)} (e.g. sim/steady)"
            )

    def open(self, request: TurnRequest, on_spawn: SpawnHook) -> Session:
        # There is no agent process; the programs this session starts (the tree's own code)
        # are reported through on_spawn like an agent's, and killed by cut()/close().
        return SimSession(self.profile, request, on_spawn)

    def can_bound_cost(self) -> bool:
        return True


class SimSession(Session):
    """One simulated turn. A repair request rewrites the result of the work already done."""

    continues = True

    def __init__(
        self, profile: str, request: TurnRequest, on_spawn: SpawnHook | None = None
    ) -> None:
        self.profile = profile
        self.request = request
        self.seed = seed_of(request)
        self.fate: Fate = fate_of(profile, request) if profile in PROFILES else "work"
        self.spec: ResultSpec = request.result or REPORT
        self._asks = 0
        self._result: Any = None  # the correct result once the work is done
        self.checks = Checks(request, on_spawn)

    # long: the profiles' fates, the work once, then the result (or a wrong one) written.
    async def ask(self, prompt: str, *, repair: str | None = None) -> Answer:
        self._asks += 1
        usage = usage_of(self.seed, self._asks, repair=repair is not None)
        if self.profile not in PROFILES:
            return Answer(status="failed", error=f"sim: unknown profile {self.profile!r}")
        if self.checks.was_cut:
            return Answer(status="interrupted", usage=usage, error="sim: turn was cut")
        if self.fate == "crash":
            return Answer(
                status="failed", usage=usage, error="sim: simulated crash (exit 1)", exit_code=1
            )
        if self.fate == "silent":
            return Answer(status="finished", usage=usage, text="sim: (no result written)")
        try:
            if self._result is None:
                self._result = await self._work()
                if self.fate == "invalid_first" and repair is None:
                    wrong = self._invalid(self._result)
                    await asyncio.to_thread(_write_json, self.request.report_path, wrong)
                    return Answer(
                        status="finished", usage=usage, text=f"sim: {self.spec.noun} written"
                    )
            if self.profile == "steady" and self.request.lane:
                await asyncio.to_thread(self._write_checkpoint, self._result)
            await asyncio.to_thread(_write_json, self.request.report_path, self._result)
        except Cut:
            return Answer(status="interrupted", usage=usage, error="sim: turn was cut")
        except OSError as exc:
            return Answer(
                status="failed", usage=usage, error=f"sim: {exc.__class__.__name__}: {exc}"
            )
        return Answer(status="finished", usage=usage, text=f"sim: {self._said()}")

    async def cut(self) -> None:
        await self.checks.cut()

    async def close(self) -> None:
        await self.checks.kill_all()

    # ---- what a turn does ----

    def turn(self) -> SimTurn:
        """The turn as the flow's actor sees it."""
        req = self.request
        return SimTurn(
            run_id=req.run_id,
            flow=req.flow,
            role=req.role,
            lane=req.lane or None,
            number=req.turn,
            attempt=req.attempt,
            seed=self.seed,
            workspace=req.workspace,
            prompt=req.prompt,
            env=dict(req.env),
            result=self.spec,
            runner=self.checks,
            blocked=self.fate == "blocked",
        )

    async def _work(self) -> Any:
        report = self.spec.model is REPORT.model
        if self.fate == "blocked" and self.request.lane and report:
            return sim_answers.blocked(self.request)
        actor = self.request.actor
        if actor is not None:
            done = await actor.act(self.turn())
            if done is not None:
                return done
        if report:
            return await asyncio.to_thread(sim_answers.survey, self.request)
        label = f"sim {self.request.role} t{self.request.turn}"
        value, _ = sim_schema.instance(self.spec, self.seed, label)
        return value

    def _invalid(self, good: Any) -> Any:
        """A deterministic wrong result, of a kind the engine must send back for repair."""
        actor = self.request.actor
        wrong = actor.invalid(self.turn(), good) if actor is not None else None
        if wrong is None and isinstance(good, dict):
            wrong = sim_schema.broken(self.spec, good, self.seed)
        return [good] if wrong is None else wrong

    def _said(self) -> str:
        summary = self._result.get("summary") if isinstance(self._result, dict) else None
        if isinstance(summary, str) and summary.strip():
            return summary
        return f"{self.spec.noun} written"

    def _write_checkpoint(self, result: Any) -> None:
        path = self.request.env.get("FLAMECHASE_CHECKPOINT")
        if not path:
            return
        req = self.request
        identity = {
            "run_id": req.run_id,
            "lane": req.lane,
            "turn": req.turn,
            "attempt": req.attempt,
            "phase": "terminal",
        }
        _write_json(Path(path), {"identity": identity, "report": result})


def _write_json(path: Path, value: Any) -> None:
    """Through a temporary name and a rename, so nobody ever reads half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(value, indent=2, sort_keys=True) + "\n").encode()
    atomic_write(path, data, 0o644, durable=False)
