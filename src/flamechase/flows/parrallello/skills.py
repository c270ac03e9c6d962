"""The skills parrallello brings: `parrallello-builder` and `parrallello-critic`, each role's
rules (the same words the brief lists under `rules`, from `briefs`), mounted onto the role's
sessions where its CLI loads skills or instructions; the prompt then names the skill instead of
listing the rules. The planner and prep have their own words and no skill."""

from __future__ import annotations

from collections.abc import Sequence

from flamechase.flow import Skill
from flamechase.flows.parrallello.briefs import CRITIC_RULES, RULES

__all__ = ["BUILDER", "CRITIC", "for_role"]


def _body(title: str, intro: str, rules: Sequence[str]) -> str:
    return f"# {title}\n\n{intro}\n\n## Rules\n" + "".join(f"- {r}\n" for r in rules)


BUILDER = Skill(
    name="parrallello-builder",
    description=(
        "The rules of a parrallello builder: your files only, the frozen gate, jobs and the "
        "lock, the handoff note. Load it before doing anything in a builder turn."
    ),
    body=_body(
        "The parrallello builder's rules",
        "You are one fresh builder of a front: you fix your tickets, most severe first, within "
        "your files; the facts of this round (front, tickets, files, gate commands, earlier "
        "handoff notes) are in the brief the prompt gives and in $FLAMECHASE_BRIEF.",
        RULES,
    ),
)

CRITIC = Skill(
    name="parrallello-critic",
    description=(
        "The rules of a parrallello critic: refute with evidence, severities, gate items, "
        "numbers first and eyes last, the approval rule. Load it before judging a round."
    ),
    body=_body(
        "The parrallello critic's rules",
        "You are a fresh adversarial critic of one round of a front; the facts of the round "
        "(the gate's full run, each builder's handoff and diff, open tickets, history) are in "
        "the brief the prompt gives and in $FLAMECHASE_BRIEF.",
        CRITIC_RULES,
    ),
)


def for_role(role: str) -> Skill | None:
    return {"builder": BUILDER, "critic": CRITIC}.get(role)
