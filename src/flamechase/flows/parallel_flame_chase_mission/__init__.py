"""parallel_flame_chase_mission: the same lanes, audited.

    flamechase exec -f parallel_flame_chase_mission -a coordinator=codex/gpt-5:high \
        -a lane_1_actor_a=claude/opus:max,lane_1_actor_b=codex/gpt-5:high ... "$(cat TASK.md)"

parallel_flame_chase's roles, lanes, copies, reports, artifacts, frozen evaluator, leaderboard
and budgets (its decider runs the lanes), plus: the coordinator's plan gives each lane a
bounded, falsifiable mission; each lane turn's report status is the mission's outcome;
terminal outcomes, stalls, passed deadlines, two failed turns in a row and a periodic global
review open a scoped audit that pauses only its targets, decided by a fresh coordinator
session (continue, redirect, accept) and checked exactly; an accepted lane 2..N deliverable
is queued for lane 1, its frozen package re-hashed before lane 1 integrates it (pausing its
own mission, resumed on accept). The run ends by itself when every mission is accepted or
rejected and nothing is queued. docs/mission.md tells it whole.

Modules: `flow` (the decider), `specs` (missions and the lane report), `missions` (their
states and transitions), `audits` (triggers and coalescing), `decisions` (the decision and
its exact checks), `apply` (what a decision does), `queue` (lane 1's integration queue),
`packet` (what the coordinator is shown and the views told), `clocks` (deadlines, the
periodic review), `ingress` (external events), `params`, `prompts`, `events`, `sim`.
"""

from flamechase.flows.parallel_flame_chase_mission.flow import FLOW, ParallelFlameChaseMission
from flamechase.flows.parallel_flame_chase_mission.params import MissionParams

__all__ = ["FLOW", "MissionParams", "ParallelFlameChaseMission"]
