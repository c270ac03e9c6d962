"""parallel_flame_chase_mission's simulated actor: parallel_flame_chase's (the plan, the
sample's lanes) with bounded missions, and an audit coordinator that decides the packet.

The plan gives the last exploring lane a short leash (`max_turns_without_outcome` 2), so a
simulated run shows a stall redirected; a lane 2..N deliverable is accepted and queued, and
lane 1 integrates it and reports it ready, so the run shows the queue and a resumed mission.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flamechase.flow import REPORT
from flamechase.flow.sim import SimTurn
from flamechase.flows.parallel_flame_chase.sim import PfcActor, plan
from flamechase.flows.parallel_flame_chase_mission.decisions import Decision
from flamechase.flows.parallel_flame_chase_mission.specs import TERMINAL, MissionPlanResult

__all__ = ["ACTOR", "MissionActor", "decide"]

INTEGRATING = "This is an integration mission"


class MissionActor(PfcActor):
    async def act(self, turn: SimTurn) -> dict[str, Any] | None:
        model = turn.result.model
        if model is MissionPlanResult:
            return bounded_plan(turn)
        if model is Decision:
            return decide(turn.prompt)
        if turn.lane is None:
            return await super().act(turn)
        report = await super().act(dataclasses.replace(turn, result=REPORT))
        if report is None:
            return None
        if turn.lane == "lane-1" and INTEGRATING in turn.prompt:
            report = await asyncio.to_thread(_ready, turn, dict(report))
        if report.get("status") in TERMINAL and not report.get("evidence"):
            report = {**report, "evidence": [str(report.get("summary"))[:500]]}
        return report


ACTOR = MissionActor()


def bounded_plan(turn: SimTurn) -> dict[str, Any]:
    entries = plan(turn)["lanes"]
    for i, entry in enumerate(entries):
        short = i == len(entries) - 1 and i > 0
        entry["mission"] = {
            **entry["mission"],
            "deadline_hours": 6,
            "max_turns_without_outcome": 2 if short else 6,
        }
    return {"lanes": entries}


def _ready(turn: SimTurn, report: dict[str, Any]) -> dict[str, Any]:
    """Lane 1 on an integration mission: the tree as its deliverable, once integrated."""
    root = Path(turn.env.get("FLAMECHASE_ARTIFACTS") or "")
    source = turn.workspace / "solver.py"
    if not root.is_dir() or not source.is_file():
        return report
    name = f"integrated-{turn.number:03d}-{turn.attempt}/solver.py"
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, root / name)
    return {
        **{k: v for k, v in report.items() if k not in ("submission", "deliverable")},
        "status": "deliverable_ready",
        "evidence": [*(report.get("evidence") or []), "integrated the verified package"][:50],
        "deliverable": {
            "title": "the integrated tree",
            "artifacts": [{"path": name, "description": "solver.py after the integration"}],
            "integration_notes": "already in lane 1's tree",
        },
    }


def decide(prompt: str) -> dict[str, Any]:
    """The packet's decision: accept what is ready, redirect a stall, continue otherwise."""
    packet = _packet(prompt)
    audit = packet.get("audit") or {}
    lanes = []
    for m in packet.get("missions") or []:
        outcome = (m.get("outcome") or {}).get("status")
        lanes.append(_verdict(m, outcome))
    return {"audit_id": audit.get("audit_id"), "revision": audit.get("revision"), "lanes": lanes}


def _verdict(m: Mapping[str, Any], outcome: str | None) -> dict[str, Any]:
    lane, spec = m["lane"], dict(m.get("spec") or {})
    if outcome == "deliverable_ready":
        v: dict[str, Any] = {"lane": lane, "verdict": "accept", "reason": "criteria shown"}
        if lane != "lane-1":
            v["integration"] = {
                "priority": 50,
                "objective": f"Integrate {lane}'s package if it measures better.",
                "success_criteria": ["STEPS does not go up", "tests stay green"],
            }
            v["next_mission"] = {**spec, "title": _titled(spec, "next round")}
        return v
    stalled = m.get("turns_since_dispatch", 0) >= int(spec.get("max_turns_without_outcome") or 6)
    if m.get("origin") != "redirect" and (outcome in ("no_result", "blocked") or stalled):
        scale = "probe" if spec.get("change_scale") != "probe" else "component"
        nxt = {
            **spec,
            "title": _titled(spec, "smaller steps"),
            "change_scale": scale,
            "max_turns_without_outcome": 6,
        }
        return {
            "lane": lane,
            "verdict": "redirect",
            "reason": "stalled: change the scale",
            "changes": ["scale"],
            "next_mission": nxt,
        }
    return {"lane": lane, "verdict": "continue", "reason": "on track"}


def _titled(spec: Mapping[str, Any], said: str) -> str:
    title = str(spec.get("title") or "mission").split(" (")[0]
    return f"{title} ({said})"[:200]


def _packet(prompt: str) -> dict[str, Any]:
    start = prompt.find("Packet:\n")
    end = prompt.find("\n\nWrite the decision")
    try:
        data = json.loads(prompt[start + len("Packet:\n") : end])
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
