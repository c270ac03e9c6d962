"""The skill parallel_flame_chase:git_pr brings, `parallel-flame-chase-git-pr`: the lane protocol
as it applies to pull requests, mounted onto every session of the variant whose CLI loads
skills or instructions (each lane actor's and the coordinator's, which plans for lanes that
follow it). What differs from parallel_flame_chase's: no lane is privileged and none edits the
original source; work lands as pushed branches and pull requests the runtime measures and
merges, never as artifact packages; the runtime's decisions come back as system reports. The
facts of a turn (its lane, clone, this installation's `flamechase pr`, the evaluator, the
metric, the paths a PR may change, the frozen files, main and the lane's PRs) stay in its
prompt."""

from __future__ import annotations

from flamechase.flow import Skill
from flamechase.flows.parallel_flame_chase.skill import ACTOR, CHECKPOINT, SESSIONS

NAME = "parallel-flame-chase-git-pr"

WHERE = """\
## Where you write
Every lane works in its own git clone of a central repository whose `main` started as the
source's baseline; no lane is privileged. Never edit the original source, another lane's
clone or the central repository: your work reaches `main` only as a pull request the runtime
merges, and it publishes main into the source itself.
"""

PULL_REQUESTS = """\
## How work lands: branches and pull requests
`fc-pr` below is this installation's `flamechase pr` (the prompt gives its path); LANE is
your lane's name (`lane-2`).
1. Start from the latest main: `git fetch origin && git checkout -B LANE/NAME origin/main`
   (NAME: short, new for each idea).
2. Work and test in your clone; commit (the clone has its own git identity).
3. `git push origin LANE/NAME`. You may push only your own branches (`LANE/...`); main takes
   only the runtime's merges; any other ref (a tag, another lane's branch) is refused. A
   branch you opened a PR from is kept: deleting it is refused.
4. `fc-pr open --title TITLE --hypothesis WHAT_YOU_EXPECT` on that branch: a draft PR.
5. `fc-pr ready` on the branch (or `fc-pr ready PR000123`) when it should be judged: the
   runtime checks out exactly your pushed head in a clean place and runs the evaluator
   itself; its receipt, not your claim, decides. The branch is then frozen (pushes moving or
   deleting it are refused): go on on a new branch. One ready PR per lane: a newer one
   supersedes the older.
6. `fc-pr list` and `fc-pr show PR000123` show PRs, receipts and main's score.
Pushes and PR requests are carried out by the runtime when your turn ends.

## What the runtime decides
- The evaluator is frozen: its files were frozen from the baseline at the start (the prompt
  names them) and every PR is measured with them as they were. A PR that changes, deletes
  or replaces one is `tampered`: never measured, never merged.
- A PR may change only the paths the prompt allows.
- The best ready PR whose measured value strictly beats main's is merged. If your branch
  does not contain the current main, the runtime merges it with main and measures that merge,
  whatever your head alone scored, and merges it only if the merge beats main (conflicts
  reject the PR: rebase on origin/main and open a new one).
"""

REPORT = """\
## Report
Finish every turn by writing the JSON report to the path the turn's prompt gives, matching
its schema. Status: `progress` = work landed; `no_result` = a falsifiable direction was
exhausted; `blocked` = a concrete blocker (this holds the lane until the coordinator's next
plan). Your PRs are your deliverables: name them in your report. There are no artifact
packages in this variant: declare none; what another lane should use is in main once merged.
"""

RESUME = """\
## Resume
Reports not yet acknowledged by your lane reach you until a valid turn of it acknowledges
them (in the prompt and in the inbox file it names): other lanes' reports, and the runtime's
own system reports (source `system:LANE`) on what became of your pushes and requests
(refusals with reasons, measurements, merges). A lane picks up where its last valid turn left
it: read your clone, `fc-pr list` and the reports, not your memory.
"""

BODY = "# The lane protocol of a Git/PR parallel flame chase\n\n" + "\n".join(
    (SESSIONS, ACTOR, WHERE, PULL_REQUESTS, REPORT, CHECKPOINT, RESUME)
)

SKILL = Skill(
    name=NAME,
    description=(
        "The Git/PR parallel flame chase lane protocol: how an actor works in its own clone, "
        "lands work as pull requests the runtime measures and merges, reports, checkpoints "
        "and resumes. Load it before doing anything in a turn of this run, the "
        "coordinator's too."
    ),
    body=BODY,
)
