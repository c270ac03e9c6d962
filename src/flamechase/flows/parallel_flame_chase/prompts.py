"""The words of parallel_flame_chase: the coordinator's, each lane actor's, and the repairs."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flamechase.reports import report_schema


def _j(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def plan_prompt(
    *,
    objective: str,
    lanes: Sequence[str],
    previous_errors: Sequence[str],
    workspace_map: Mapping[str, Any],
    report_path: Path,
    skill: str = "",
) -> str:
    """The coordinator's planning turn. `skill`: the name of the flow's skill when its CLI has
    it mounted (the lane protocol the plan is for), which the prompt then refers to."""
    n = len(lanes)
    names = ", ".join(lanes)
    retry = ""
    if previous_errors:
        retry = "\nEarlier planning sessions failed: " + "; ".join(previous_errors) + "\n"
    lanes_work = (
        f"The lanes follow the {skill} skill, the lane protocol (mounted for you too: load "
        "it first to know what each lane may do): lane-1 alone edits the original source; "
        "the other lanes publish artifact packages for it. "
        if skill
        else "lane-1 is the sole integration owner and the only lane that edits the original "
        "source; every other lane works in a private snapshot and must publish "
        "reconstructable artifact packages for lane-1. Every lane may run the task's local "
        "evaluators and submit measured candidates to the shared leaderboard. "
    )
    return (
        "You are the planning coordinator of a parallel flame chase. Read the repository "
        "first. Plan only: no edits, no remote actions, no implementation.\n"
        f"Split the objective into exactly {n} materially different lanes ({names}). "
        + lanes_work
        + "Missions "
        "must be falsifiable, information-seeking and independently useful, not cosmetic "
        "variants. This is the only coordinator turn: lanes coordinate through reports.\n"
        f"{retry}\nObjective:\n{objective}\n\nWorkspace map:\n{_j(workspace_map)}"
        f"\n\nWrite the plan as JSON to {report_path}:\n"
        + _j(
            {
                "lanes": [
                    {
                        "lane": name,
                        "mission": {
                            "title": "…",
                            "objective": "…",
                            "success_criteria": ["…"],
                            "kind": "research|implementation|validation|integration",
                            "approach_class": "…",
                        },
                    }
                    for name in lanes
                ]
            }
        )
        + "\nExactly one entry per lane. Optional mission fields: change_scale, "
        "information_question, dependencies.\n"
    )


def plan_repair_prompt(reason: str, report_path: Path) -> str:
    return (
        f"Your plan was rejected: {reason}\nWrite a corrected plan as JSON to "
        f'{report_path}: {{"lanes": [{{"lane": "lane-1", "mission": {{"title": '
        '…, "objective": …, "success_criteria": [...]}}}}, …]}} with exactly '
        "one entry per lane."
    )


def turn_context(
    objective: str,
    mission: Mapping[str, Any] | None,
    consecutive_failures: int,
    last_error: str | None,
    workspace_map: Mapping[str, Any],
) -> list[str]:
    """A lane turn's objective, mission, status and workspace map, as every lane prompt of a
    parallel flame chase gives them (git_pr's too), with or without a skill."""
    return [
        f"Objective:\n{objective}",
        "",
        f"Your lane's mission:\n{_j(mission)}",
        "",
        "Lane status from the preceding attempt: "
        + _j({"consecutive_failures": consecutive_failures, "last_error": last_error}),
        "",
        f"Workspace map:\n{_j(workspace_map)}",
    ]


# long: the words of a lane's prompt, kept together as the agent reads them.
def lane_prompt(
    *,
    run_id: str,
    lane: str,
    in_source: bool,
    role: str,
    actor: str,
    partner: str,
    turn: int,
    workspace: Path,
    artifact_root: Path | None,
    leaderboard: Mapping[str, Any],
    objective: str,
    mission: Mapping[str, Any] | None,
    consecutive_failures: int,
    last_error: str | None,
    workspace_map: Mapping[str, Any],
    inbox: Sequence[Mapping[str, Any]],
    inbox_path: Path,
    checkpoint_path: Path | None,
    checkpoint_identity: Mapping[str, Any],
    report_path: Path,
    skill: str = "",
) -> str:
    if skill:
        return _lane_prompt_with_skill(
            skill=skill,
            run_id=run_id,
            lane=lane,
            in_source=in_source,
            role=role,
            actor=actor,
            partner=partner,
            turn=turn,
            workspace=workspace,
            artifact_root=artifact_root,
            leaderboard=leaderboard,
            objective=objective,
            mission=mission,
            consecutive_failures=consecutive_failures,
            last_error=last_error,
            workspace_map=workspace_map,
            inbox=inbox,
            inbox_path=inbox_path,
            checkpoint_path=checkpoint_path,
            checkpoint_identity=checkpoint_identity,
            report_path=report_path,
        )
    ownership = (
        "You own integration: you alone edit the original source. Integrate other lanes' "
        "work only from runtime-validated artifact packages (listed with sha256 in the "
        "reports below; each artifact's `blob` is a read-only frozen copy, or extract a "
        f"package with `flamechase artifacts {run_id} REPORT_ID --extract DIR`). "
        "Recheck their assumptions in the source; integration is new work, not copying. "
        "Keep the source coherent and tested."
        if in_source
        else f"Work only in your private snapshot ({workspace}); never edit the original "
        "source. Publish every deliverable as explicit files under your artifact root "
        f"({artifact_root}) with integration notes lane-1 can follow."
    )
    return "\n".join(
        [
            f"You are {role} (actor {actor} of {lane}), taking turn {turn} of {lane} in a "
            f"parallel flame chase. This is a fresh session; {partner} takes the next turn. "
            "Read the repository and TASK.md first; leave durable work and evidence, not "
            "conversational memory.",
            "",
            ownership,
            "",
            "Do substantive work now; test claims in proportion; no remote release, deployment,"
            " purchase or messaging; do not invent success. Status: progress = work landed; "
            "deliverable_ready = declared artifact files exist and another lane can rebuild the"
            " result; no_result = a falsifiable direction was exhausted; blocked = a concrete "
            "blocker (this holds the lane).",
            "",
            "Candidates: with a deliverable_ready package you may add a `submission` with the "
            "value the task's evaluator printed. The runtime re-runs the evaluator itself and "
            "ranks only what it measures. Use new artifact paths per candidate; never alter "
            "published files.",
            "",
            f"Current leaderboard:\n{_j(leaderboard)}",
            "",
            *turn_context(objective, mission, consecutive_failures, last_error, workspace_map),
            "",
            f"Reports from other lanes not yet acknowledged by this lane (also in "
            f"{inbox_path}):\n{_j(list(inbox))}",
            "",
            f"Artifact paths are relative to {artifact_root}. You may write a checkpoint "
            f'to {checkpoint_path} as {{"identity": {_j(dict(checkpoint_identity))}'
            ' + "phase": "terminal", "report": <your report>}; it is used only if your '
            "session dies before the report is written.",
            "",
            f"Finish by writing your turn report as JSON to {report_path}, matching this "
            f"schema:\n{json.dumps(report_schema(), separators=(',', ':'))}",
        ]
    )


# long: the same facts as lane_prompt, the protocol left to the mounted skill.
def _lane_prompt_with_skill(
    *,
    skill: str,
    run_id: str,
    lane: str,
    in_source: bool,
    role: str,
    actor: str,
    partner: str,
    turn: int,
    workspace: Path,
    artifact_root: Path | None,
    leaderboard: Mapping[str, Any],
    objective: str,
    mission: Mapping[str, Any] | None,
    consecutive_failures: int,
    last_error: str | None,
    workspace_map: Mapping[str, Any],
    inbox: Sequence[Mapping[str, Any]],
    inbox_path: Path,
    checkpoint_path: Path | None,
    checkpoint_identity: Mapping[str, Any],
    report_path: Path,
) -> str:
    """A lane turn's prompt when its CLI has the `skill` mounted: the facts of this turn; the
    protocol (actor, report, artifact, checkpoint, resume) is the skill's."""
    where = (
        "You are lane-1: you own integration and alone edit the original source."
        if in_source
        else f"Your private snapshot is {workspace}; your artifact root is {artifact_root}."
    )
    return "\n".join(
        [
            f"You are {role} (actor {actor} of {lane}), taking turn {turn} of {lane} in a "
            f"parallel flame chase (run {run_id}); {partner} takes the next turn.",
            f"Follow the {skill} skill, the lane protocol (actor, report, artifact, "
            "checkpoint, resume): load it first.",
            "",
            where,
            "",
            f"Current leaderboard:\n{_j(leaderboard)}",
            "",
            *turn_context(objective, mission, consecutive_failures, last_error, workspace_map),
            "",
            f"Reports from other lanes not yet acknowledged by this lane (also in "
            f"{inbox_path}):\n{_j(list(inbox))}",
            "",
            f"Checkpoint path: {checkpoint_path}; identity: {_j(dict(checkpoint_identity))}",
            "",
            f"Report path: {report_path}; schema:\n"
            f"{json.dumps(report_schema(), separators=(',', ':'))}",
        ]
    )
