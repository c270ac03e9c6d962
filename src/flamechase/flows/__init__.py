"""Flows: the built-in flows, each a package of its own holding everything of it (its decider,
params, prompts, event kinds and how they show, simulated actor, the commands it adds to the
CLI), written on the public API in `flamechase.flow` exactly as a user's flow is: a pure
decider over events. This module is their registry; how `-f` finds a flow (a built-in, a
path, a module, git, an index) is `flamechase.loader`'s job. Must not import the engine.
"""

from __future__ import annotations

# The commands a built-in flow adds to the CLI: name -> (module, attribute). Loaded only when
# the command runs, as the CLI's own are.
COMMANDS: dict[str, tuple[str, str]] = {
    "pr": ("flamechase.flows.git_pr.cli", "command"),
}

BUILTIN: dict[str, str] = {
    "flame_chase": "flamechase.flows.flame_chase",
    "parallel_flame_chase": "flamechase.flows.parallel_flame_chase",
    "parallel_flame_chase_mission": "flamechase.flows.parallel_flame_chase_mission",
    "parrallello": "flamechase.flows.parrallello",
}

# Built-in variants, `NAME:VARIANT` -> module defining FLOW. A variant is a flow of its own
# (its own name, roles and params) offered beside the flow it varies.
VARIANTS: dict[str, str] = {
    "parallel_flame_chase:git_pr": "flamechase.flows.git_pr",
}

# The flow `flamechase demo` runs on the bundled sample.
DEMO = "parallel_flame_chase"


def builtin_names() -> list[str]:
    """Every built-in flow and variant, as `-f` names them."""
    return sorted([*BUILTIN, *VARIANTS])


def variant_names() -> list[str]:
    return sorted(VARIANTS)
