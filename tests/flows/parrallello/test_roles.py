"""parrallello's critic runs at effort high unless its spec says otherwise (where its CLI has
efforts)."""

from __future__ import annotations

from flamechase.agents.spec import parse_spec
from flamechase.engine.roles import with_role_defaults
from flamechase.flows.parrallello import FLOW
from flamechase.flows.parrallello.params import ParrallelloParams


def test_the_critic_defaults_to_effort_high_and_the_others_to_none() -> None:
    params = ParrallelloParams()
    roles = {r.name: r for r in FLOW.describe_roles(params)}
    assert roles["critic"].defaults.effort == "high"
    assert roles["builder"].defaults.effort is None
    agents = {
        "planner": parse_spec("claude/claude-opus-4-5"),
        "builder": parse_spec("codex/gpt-5.1-codex"),
        "critic": parse_spec("codex/gpt-5.1-codex"),
    }
    got = with_role_defaults(agents, list(roles.values()), "parrallello")
    assert got["critic"].effort == "high" and got["critic"].text.endswith(":high")
    assert got["builder"].effort is None
    spelled = with_role_defaults(
        {**agents, "critic": parse_spec("codex/gpt-5.1:low")}, list(roles.values()), "parrallello"
    )
    assert spelled["critic"].effort == "low"
    # A CLI without efforts keeps none.
    plain = with_role_defaults(
        {**agents, "critic": parse_spec("gemini/gemini-2.5-pro")},
        list(roles.values()),
        "parrallello",
    )
    assert plain["critic"].effort is None
