"""A flow's skill, mounted per turn where the role's CLI loads skills or instructions.

- Claude Code: `--plugin-dir DIR`, a plugin of this session only (`DIR/.claude-plugin/
  plugin.json` and `DIR/skills/NAME/SKILL.md`, frontmatter `name`/`description`): the model
  is told the skill exists and loads it with its Skill tool. The user's `~/.claude` (and its
  `skills/`) is untouched: nothing is installed there.
- Codex: the thread's `developerInstructions` (app-server `thread/start`; the
  `developer_instructions` of config.toml, set for this thread only): the skill's text reaches
  the model as developer instructions. `~/.codex` (AGENTS.md, skills/) is untouched.
- Every other CLI (gemini, opencode, exec, acp, sim) has none mounted, and its turns' prompts
  carry the protocol themselves.

The files are written in the turn's own directory (private to the run, readable in its jail).
Must not touch run state.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from flamechase.flow import Skill
from flamechase.fsutil import atomic_write

# CLI -> how it takes a skill (what `flows show` and the docs say).
MOUNTS = {
    "claude": "a plugin of the session (--plugin-dir), its skill loaded with the Skill tool",
    "codex": "the thread's developer instructions",
}


@dataclasses.dataclass(frozen=True, slots=True)
class Mounted:
    """A skill as one turn's CLI takes it: extra argv (claude), or instructions (codex)."""

    name: str
    argv: tuple[str, ...] = ()
    instructions: str = ""


def mount(cli: str, skill: Skill, into: Path) -> Mounted | None:
    """Mount `skill` for a turn of `cli` under `into` (a directory of the turn's own); None
    when the CLI has no mechanism for it."""
    if cli == "claude":
        plugin = into / "skill-plugin"
        manifest = {
            "name": f"flamechase-{skill.name}",
            "description": f"The {skill.name} skill of a flamechase flow",
        }
        (plugin / ".claude-plugin").mkdir(parents=True, exist_ok=True)
        atomic_write(plugin / ".claude-plugin/plugin.json", json.dumps(manifest).encode())
        (plugin / "skills" / skill.name).mkdir(parents=True, exist_ok=True)
        atomic_write(plugin / "skills" / skill.name / "SKILL.md", skill_md(skill).encode())
        return Mounted(skill.name, argv=("--plugin-dir", str(plugin)))
    if cli == "codex":
        return Mounted(skill.name, instructions=instructions(skill))
    return None


def skill_md(skill: Skill) -> str:
    """SKILL.md as Claude Code (and the Agent Skills format) reads it."""
    description = " ".join(skill.description.split())
    return f"---\nname: {skill.name}\ndescription: {json.dumps(description)}\n---\n\n{skill.body}"


def instructions(skill: Skill) -> str:
    return f"# Skill: {skill.name}\n\n{skill.description}\n\n{skill.body}"
