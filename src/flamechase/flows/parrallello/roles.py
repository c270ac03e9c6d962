"""parrallello's roles as `flows show` and the prompt present them: what each is for, and the
critic's default effort (the document's "Critic | fresh agent, effort: high")."""

from __future__ import annotations

from flamechase.flow import AgentDefaults, Role

# The effort a critic runs at when its -a spec names none and its CLI has that effort.
CRITIC_EFFORT = "high"

_ABOUT = {
    "planner": "writes the plan (fronts, owners, gates, blocks), once",
    "builder": "a fresh builder per round, fixing its tickets within its own files",
    "critic": "a fresh adversarial critic per round; runs the gate itself; numbers first, "
    "eyes last",
    "prep": "one-pass agents that pre-stage a front (gate, baseline, tickets)",
    "lead": "a fresh session between a front's blocks: its next tickets and a note that "
    "binds the next block",
}


# The params a run takes instead of an agent for the role (said when none is given).
_WITHOUT = {"prep": "-p prep=false", "planner": "-p plan=PLAN.yaml"}


def described(roles: list[str]) -> list[Role]:
    return [
        Role(
            name,
            _ABOUT.get(name, ""),
            AgentDefaults(effort=CRITIC_EFFORT) if name == "critic" else AgentDefaults(),
            without=_WITHOUT.get(name, ""),
        )
        for name in roles
    ]
