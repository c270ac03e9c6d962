"""flame_chase: two actors take turns in fresh sessions on your tree, until a budget ends it.

    flamechase exec -f flame_chase -a first_chaser=claude/opus:high \
        -a second_chaser=codex/gpt-5:high -p budget.duration=2h "$(cat TASK.md)"

One lane, `lane-1`, working in the directory `exec` runs in. `first_chaser` takes the first
turn; whose turn is next is durable, so after a crash or a stop the actor whose turn was cut
takes it again. No planner and no holding: a failed turn passes the baton like any other.
"""

from __future__ import annotations

import json

from flamechase.flow import Flow, FlowParams, LaneDef, LaneView


class FlameChase(Flow):
    name = "flame_chase"
    summary = "Two actors take turns in fresh sessions on one repository."
    Params = FlowParams
    shares_reports = False

    def lanes(self, params: FlowParams) -> list[LaneDef]:
        return [LaneDef("lane-1", ("first_chaser", "second_chaser"), in_source=True)]

    def lane_prompt(self, view: LaneView) -> str:
        partner = view.lane.actors[1 - (0 if view.actor == "a" else 1)]
        previous = ""
        if view.last_error:
            previous = f"\nThe previous turn failed: {view.last_error}\n"
        return (
            f"You are {view.role}, taking turn {view.turn} of a flame chase on this "
            f"repository ({view.workspace}). You and {partner} take turns, each in a fresh "
            "session: nothing of this conversation reaches the next turn, so leave your work "
            "in the repository and your evidence in the report.\n"
            "Read the repository (and TASK.md if present) first, then do substantial, "
            "tested work toward the objective. Do not invent success.\n"
            f"{previous}\nObjective:\n{view.objective}\n\n"
            f"Finish by writing your turn report as JSON to {view.report_path}:\n"
            + json.dumps({"status": "progress | deliverable_ready | no_result | blocked",
                          "summary": "what you did and found (required)",
                          "changes": ["files changed"], "evidence": ["observed results"],
                          "tests": ["commands run and their outcome"], "risks": [],
                          "next_step": "the single most useful next step"}, indent=2)
            + "\nUse status progress when work landed, no_result when a direction is "
            "exhausted, blocked for a concrete blocker. No other keys.\n"
        )


FLOW = FlameChase()
