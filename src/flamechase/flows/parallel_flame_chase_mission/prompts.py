"""The words parallel_flame_chase_mission adds: a lane's mission and its bounds (after
parallel_flame_chase's own lane prompt), and an audit's decision session."""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flamechase.flows.parallel_flame_chase_mission.decisions import Decision
from flamechase.flows.parallel_flame_chase_mission.missions import Mission


def _j(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _when(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def mission_block(
    *,
    mission_id: str,
    status: str,
    turns: int,
    limit: int,
    deadline_at: float,
    package: Sequence[Mapping[str, Any]] = (),
    skill: str = "",
) -> str:
    """What a lane turn is told of its mission's bounds, after parallel_flame_chase's words.
    `skill`: the flow's skill when the CLI has it mounted, which then carries the rules."""
    bounds = (
        f"Mission {mission_id} ({status}): {turns} progress turns since it was dispatched, of "
        f"{limit} before an audit; its deadline is {_when(deadline_at)}."
    )
    if skill:
        lines = ["", bounds, f"Your report's status is the mission's outcome ({skill} skill)."]
        if package:
            lines += [
                "",
                "This is an integration mission: integrate this accepted package (verified by "
                "the runtime against its sha256 just now):",
                _j([dict(a) for a in package]),
            ]
        return "\n".join(lines)
    lines = [
        "",
        bounds,
        "Your report's status is the mission's outcome: progress (work landed, the mission "
        "goes on), deliverable_ready (its success criteria are met and shown), no_result (the "
        "direction is falsified) or blocked (a concrete blocker). The last three end the "
        "mission and start an audit by a fresh coordinator, who continues, redirects or "
        "accepts it; give their `evidence` (what you ran and what it showed). A submission's "
        "value is re-measured by the runtime and the audit sees both.",
    ]
    if package:
        lines += [
            "",
            "This is an integration mission: integrate this accepted package (verified by "
            "the runtime against its sha256 just now; each `blob` is its read-only frozen "
            "copy), recheck its claims in your tree, keep the tests green, then report "
            "deliverable_ready with evidence:",
            _j([dict(a) for a in package]),
        ]
    return "\n".join(lines)


def of_mission(m: Mission, package: Sequence[Mapping[str, Any]], skill: str) -> str:
    """`mission_block` for mission `m` as it stands."""
    return mission_block(
        mission_id=m.id,
        status=m.status,
        turns=m.turns_since_dispatch,
        limit=m.limit,
        deadline_at=m.deadline_at,
        package=package,
        skill=skill,
    )


def audit_prompt(
    *, packet: Mapping[str, Any], targets: Sequence[str], report_path: Path, skill: str = ""
) -> str:
    """An audit's decision session; `skill`: the flow's skill when the CLI has it mounted
    (what the lanes follow and what an audit does to them), which the prompt refers to."""
    follow = (
        [
            f"The lanes follow the {skill} skill, the lane protocol with missions (mounted "
            "for you too: load it first to know what a lane and an audit do).",
            "",
        ]
        if skill
        else []
    )
    return "\n".join(
        [
            "You are the audit coordinator of a parallel flame chase with missions. This is a "
            "fresh session in a throw-away snapshot of the tree. Decide only: no edits, no "
            "implementation, no remote actions. Decide the packet below, not speculation.",
            "",
            *follow,
            f"Decide each target lane exactly once ({', '.join(targets)}):",
            "- continue: the mission goes on as it is (its turn count and deadline restart);",
            "- redirect: reject it and give `next_mission`; `changes` names what it changes "
            "(hypothesis, method, scale), and the new mission must really change it;",
            "- accept: only for a deliverable_ready outcome. For lane-2..N give `integration` "
            "{priority 1-100 (lower first), objective, success_criteria} (lane-1 integrates "
            "the frozen package) and optionally its `next_mission` (none: the lane stops); "
            "lane-1 carries no `integration`; without `next_mission` it resumes the mission "
            "its integration paused, or stops.",
            "Claims are checked, not believed: a report's claimed score stands beside the "
            "runtime's measurement (`measured`) in the packet; trust the measurement.",
            "",
            f"Packet:\n{_j(dict(packet))}",
            "",
            f"Write the decision as JSON to {report_path}, with this audit's exact "
            f"audit_id and revision:\n{json.dumps(Decision.model_json_schema())}",
        ]
    )


def audit_repair_prompt(reason: str, audit_id: str, revision: int, report_path: Path) -> str:
    return (
        f"Your decision was rejected: {reason}\nWrite a corrected decision as JSON to "
        f'{report_path}: {{"audit_id": "{audit_id}", "revision": {revision}, "lanes": '
        '[{"lane": ..., "verdict": "continue"|"redirect"|"accept", "reason": ...}, ...]} '
        "deciding exactly the audit's targets (do not start new work)."
    )
