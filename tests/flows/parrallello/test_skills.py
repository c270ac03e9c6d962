"""parrallello's skills: each role's rules (planner, builder, critic, prep, lead), mounted per
role where the CLI loads skills (Claude Code's plugin, Codex's developer instructions); the
prompt then names the skill instead of listing the rules."""

from __future__ import annotations

from pathlib import Path

from flamechase.agents import skills as mounting
from flamechase.engine.flowcode import FlowCode
from flamechase.flows.parrallello import FLOW, briefs, lead, skills


def test_each_role_brings_its_own_rules() -> None:
    code = FlowCode(FLOW)  # the engine's own check of what a flow's skill() returns
    roles = ("planner", "builder", "critic", "prep", "lead")
    try:
        found = {role: code.skill(role) for role in roles}
    finally:
        code.close()
    assert found == {
        "planner": skills.PLANNER,
        "builder": skills.BUILDER,
        "critic": skills.CRITIC,
        "prep": skills.PREP,
        "lead": skills.LEAD,
    }
    assert [found[r].name for r in roles] == [f"parrallello-{r}" for r in roles]  # type: ignore[union-attr]
    for rules, skill in (
        (briefs.RULES, skills.BUILDER),
        (briefs.CRITIC_RULES, skills.CRITIC),
        (briefs.PLANNER_RULES, skills.PLANNER),
        (briefs.PREP_RULES, skills.PREP),
        (lead.RULES, skills.LEAD),
    ):
        for rule in rules:
            assert rule in skill.body
    assert "Numbers first, eyes last" in skills.CRITIC.body
    # The lead's note binds a block's builders and critic whether its rules are in the prompt
    # or in their skill.
    assert (
        briefs.LEAD_NOTE_RULE in skills.BUILDER.body and briefs.LEAD_NOTE_RULE in skills.CRITIC.body
    )


def test_the_planners_prompt_names_its_mounted_skill_instead_of_listing_its_rules() -> None:
    plain = briefs.planner_prompt("make it fast", 3, "/t/plan.json", "/t/ws", ())
    mounted = briefs.planner_prompt(
        "make it fast", 3, "/t/plan.json", "/t/ws", (), skills.PLANNER.name
    )
    assert briefs.PLANNER_RULES[1] in plain and briefs.PLANNER_RULES[1] not in mounted
    assert "follow the parrallello-planner skill" in mounted
    for fact in ("at most 3", "make it fast", "/t/plan.json", "/t/ws", '"fronts"'):
        assert fact in mounted


def test_claude_code_mounts_the_critic_skill_as_a_plugin_of_the_session(tmp_path: Path) -> None:
    mounted = mounting.mount("claude", skills.CRITIC, tmp_path)
    assert mounted is not None and mounted.name == "parrallello-critic"
    text = (Path(mounted.argv[1]) / "skills/parrallello-critic/SKILL.md").read_text()
    assert "at most 3 contact sheets of at most 1600 px" in text


def test_a_prompt_names_a_mounted_skill_instead_of_listing_the_rules() -> None:
    brief = {
        "role": "critic",
        "front": "P1",
        "round": 2,
        "goal": "VALUE reaches 2",
        "rules": list(briefs.CRITIC_RULES),
        "result": {"findings": []},
    }
    plain = briefs.words(brief, "/t/report.json", "/t/ws")
    mounted = briefs.words(brief, "/t/report.json", "/t/ws", "parrallello-critic")
    assert briefs.CRITIC_RULES[0] in plain and briefs.CRITIC_RULES[0] not in mounted
    assert "follow the parrallello-critic skill" in mounted
    for fact in ("front P1, round 2", "VALUE reaches 2", "/t/report.json", "/t/ws"):
        assert fact in mounted
