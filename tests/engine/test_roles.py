"""A flow's role declarations (AgentDefaults) applied to the agents a run is given."""

from __future__ import annotations

import pytest

from flamechase.agents.spec import parse_spec
from flamechase.engine.roles import with_role_defaults
from flamechase.errors import BackendUnavailable
from flamechase.flow import AgentDefaults, Role


def test_a_role_runs_at_its_default_effort_when_the_spec_names_none() -> None:
    roles = [Role("author", defaults=AgentDefaults(effort="high")), Role("reviewer")]
    agents = {"author": parse_spec("claude/opus"), "reviewer": parse_spec("codex/gpt-5")}
    got = with_role_defaults(agents, roles, "review")
    assert (got["author"].effort, got["author"].text) == ("high", "claude/opus:high")
    assert got["reviewer"].effort is None


def test_an_effort_given_or_missing_from_the_clis_ladder_is_left_alone() -> None:
    roles = [Role("a", defaults=AgentDefaults(effort="high"))]
    given = with_role_defaults({"a": parse_spec("claude/opus:low")}, roles, "f")
    assert given["a"].effort == "low"
    gemini = with_role_defaults({"a": parse_spec("gemini/gemini-2.5-pro")}, roles, "f")
    assert gemini["a"].effort is None  # gemini has no efforts: nothing to default


def test_a_role_asking_for_a_goal_is_refused_in_one_line() -> None:
    roles = [Role("a", defaults=AgentDefaults(goals=True))]
    with pytest.raises(
        BackendUnavailable, match="no flamechase backend runs an agent as a goal"
    ) as caught:
        with_role_defaults({"a": parse_spec("claude/opus")}, roles, "f")
    assert "\n" not in str(caught.value)
