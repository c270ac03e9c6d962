"""The skill flame_chase brings, `flame-chase`: how its two chasers work (fresh sessions
taking turns, the report and its statuses), mounted onto each turn where the CLI loads skills
or instructions; the prompt then names it and keeps only the turn's facts."""

from __future__ import annotations

from flamechase.flow import Skill

NAME = "flame-chase"

BODY = """\
# The flame chase protocol

## Actors
Two chasers (first_chaser and second_chaser) take turns on one repository, each turn in a
fresh session: nothing of this conversation reaches the next turn, so leave your work in the
repository and your evidence in the report, not in conversational memory.

## A turn
Read the repository (and TASK.md if present) first, then do substantial, tested work toward
the objective the prompt gives. Do not invent success. If the prompt says the previous turn
failed, start from why.

## Report
Finish every turn by writing the JSON report to the path the prompt gives, in the shape it
gives, with no other keys. Status: `progress` when work landed, `no_result` when a direction
is exhausted, `blocked` for a concrete blocker; `summary` is required.
"""

SKILL = Skill(
    name=NAME,
    description=(
        "The flame chase protocol: two chasers taking turns in fresh sessions, and the turn "
        "report. Load it before doing anything in a flame chase turn."
    ),
    body=BODY,
)
