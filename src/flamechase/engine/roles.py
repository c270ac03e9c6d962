"""A flow's role declarations applied to the agents a run was given (before anything runs)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from flamechase.agents.efforts import efforts_of
from flamechase.agents.spec import AgentSpec
from flamechase.errors import BackendUnavailable
from flamechase.flow import Role


def with_role_defaults(
    agents: Mapping[str, AgentSpec], roles: Sequence[Role], flow: str
) -> dict[str, AgentSpec]:
    """`agents` with each role's default effort where its spec names none and its CLI has
    that effort; refuses a role that asks for a CLI's goal mode (no backend runs one)."""
    out = dict(agents)
    for role in roles:
        if role.defaults.goals:
            raise BackendUnavailable(
                f"flow {flow} asks for {role.name} to run as a goal (AgentDefaults(goals=True)); "
                "no flamechase backend runs an agent as a goal: a turn ends where the flow "
                "says. Declare goals=False"
            )
        spec = out.get(role.name)
        effort = role.defaults.effort
        if (
            spec is None
            or effort is None
            or spec.effort is not None
            or effort not in efforts_of(spec.cli)
        ):
            continue
        out[role.name] = dataclasses.replace(spec, effort=effort, text=f"{spec.text}:{effort}")
    return out
