"""The skill parallel_flame_chase_mission brings, `parallel-flame-chase-mission`:
parallel_flame_chase's lane protocol with its mission rules (a report's status is the
mission's outcome, audits, lane 1's integration missions), mounted onto every session of the
flow whose CLI loads skills or instructions: each lane actor's, and the coordinator's, which
plans the bounded missions and decides each audit (what a plan or a decision must hold stays
in its prompt). The facts of a turn (the mission, its bounds and deadline, a package to
integrate, the audit's packet) stay in the prompt."""

from __future__ import annotations

from flamechase.flow import Skill
from flamechase.flows.parallel_flame_chase.skill import (
    ACTOR,
    ARTIFACTS,
    CHECKPOINT,
    RESUME,
    WHERE,
)

NAME = "parallel-flame-chase-mission"

SESSIONS = """\
## Who follows it
This protocol is mounted on every session of the run. Lane actors follow it. The coordinator
does not work in a lane: it plans one bounded mission per lane, then decides each audit in a
fresh session; what a plan or a decision must hold is in its own prompt.
"""

MISSIONS = """\
## Missions and the report
Each lane works on one mission at a time: a title, an objective, success criteria, a deadline
(`deadline_hours`) and a number of progress turns before an audit
(`max_turns_without_outcome`); the prompt gives yours and how far it is. Finish every turn by
writing the JSON report to the path the turn's prompt gives, matching its schema. Its status
is the mission's outcome:
- `progress`: work landed, the mission goes on;
- `deliverable_ready`: its success criteria are met and shown (lanes 2..N: with declared
  artifact files another lane can rebuild the result from);
- `no_result`: the direction is falsified;
- `blocked`: a concrete blocker.
The last three end the mission and start an audit; give their `evidence` (what you ran and
what it showed). Nothing holds a lane: a stall (too many progress turns), a passed deadline
or two failed turns in a row open an audit too.
"""

AUDITS = """\
## Audits
An audit pauses only its target lanes (a running turn finishes first) and is decided by a
fresh coordinator session from a bounded packet: your mission, your latest reports, and the
runtime's own measurement beside any score you claimed (the measurement is trusted, not the
claim). Per lane it continues the mission (its turn count and deadline restart), redirects it
(a new mission that really changes hypothesis, method or scale; a redirected lane 2..N's
private copy is remade from lane 1's tree, your edits in it dropped) or accepts a
`deliverable_ready` outcome.
"""

INTEGRATION = """\
## Lane 1's integration missions
An accepted lane 2..N deliverable is queued for lane 1. Before lane 1 sees it the runtime
re-hashes every file of the frozen package; then lane 1's own mission pauses and lane 1 gets
an integration mission with the package (each file's sha256 and read-only frozen copy):
integrate it, recheck its claims in the tree, keep the tests green, then report
`deliverable_ready` with evidence. On accept, its paused mission resumes.
"""

BODY = "# The lane protocol of a parallel flame chase with missions\n\n" + "\n".join(
    (SESSIONS, ACTOR, WHERE, MISSIONS, ARTIFACTS, AUDITS, INTEGRATION, CHECKPOINT, RESUME)
)

SKILL = Skill(
    name=NAME,
    description=(
        "The parallel flame chase lane protocol with missions: how an actor works, reports "
        "its mission's outcome, publishes artifacts, is audited, integrates, checkpoints and "
        "resumes. Load it before doing anything in a turn of this run, the coordinator's too."
    ),
    body=BODY,
)
