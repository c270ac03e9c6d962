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
    choices = with_role_defaults_all({r: (s,) for r, s in agents.items()}, roles, flow)
    return {r: specs[0] for r, specs in choices.items()}


def with_role_defaults_all(
    agents: Mapping[str, tuple[AgentSpec, ...]], roles: Sequence[Role], flow: str
) -> dict[str, tuple[AgentSpec, ...]]:
    """As `with_role_defaults`, for every alternative of each role (engine/failover)."""
    out = dict(agents)
    for role in roles:
        if role.defaults.goals:
            raise BackendUnavailable(
                f"flow {flow} asks for {role.name} to run as a goal (AgentDefaults(goals=True)); "
                "no flamechase backend runs an agent as a goal: a turn ends where the flow "
                "says. Declare goals=False"
            )
        specs = out.get(role.name)
        if specs is not None:
            out[role.name] = tuple(_defaulted(spec, role.defaults.effort) for spec in specs)
    return out


def _defaulted(spec: AgentSpec, effort: str | None) -> AgentSpec:
    """`spec` with the role's default effort, where it names none and its CLI has it."""
    if effort is None or spec.effort is not None or effort not in efforts_of(spec.cli):
        return spec
    return dataclasses.replace(spec, effort=effort, text=f"{spec.text}:{effort}")
