"""parrallello's skills: the builder's and the critic's rules, mounted per role where the CLI
loads skills (Claude Code's plugin, Codex's developer instructions); the prompt then names the
skill instead of listing the rules."""

from __future__ import annotations

from pathlib import Path

from flamechase.agents import skills as mounting
from flamechase.engine.flowcode import FlowCode
from flamechase.flows.parrallello import FLOW, briefs, skills


def test_the_builder_and_the_critic_each_bring_their_rules_and_no_one_else() -> None:
    code = FlowCode(FLOW)  # the engine's own check of what a flow's skill() returns
    try:
        found = {role: code.skill(role) for role in ("planner", "builder", "critic", "prep")}
    finally:
        code.close()
    assert found["planner"] is None and found["prep"] is None
    assert found["builder"] is skills.BUILDER and found["critic"] is skills.CRITIC
    for rule in briefs.RULES:
        assert rule in skills.BUILDER.body
    for rule in briefs.CRITIC_RULES:
        assert rule in skills.CRITIC.body
    assert "Numbers first, eyes last" in skills.CRITIC.body


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
