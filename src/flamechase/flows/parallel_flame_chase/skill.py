"""The skill parallel_flame_chase brings, `parallel-flame-chase`: the lane protocol (actor,
report, artifact, checkpoint, resume), mounted onto every session the flow opens whose CLI
loads skills or instructions (the runtime says which): each lane actor's, which then follows
it, and the coordinator's, which plans for lanes that follow it (what the coordinator itself
must do stays in its prompt). A prompt then refers to the skill instead of repeating it.

Its parts are also the variants' (parallel_flame_chase_mission's skill keeps them but the
report's, which missions change)."""

from __future__ import annotations

from flamechase.flow import Skill

NAME = "parallel-flame-chase"

SESSIONS = """\
## Who follows it
This protocol is mounted on every session of the run. Lane actors follow it. The coordinator
does not work in a lane: it plans one mission per lane for lanes that follow it; what the
coordinator itself must do is in its own prompt.
"""

ACTOR = """\
## Actor
A lane has two actors (a and b); they take turns, each turn in a fresh session. Nothing of
this conversation reaches the next turn: read the repository and TASK.md first, leave durable
work in your tree and evidence in your report, not conversational memory. Do substantive work
now, test claims in proportion, never invent success. No remote release, deployment, purchase
or messaging.
"""

WHERE = """\
## Where you write
- lane-1 owns integration: it alone edits the original source. It integrates other lanes'
  work only from runtime-validated artifact packages (listed with sha256 in the reports it
  is given; each artifact's `blob` is a read-only frozen copy, or extract a package with
  `flamechase artifacts RUN_ID REPORT_ID --extract DIR`). Recheck their assumptions in the
  source: integration is new work, not copying. Keep the source coherent and tested.
- Every other lane works only in its private snapshot and never edits the original source.
  It publishes every deliverable as explicit files under its artifact root, with
  integration notes lane-1 can follow.
"""

REPORT = """\
## Report
Finish every turn by writing the JSON report to the path the turn's prompt gives, matching
its schema. Status: `progress` = work landed; `deliverable_ready` = declared artifact files
exist and another lane can rebuild the result; `no_result` = a falsifiable direction was
exhausted; `blocked` = a concrete blocker (this holds the lane until the coordinator's next
plan).
"""

ARTIFACTS = """\
## Artifacts and candidates
Artifact paths are relative to your artifact root. With a `deliverable_ready` package you may
add a `submission` with the value the task's evaluator printed; the runtime re-runs the
evaluator itself and ranks only what it measures. Use new artifact paths per candidate; never
alter published files.
"""

CHECKPOINT = """\
## Checkpoint
You may write a checkpoint to the path the prompt gives, as
`{"identity": <the identity the prompt gives>, "phase": "terminal", "report": <your report>}`;
it is used only if your session dies before the report is written.
"""

RESUME = """\
## Resume
Reports from other lanes reach you until your lane completes a valid turn that acknowledges
them (they are in the prompt and in the inbox file it names). A lane picks up where its last
valid turn left it: read the tree and the reports, not your memory.
"""

BODY = "# The lane protocol of a parallel flame chase\n\n" + "\n".join(
    (SESSIONS, ACTOR, WHERE, REPORT, ARTIFACTS, CHECKPOINT, RESUME)
)

SKILL = Skill(
    name=NAME,
    description=(
        "The parallel flame chase lane protocol: how an actor works, writes its turn report, "
        "publishes artifacts, checkpoints and resumes. Load it before doing anything in a "
        "turn of this run, the coordinator's too."
    ),
    body=BODY,
)
