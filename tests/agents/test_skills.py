"""A flow's skill, mounted per CLI: Claude Code a plugin of the session (its SKILL.md in the
turn's own directory), Codex the thread's developer instructions, Gemini CLI a GEMINI.md in a
directory of the turn's own, opencode an instructions file named in its inline config; exec,
acp and sim agents none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from flamechase.agents import skills
from flamechase.engine.flowcode import FlowCode
from flamechase.errors import FlowCodeError
from flamechase.flow import Skill
from flamechase.flows.parallel_flame_chase import FLOW as PFC
from flamechase.flows.parallel_flame_chase import skill as pfc_skill

SKILL = Skill(name="lane-rules", description="How a lane works: read it first.", body="# Rules\n")


def test_claude_gets_a_plugin_of_the_session_in_the_turn_directory(tmp_path: Path) -> None:
    mounted = skills.mount("claude", SKILL, tmp_path)
    assert mounted is not None and mounted.name == "lane-rules"
    flag, plugin = mounted.argv
    assert flag == "--plugin-dir" and Path(plugin).is_relative_to(tmp_path)
    manifest = json.loads((Path(plugin) / ".claude-plugin/plugin.json").read_text())
    assert manifest["name"] == "flamechase-lane-rules"
    text = (Path(plugin) / "skills/lane-rules/SKILL.md").read_text()
    _, front, body = text.split("---\n", 2)
    assert yaml.safe_load(front) == {"name": "lane-rules", "description": SKILL.description}
    assert body.strip() == "# Rules"


def test_codex_gets_developer_instructions_and_agents_without_a_mechanism_nothing(
    tmp_path: Path,
) -> None:
    mounted = skills.mount("codex", SKILL, tmp_path)
    assert mounted is not None and mounted.argv == () and dict(mounted.env) == {}
    assert mounted.instructions.startswith("# Skill: lane-rules")
    assert "# Rules" in mounted.instructions
    for cli in ("exec", "acp", "sim"):
        assert skills.mount(cli, SKILL, tmp_path) is None
    assert list(tmp_path.iterdir()) == []


def test_gemini_gets_a_context_file_in_a_directory_of_the_turn_it_includes(
    tmp_path: Path,
) -> None:
    mounted = skills.mount("gemini", SKILL, tmp_path)
    assert mounted is not None and mounted.name == "lane-rules"
    flag, directory = mounted.argv
    assert flag == "--include-directories" and Path(directory).is_relative_to(tmp_path)
    # GEMINI.md: the name Gemini CLI always loads, whatever `context.fileName` adds.
    text = (Path(directory) / "GEMINI.md").read_text()
    assert text == skills.instructions(SKILL)
    assert [p.name for p in Path(directory).iterdir()] == ["GEMINI.md"]


def test_opencode_gets_an_instructions_file_named_in_its_inline_config(tmp_path: Path) -> None:
    mounted = skills.mount("opencode", SKILL, tmp_path, environ={})
    assert mounted is not None and mounted.argv == ()
    config = json.loads(mounted.env["OPENCODE_CONFIG_CONTENT"])
    (path,) = config["instructions"]
    assert Path(path).is_absolute() and Path(path).is_relative_to(tmp_path)
    assert Path(path).read_text() == skills.instructions(SKILL)


def test_an_inline_opencode_config_of_the_users_is_kept_and_extended(tmp_path: Path) -> None:
    theirs = json.dumps({"instructions": ["~/rules.md"], "share": "disabled"})
    mounted = skills.mount("opencode", SKILL, tmp_path, environ={"OPENCODE_CONFIG_CONTENT": theirs})
    assert mounted is not None
    config = json.loads(mounted.env["OPENCODE_CONFIG_CONTENT"])
    assert config["share"] == "disabled"
    assert config["instructions"][0] == "~/rules.md"
    assert config["instructions"][1].endswith("lane-rules.md")


@pytest.mark.parametrize("theirs", ["{not json", "[1]", '{"instructions": "one.md"}'])
def test_an_inline_opencode_config_we_cannot_extend_leaves_the_skill_to_the_prompt(
    theirs: str, tmp_path: Path
) -> None:
    environ = {"OPENCODE_CONFIG_CONTENT": theirs}
    assert skills.mount("opencode", SKILL, tmp_path, environ=environ) is None
    assert list(tmp_path.iterdir()) == []


def test_every_cli_with_a_mount_is_named_in_the_mounts_flows_show_lists(tmp_path: Path) -> None:
    for cli in ("claude", "codex", "gemini", "opencode"):
        assert skills.mount(cli, SKILL, tmp_path / cli, environ={}) is not None
        assert cli in skills.MOUNTS


def test_parallel_flame_chase_brings_its_lane_protocol_to_every_session() -> None:
    code = FlowCode(PFC)
    try:
        assert code.skill("coordinator") is pfc_skill.SKILL  # it plans for lanes that follow it
        found = code.skill("lane_2_actor_b")
    finally:
        code.close()
    assert found is pfc_skill.SKILL
    for part in ("## Actor", "## Report", "## Artifacts", "## Checkpoint", "## Resume"):
        assert part in found.body


def test_a_skill_that_is_not_one_is_a_flow_bug() -> None:
    class Bad(type(PFC)):  # type: ignore[misc]
        def skill(self, role: str) -> Skill | None:
            return Skill(name="Not A Name", description="", body="")

    code = FlowCode(Bad())
    try:
        with pytest.raises(FlowCodeError, match=r"skill\(\) returned .* not a Skill"):
            code.skill("lane_1_actor_a")
    finally:
        code.close()


def test_a_lane_prompt_refers_to_a_mounted_skill_instead_of_repeating_it(tmp_path: Path) -> None:
    from flamechase.flows.parallel_flame_chase import prompts

    facts = dict(
        run_id="r1",
        lane="lane-2",
        in_source=False,
        role="lane_2_actor_a",
        actor="a",
        partner="lane_2_actor_b",
        turn=3,
        workspace=tmp_path / "copy",
        artifact_root=tmp_path / "artifacts",
        leaderboard={},
        objective="make it fast",
        mission={"goal": "try caching"},
        consecutive_failures=0,
        last_error=None,
        workspace_map={},
        inbox=[],
        inbox_path=tmp_path / "inbox.json",
        checkpoint_path=tmp_path / "checkpoint.json",
        checkpoint_identity={"run_id": "r1"},
        report_path=tmp_path / "report.json",
    )
    plain = prompts.lane_prompt(**facts)  # type: ignore[arg-type]
    with_skill = prompts.lane_prompt(**facts, skill=pfc_skill.NAME)  # type: ignore[arg-type]
    assert "Status: progress = work landed" in plain
    assert "Status: progress = work landed" not in with_skill
    assert f"Follow the {pfc_skill.NAME} skill" in with_skill
    for fact in ("make it fast", "try caching", str(tmp_path / "report.json"), "artifacts"):
        assert fact in with_skill
    assert len(with_skill) < len(plain)
