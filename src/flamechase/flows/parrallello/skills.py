"""The skills parrallello brings, one per role, each the role's rules (the same words the brief or
the prompt lists under `rules`, from `briefs` and `lead`): `parrallello-planner`,
`parrallello-builder`, `parrallello-critic`, `parrallello-prep` and `parrallello-lead` (the
seed's "the agent rules go into EVERY prompt"), mounted onto the role's sessions where its CLI
loads skills or instructions; the prompt then names the skill instead of listing the rules."""

from __future__ import annotations

from collections.abc import Sequence

from flamechase.flow import Skill
from flamechase.flows.parrallello import lead
from flamechase.flows.parrallello.briefs import (
    CRITIC_RULES,
    LEAD_NOTE_RULE,
    PLANNER_RULES,
    PREP_RULES,
    RULES,
)

__all__ = ["BUILDER", "CRITIC", "LEAD", "PLANNER", "PREP", "for_role"]


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
        (*RULES, LEAD_NOTE_RULE),
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
        (*CRITIC_RULES[:-1], LEAD_NOTE_RULE, CRITIC_RULES[-1]),
    ),
)


PLANNER = Skill(
    name="parrallello-planner",
    description=(
        "The rules of a parrallello planner: fronts split by files, numeric targets behind a "
        "frozen gate, waves and dependencies. Load it before writing the plan."
    ),
    body=_body(
        "The parrallello planner's rules",
        "You write the plan once: the fronts (each with its owners, gate, targets, wave and "
        "weight) and the blocks' ceiling; fresh builders and an adversarial critic then run "
        "each front in rounds. The objective, the number of fronts and the plan's shape are "
        "in the prompt.",
        PLANNER_RULES,
    ),
)

PREP = Skill(
    name="parrallello-prep",
    description=(
        "The rules of a parrallello prep agent: one pass that stages a front (gate, baseline, "
        "first tickets) without touching fronts in flight. Load it before doing anything."
    ),
    body=_body(
        "The parrallello prep agent's rules",
        "You are one fresh pass for a front of a later wave, with no critic; the facts (front, "
        "files, gate, fronts in flight) are in the brief the prompt gives and in "
        "$FLAMECHASE_BRIEF.",
        PREP_RULES,
    ),
)

LEAD = Skill(
    name="parrallello-lead",
    description=(
        "The rules of a parrallello lead between blocks: classify open items, the next "
        "tickets, a binding note, a split. Load it before deciding."
    ),
    body=_body(
        "The parrallello lead's rules",
        "You are a fresh lead of one front between its blocks; the facts (verdicts, handoff "
        "notes, open tickets, owners, contract) are in the brief the prompt gives and in "
        "$FLAMECHASE_BRIEF.",
        lead.RULES,
    ),
)


def for_role(role: str) -> Skill | None:
    roles = {"planner": PLANNER, "builder": BUILDER, "critic": CRITIC, "prep": PREP, "lead": LEAD}
    return roles.get(role)
