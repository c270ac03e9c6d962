"""A stand-in runtime for testing parrallello's decider alone: it answers each command the
flow returns with the event the engine would journal (places, receipts, turn ends), from a
script, and feeds it back through `evolve`. No process, no clock, no disk."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from flamechase import events as ev
from flamechase.flow import Emit, FinishRun, MakePlace, Run, RunSetup, StartTurn, WaitUntil
from flamechase.flows.parrallello import FLOW
from flamechase.flows.parrallello.params import ParrallelloParams
from flamechase.flows.parrallello.plan import PlanSpec
from flamechase.flows.parrallello.runtime import parse_key
from flamechase.flows.parrallello.state import PState


def gate_output(items: dict[str, bool]) -> dict[str, Any]:
    rows = [{"id": i, "value": int(ok), "target": ">=1", "pass": ok} for i, ok in items.items()]
    ok = all(items.values())
    out = (
        f"RESULT_JSON {json.dumps({'pass': ok, 'items': rows})}\n"
        f"SUMMARY {sum(items.values())}/{len(items)} PASS\n"
    )
    return {"output": out, "exit_code": 0 if ok else 1, "error": None, "duration": 0.1}


def tool(prefix: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"output": f"{prefix} {json.dumps(data)}\n", "exit_code": 0, "error": None}


def diff(
    accepted: list[str] = (),
    outside: list[str] = (),  # type: ignore[assignment]
    frozen: list[str] = (),
) -> dict[str, Any]:  # type: ignore[assignment]
    return tool(
        "TREESYNC",
        {
            k: {"count": len(v), "paths": list(v)}
            for k, v in (("accepted", accepted), ("outside", outside), ("frozen", frozen))
        },
    )


@dataclasses.dataclass
class Script:
    """What the stand-in runtime answers; override per test."""

    gate: Callable[[str, int], dict[str, bool]] = lambda front, rnd: {"T.a": rnd >= 2}
    verdict: Callable[[str, int], dict[str, Any]] = lambda front, rnd: {
        "findings": [],
        "approve": True,
        "summary": "fine",
    }
    builder_diff: Callable[[str, int, str], dict[str, Any]] = lambda f, r, o: diff(["src/a.py"])
    critic_diff: Callable[[str, int], dict[str, Any]] = lambda f, r: diff()
    cost: float = 0.0
    hashes: Callable[[str, int], dict[str, str]] = lambda f, r: {f"gates/{f}.py": "h1"}
    fail_turn: Callable[[StartTurn], bool] = lambda c: False
    sheets: Callable[[str, int], dict[str, Any]] = lambda f, r: {"taken": [], "refused": []}
    handoff: Callable[[str, int, str], str] = lambda f, r, o: "did it"
    lead: Callable[[str, int, dict[str, Any]], dict[str, Any]] = lambda f, b, brief: {
        "lead_note": f"lead note after block {b}"
    }


class Driver:
    def __init__(
        self,
        plan: dict[str, Any],
        script: Script | None = None,
        budget: dict[str, Any] | None = None,
        **params: Any,
    ) -> None:
        self.script = script or Script()
        self.params = ParrallelloParams(
            prep=params.pop("prep", False), checkpoint=params.pop("checkpoint", "off"), **params
        )
        self.params._plan = PlanSpec.model_validate(plan)
        self.state: PState = FLOW.start(
            RunSetup(run_id="r1", objective="o", params=self.params, lanes=FLOW.lanes(self.params))
        )
        self.clock = datetime(2026, 12, 1, tzinfo=UTC)
        self.events: list[ev.Event] = []
        self.commands: list[Any] = []
        self.finished: FinishRun | None = None
        self.feed(ev.RunCreated(budget=budget or {"turns": 1000}))

    def at(self) -> str:
        self.clock += timedelta(seconds=10)
        return self.clock.isoformat().replace("+00:00", "Z")

    def feed(self, event: ev.Event) -> None:
        event = dataclasses.replace(event, at=self.at())
        self.events.append(event)
        self.state = FLOW.evolve(self.state, event)

    def of(self, kind: type[ev.Event]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def step(self) -> bool:
        """Answer what `decide` asks now; False once nothing more happens."""
        wanted = list(FLOW.decide(self.state, 0.0))
        self.commands.append(wanted)
        acted = False
        for c in wanted:
            if isinstance(c, FinishRun):
                self.finished = c
                return False
            if isinstance(c, WaitUntil):
                continue
            self.feed(self.answer(c))
            acted = True
        return acted

    def run(self, limit: int = 2000) -> Driver:
        for _ in range(limit):
            if not self.step():
                return self
        raise AssertionError("the decider never settled")

    def answer(self, c: Any) -> ev.Event:
        if isinstance(c, Emit):
            return c.event
        if isinstance(c, MakePlace):
            return ev.PlaceMade(place=c.name, path=f"/runs/r1/{c.name}/workspace", how=c.how)
        if isinstance(c, Run):
            return ev.Ran(key=c.key, receipt=self.receipt(c))
        assert isinstance(c, StartTurn), c
        common = dict(lane=c.lane, actor=c.role, turn=c.number, cost_usd=self.script.cost)
        if self.script.fail_turn(c):
            return ev.TurnFailed(error="the agent died", **common)
        return ev.TurnValid(result=self.result(c), **common)

    def result(self, c: StartTurn) -> dict[str, Any]:
        brief = c.note["brief"]
        if c.role == "critic":
            return c.result.validate(self.script.verdict(brief["front"], brief["round"]))
        if c.role == "lead":
            return c.result.validate(self.script.lead(brief["front"], brief["block_ended"], brief))
        if c.role == "prep":
            return {"tickets": [], "handoff": "staged"}
        return c.result.validate(
            {  # as the engine does: the result's own rules apply
                "tickets": [{"id": t["id"], "status": "claimed_fixed"} for t in brief["tickets"]],
                "handoff": self.script.handoff(brief["front"], brief["round"], brief["owner"]),
            }
        )

    def receipt(self, c: Run) -> dict[str, Any]:
        key = parse_key(c.key)
        assert key is not None
        if key.what == "checkpoint":
            return tool("GITPOINT", {"tag": "pre-parrallello-2026-12-01", "commit": "c0"})
        if key.what in ("gate", "baseline", "regate"):
            return gate_output(self.script.gate(key.front, key.round))
        if key.what == "diff":
            return self.script.builder_diff(key.front, key.round, key.who)
        if key.what == "cdiff":
            return self.script.critic_diff(key.front, key.round)
        if key.what in ("hash", "freeze", "rehash", "fhash", "recalhash"):
            return tool(
                "TREESYNC", {"files": self.script.hashes(key.front, key.round), "digest": "d"}
            )
        if key.what == "sheets":
            return tool("SHEETS", self.script.sheets(key.front, key.round))
        if key.what == "reap":
            return tool("JOBS", {"killed": [], "reaped": [], "jobs": 0})
        if key.what == "integrate":
            return tool("GITPOINT", {"files": 1, "commit": "c1"})
        return tool("TREESYNC", {"changed": 0} if "sync" in key.what else {"applied": True})


def plan(*fronts: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"fronts": list(fronts), **top}


def front(fid: str = "P1", owners: dict[str, list[str]] | None = None, **kw: Any) -> dict[str, Any]:
    return {
        "id": fid,
        "gate": f"python3 gates/{fid}.py",
        "freeze": [f"gates/{fid}.py"],
        "owners": owners or {"core": [f"src/{fid}/**"]},
        **kw,
    }
