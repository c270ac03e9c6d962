"""A flow's skill, mounted per turn where the role's CLI loads skills or instructions.

- Claude Code: `--plugin-dir DIR`, a plugin of this session only (`DIR/.claude-plugin/
  plugin.json` and `DIR/skills/NAME/SKILL.md`, frontmatter `name`/`description`): the model
  is told the skill exists and loads it with its Skill tool. The user's `~/.claude` (and its
  `skills/`) is untouched: nothing is installed there.
- Codex: the thread's `developerInstructions` (app-server `thread/start`; the
  `developer_instructions` of config.toml, set for this thread only): the skill's text reaches
  the model as developer instructions. `~/.codex` (AGENTS.md, skills/) is untouched.
- Gemini CLI: a `GEMINI.md` context file in a directory of the turn's own, added as a
  workspace with `--include-directories DIR`. Gemini loads the context files of every
  workspace directory of a trusted folder at start (core `MemoryContextManager` ->
  `getEnvironmentMemoryPaths`; the turn's workspace is trusted by GEMINI_CLI_TRUST_WORKSPACE),
  searching upward only to the directory's git root or the directory itself. `GEMINI.md` is
  always among the names it looks for: a `context.fileName` setting adds its names to the
  default, it does not replace it (core `setGeminiMdFilename`). `~/.gemini` is untouched.
- opencode: an instructions file of the turn's own, named in the inline config
  `OPENCODE_CONFIG_CONTENT` (`{"instructions": [PATH]}`; an absolute path is read as is).
  opencode concatenates the `instructions` of every config layer, so the user's own
  (global, project, `OPENCODE_CONFIG`) still apply; an inline config the user already set is
  kept, ours added to its list. `~/.config/opencode` is untouched.
- Every other CLI (exec, acp, sim) has none mounted, and its turns' prompts carry the
  protocol themselves.

The files are written in the turn's own directory (private to the run, readable in its jail).
Must not touch run state.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from pathlib import Path

from flamechase.flow import Skill
from flamechase.fsutil import atomic_write

# CLI -> how it takes a skill (what `flows show` and the docs say).
MOUNTS = {
    "claude": "a plugin of the session (--plugin-dir), its skill loaded with the Skill tool",
    "codex": "the thread's developer instructions",
    "gemini": "a GEMINI.md context file of the turn's own (--include-directories)",
    "opencode": "an instructions file of the turn's own (OPENCODE_CONFIG_CONTENT)",
}
CONFIG_VAR = "OPENCODE_CONFIG_CONTENT"


@dataclasses.dataclass(frozen=True, slots=True)
class Mounted:
    """A skill as one turn's CLI takes it: extra argv (claude, gemini), instructions (codex),
    or extra environment (opencode)."""

    name: str
    argv: tuple[str, ...] = ()
    instructions: str = ""
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)


def mount(
    cli: str, skill: Skill, into: Path, environ: Mapping[str, str] | None = None
) -> Mounted | None:
    """Mount `skill` for a turn of `cli` under `into` (a directory of the turn's own); None
    when the CLI has no mechanism for it. `environ` is the environment the CLI starts from
    (the engine's own by default)."""
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
    if cli == "gemini":
        context = into / "skill-context"
        context.mkdir(parents=True, exist_ok=True)
        atomic_write(context / "GEMINI.md", instructions(skill).encode())
        return Mounted(skill.name, argv=("--include-directories", str(context)))
    if cli == "opencode":
        path = into / "skill" / f"{skill.name}.md"
        content = opencode_config(
            (os.environ if environ is None else environ).get(CONFIG_VAR, ""), path
        )
        if content is None:
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, instructions(skill).encode())
        return Mounted(skill.name, env={CONFIG_VAR: content})
    return None


def opencode_config(existing: str, path: Path) -> str | None:
    """The inline opencode config that adds `path` to the instructions of the one the user
    set (`existing`, maybe ""); None when theirs is not a JSON object we can extend (then
    nothing is mounted and the prompt carries the protocol: their config stays as it is)."""
    config: object = {}
    if existing.strip():
        try:
            config = json.loads(existing)
        except ValueError:
            return None
    if not isinstance(config, dict):
        return None
    listed = config.get("instructions", [])
    if not isinstance(listed, list):
        return None
    return json.dumps({**config, "instructions": [*listed, str(path)]})


def skill_md(skill: Skill) -> str:
    """SKILL.md as Claude Code (and the Agent Skills format) reads it."""
    description = " ".join(skill.description.split())
    return f"---\nname: {skill.name}\ndescription: {json.dumps(description)}\n---\n\n{skill.body}"


def instructions(skill: Skill) -> str:
    return f"# Skill: {skill.name}\n\n{skill.description}\n\n{skill.body}"
