"""parallel_flame_chase: a coordinator plans N lanes and leaves; each lane alternates two actors.

    flamechase exec -f parallel_flame_chase -a coordinator=codex/gpt-5:high \
        -a lane_1_actor_a=claude/opus:max,lane_1_actor_b=codex/gpt-5:high ... \
        -p budget.duration=12h "$(cat TASK.md)"

Lane 1 works in your tree and is the only lane that writes it; lanes 2..N work in private
copies and reach lane 1 through reports and frozen, hashed artifact packages. State kept on
resume: the plan (the coordinator is not called again unless TASK.md changed), each lane's
turn counter and next actor, undelivered reports, the leaderboard.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, model_validator

from flamechase.flow import Flow, FlowParams, LaneDef, LaneView, PlanView
from flamechase.flows.plans import validate_plan
from flamechase.reports import report_schema


class ParallelParams(FlowParams):
    lanes: int = Field(default=3, ge=1, le=8, description="number of lanes")
    confirm_large_workspace_copies: bool = Field(
        default=False, description="ask before making copies over the thresholds")
    workspace_file_warning_threshold: int = Field(default=5000, ge=1, le=100_000_000)
    workspace_copy_warning_threshold_bytes: int = Field(
        default=1024**3, ge=1, le=1_000_000_000_000_000_000)
    evaluator: str | None = Field(
        default=None, min_length=1, max_length=1000,
        description="shell command the runtime runs to measure a submission")
    metric_pattern: str = Field(
        default=r"SCORE:\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)",
        description="regex with one group: the value in the evaluator's output")
    metric: str = Field(default="score", min_length=1, max_length=200)
    direction: Literal["minimize", "maximize"] = "minimize"
    evaluator_timeout: float = Field(default=600.0, gt=0, le=86400)

    @model_validator(mode="after")
    def _pattern_compiles(self) -> ParallelParams:
        import re

        try:
            compiled = re.compile(self.metric_pattern)
        except re.error as exc:
            raise ValueError(f"metric_pattern does not compile: {exc}") from None
        if compiled.groups != 1:
            raise ValueError("metric_pattern must have exactly one group")
        return self


def _j(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


class ParallelFlameChase(Flow):
    name = "parallel_flame_chase"
    summary = ("A coordinator plans N lanes and leaves; two actors alternate in each lane; "
               "only lane 1 writes your tree.")
    Params = ParallelParams
    planner = "coordinator"
    holds_lanes = True

    def lanes(self, params: FlowParams) -> list[LaneDef]:
        n = int(getattr(params, "lanes", 3))
        return [LaneDef(f"lane-{i}", (f"lane_{i}_actor_a", f"lane_{i}_actor_b"),
                        in_source=(i == 1)) for i in range(1, n + 1)]

    def validate_plan(self, data: Any, lanes: Sequence[LaneDef]) -> dict[str, Any]:
        return validate_plan(data, lanes)

    def plan_prompt(self, view: PlanView) -> str:
        n = len(view.lanes)
        names = ", ".join(ln.name for ln in view.lanes)
        retry = ""
        if view.previous_errors:
            retry = ("\nEarlier planning sessions failed: " + "; ".join(view.previous_errors)
                     + "\n")
        return (
            "You are the planning coordinator of a parallel flame chase. Read the repository "
            "first. Plan only: no edits, no remote actions, no implementation.\n"
            f"Split the objective into exactly {n} materially different lanes ({names}). "
            "lane-1 is the sole integration owner and the only lane that edits the original "
            "source; every other lane works in a private snapshot and must publish "
            "reconstructable artifact packages for lane-1. Every lane may run the task's local "
            "evaluators and submit measured candidates to the shared leaderboard. Missions "
            "must be falsifiable, information-seeking and independently useful, not cosmetic "
            "variants. This is the only coordinator turn: lanes coordinate through reports.\n"
            f"{retry}\nObjective:\n{view.objective}\n\nWorkspace map:\n{_j(view.workspace_map)}"
            f"\n\nWrite the plan as JSON to {view.report_path}:\n"
            + _j({"lanes": [{"lane": ln.name, "mission": {
                "title": "…", "objective": "…", "success_criteria": ["…"],
                "kind": "research|implementation|validation|integration",
                "approach_class": "…"}} for ln in view.lanes]})
            + "\nExactly one entry per lane. Optional mission fields: change_scale, "
            "information_question, dependencies.\n"
        )

    def lane_prompt(self, view: LaneView) -> str:
        lane1 = view.lane.in_source
        ownership = (
            "You own integration: you alone edit the original source. Integrate other lanes' "
            "work only from runtime-validated artifact packages (listed with sha256 in the "
            "reports below; each artifact's `blob` is a read-only frozen copy, or extract a "
            f"package with `flamechase artifacts {view.run_id} REPORT_ID --extract DIR`). "
            "Recheck their assumptions in the source; integration is new work, not copying. "
            "Keep the source coherent and tested."
            if lane1 else
            f"Work only in your private snapshot ({view.workspace}); never edit the original "
            "source. Publish every deliverable as explicit files under your artifact root "
            f"({view.artifact_root}) with integration notes lane-1 can follow."
        )
        partner = view.lane.actors[1 if view.actor == "a" else 0]
        return "\n".join([
            f"You are {view.role} (actor {view.actor} of {view.lane.name}), taking turn "
            f"{view.turn} of {view.lane.name} in a parallel flame chase. This is a fresh "
            f"session; {partner} takes the next turn. Read the repository and TASK.md first; "
            "leave durable work and evidence, not conversational memory.",
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
            f"Current leaderboard:\n{_j(view.leaderboard)}",
            "",
            f"Objective:\n{view.objective}",
            "",
            f"Your lane's mission:\n{_j(view.mission)}",
            "",
            "Lane status from the preceding attempt: " + _j(
                {"consecutive_failures": view.consecutive_failures,
                 "last_error": view.last_error}),
            "",
            f"Workspace map:\n{_j(view.workspace_map)}",
            "",
            f"Reports from other lanes not yet acknowledged by this lane (also in "
            f"{view.inbox_path}):\n{_j(list(view.inbox))}",
            "",
            f"Artifact paths are relative to {view.artifact_root}. You may write a checkpoint "
            f"to {view.checkpoint_path} as {{\"identity\": {_j(dict(view.checkpoint_identity))}"
            " + \"phase\": \"terminal\", \"report\": <your report>}; it is used only if your "
            "session dies before the report is written.",
            "",
            f"Finish by writing your turn report as JSON to {view.report_path}, matching this "
            f"schema:\n{json.dumps(report_schema(), separators=(',', ':'))}",
        ])


FLOW = ParallelFlameChase()
