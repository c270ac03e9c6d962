"""flame_chase: two actors take turns in fresh sessions on your tree, until a budget ends it.

    flamechase exec -f flame_chase -a first_chaser=claude/opus:high \
        -a second_chaser=codex/gpt-5:high -p budget.duration=2h "$(cat TASK.md)"

One lane, `lane-1`, working in the directory `exec` runs in. `first_chaser` takes the first
turn; whose turn is next is durable, so after a crash or a stop the actor whose turn was cut
takes it again. No planner and no holding: a failed turn passes the baton like any other.
"""

from flamechase.flows.flame_chase.flow import FLOW, FlameChase

__all__ = ["FLOW", "FlameChase"]
