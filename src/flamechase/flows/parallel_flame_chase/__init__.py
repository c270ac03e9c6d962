"""parallel_flame_chase: a coordinator plans N lanes and leaves; each lane alternates two actors.

    flamechase exec -f parallel_flame_chase -a coordinator=codex/gpt-5:high \
        -a lane_1_actor_a=claude/opus:max,lane_1_actor_b=codex/gpt-5:high ... \
        -p budget.duration=12h "$(cat TASK.md)"

Lane 1 works in your tree and is the only lane that writes it; lanes 2..N work in private
copies and reach lane 1 through reports and frozen, hashed artifact packages. Kept on resume:
the plan (the coordinator is not called again unless TASK.md changed), each lane's turn count
and next actor, undelivered reports, the leaderboard, submissions still to be measured.

Modules: `flow` (the decider), `planner` and `plans` (the coordinator's turn and its plan),
`prompts`, `measure` (frozen evaluator, submissions measured by the runtime), `candidates`
(the leaderboard's bookkeeping), `lane_params` (params shared with its git_pr variant),
`events` (this flow's event kinds, and how the views show them).
"""

from flamechase.flows.parallel_flame_chase.flow import FLOW, ParallelFlameChase, ParallelParams

__all__ = ["FLOW", "ParallelFlameChase", "ParallelParams"]
