"""The prompt asks for a flow's agents: `$FLOW TASK` for a flow with no profile asks for each
role by name, in the order `-a` fills them, offering the agent CLIs found on PATH and the
saved accounts with a default (the answer before, else the first offer), then offers to keep
the answers as FLOW's profile. Ctrl-C (or Ctrl-D) at any question cancels: nothing starts.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING

from flamechase.errors import FlamechaseError

if TYPE_CHECKING:
    from flamechase.flow import Role

# One answer: the text typed after a question (KeyboardInterrupt/EOFError cancel).
Ask = Callable[[str], str]
Say = Callable[[str], None]

# The model an offer names for each CLI (the spec needs one); typing another is one edit.
SUGGESTED = {
    "claude": "claude-opus-4-5",
    "codex": "gpt-5.1-codex",
    "gemini": "gemini-2.5-pro",
    "opencode": "anthropic/claude-opus-4-5",
}
SPEC_WORDS = "CLI[@ACCOUNT]/MODEL[:EFFORT] or exec:PATH"


class Cancelled(Exception):
    """The user pressed Ctrl-C or Ctrl-D at a question."""


def offers() -> list[str]:
    """Specs to offer: each agent CLI on PATH, then each saved account of one."""
    from flamechase.agents import accounts
    from flamechase.agents.inventory import CLIS

    found = [f"{cli}/{SUGGESTED[cli]}" for cli in CLIS if cli in SUGGESTED and shutil.which(cli)]
    try:
        saved = accounts.list_accounts()
    except (FlamechaseError, OSError):  # an unreadable accounts dir offers none
        saved = []
    found += [f"{a.cli}@{a.name}/{SUGGESTED[a.cli]}" for a in saved if a.cli in SUGGESTED]
    return found


def needs_asking(flow_ref: str) -> bool:
    """Whether `$FLOW` has no profile (a broken profiles file is the run's to report)."""
    from flamechase.cli import profile

    try:
        return flow_ref not in profile.load_all()
    except FlamechaseError:
        return False


def ask_agents(flow_ref: str, ask: Ask, say: Say) -> tuple[list[str], bool]:
    """(`ROLE=SPEC` for every role, whether they were saved as the profile); Cancelled."""
    from flamechase.agents.spec import parse_choices
    from flamechase.cli import profile
    from flamechase.cli.flows import _defaults
    from flamechase.loader import load_flow

    flow = load_flow(flow_ref)
    params, _required = _defaults(flow)
    roles = _unique(flow.describe_roles(params))
    offered = offers()
    say(
        f"{flow_ref} has no profile; it needs {len(roles)} agent(s), asked by name"
        + (
            ": " + "  ".join(f"{n}) {o}" for n, o in enumerate(offered, 1))
            if offered
            else " (no agent CLI found on PATH)"
        )
    )
    say(f"answer a number, a spec ({SPEC_WORDS}), or Enter for the default; Ctrl-C cancels")
    answers: list[str] = []
    default = offered[0] if offered else None
    for role in roles:
        about = f" ({role.description})" if role.description else ""
        while True:
            text = answer(ask, f"{role.name}{about} [{default or 'no default'}]: ")
            spec = _pick(text, offered, default)
            if spec is None:
                say(f"give {role.name} an agent: {SPEC_WORDS}")
                continue
            try:
                parse_choices(spec)  # alternatives, `A|B`, as -a takes them
            except FlamechaseError as exc:
                say(f"{exc}")
                continue
            break
        answers.append(f"{role.name}={spec}")
        default = spec
    keep = answer(ask, f"save these as the profile for {flow_ref}? [Y/n]: ").strip().lower()
    if keep in ("", "y", "yes"):
        try:
            path = profile.save(flow_ref, profile.Profile(agents=answers))
        except FlamechaseError as exc:
            say(f"not saved: {exc}")
            return answers, False
        say(f"profile for {flow_ref} saved in {path} (flamechase profile show {flow_ref})")
        return answers, True
    return answers, False


def _unique(roles: list[Role]) -> list[Role]:
    """Each role once (lanes may share their actors' roles), in declared order."""
    return list({r.name: r for r in reversed(roles)}.values())[::-1]


def answer(ask: Ask, question: str) -> str:
    try:
        return ask(question)
    except (KeyboardInterrupt, EOFError):
        raise Cancelled from None


def _pick(text: str, offered: list[str], default: str | None) -> str | None:
    text = text.strip()
    if not text:
        return default
    if text.isdigit() and 1 <= int(text) <= len(offered):
        return offered[int(text) - 1]
    return text
