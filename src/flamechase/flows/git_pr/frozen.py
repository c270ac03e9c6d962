"""The frozen evaluator: every PR is measured with the evaluator's files as the baseline had
them, and a PR that changes one of them is `tampered`.

The runtime freezes the evaluator's files (those its command names, and the
`evaluator_files` globs) from the baseline's clean checkout before anything runs there
(`setup`). Every clean checkout the runtime measures (a PR's head, its merge with main) is
judged against them: one whose tree changes, deletes or replaces a frozen file, adds a file
at a path the command names that the baseline lacked, or holds anything else than the
baseline under an `evaluator_files` glob (a file it adds there included), is never measured
and never merged, and the lane is
told which files and why; in every other checkout the frozen files are put back from the
baseline before the evaluator runs (`tools.git_pr.frozen`).
"""

from __future__ import annotations

import shlex

from flamechase.flow import Emit
from flamechase.flows.git_pr import events as gev
from flamechase.flows.git_pr import jobs
from flamechase.flows.git_pr.model import GitState

__all__ = ["args", "tamper"]

SHOWN = 10  # frozen files named in a verdict


def named_paths(command: str) -> list[str]:
    """The tree paths the evaluator's command names (its words that could be one, as the
    engine's freeze reads them): no PR may put a file there that the baseline did not have
    (the files among them are frozen; a directory's contents are frozen only by an
    `evaluator_files` glob: `cd src && ...` must not freeze src)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    out = []
    for word in words:
        rel = word.removeprefix("./").rstrip("/")
        parts = rel.split("/")
        # A path, not a glob: a word with a wildcard (an argument) is no file it names.
        literal = not any(ch in rel for ch in "*?[")
        if rel and literal and not rel.startswith(("/", "-")) and not {"", ".", ".."} & set(parts):
            out.append(rel)
    return list(dict.fromkeys(out))


def args(state: GitState) -> tuple[str, ...]:
    """The checkout program's arguments that judge a commit against the frozen evaluator."""
    if state.frozen is None or state.baseline is None:
        return ()
    out = ["--baseline", state.baseline]
    for path, sha in sorted(state.frozen.items()):
        out += ["--frozen", f"{path}={sha}"]
    for path in named_paths(state.params.evaluator):
        out += ["--named", path]
    for glob in state.params.evaluator_files:
        out += ["--watch", glob]
    return tuple(out)


def tamper(state: GitState, pr_id: str, files: list[str], at: str, *, merged: bool) -> GitState:
    """Record a PR that changes frozen files: `tampered`, never measured or merged; its lane
    hears which files, and why, in its next turn."""
    pr = state.pr(pr_id)
    named = ", ".join(files[:SHOWN]) + (
        f" and {len(files) - SHOWN} more" if len(files) > SHOWN else ""
    )
    what = "its merge with main changes" if merged else "it changes"
    reason = f"{what} the evaluator's frozen files: {named}"
    state = state.with_pr(pr.replace(status="tampered", reason=reason, tampered=tuple(files)))
    if state.review is not None and state.review.pr == pr_id:
        state = state.replace(review=None)
    state = jobs.owe(state, Emit(gev.PrTampered(lane=pr.lane, pr=pr.id, files=list(files))))
    return jobs.system_report(
        state,
        [pr.lane],
        "pr_tampered",
        f"{pr.id} is tampered and will never be merged: {reason}. The runtime froze the "
        "evaluator's files from the baseline at the start of the run and measures every PR "
        f"with them as they were; `{state.params.evaluator}` is not yours to change. Open a "
        "new PR from a branch that leaves those files exactly as origin/main has them.",
        at,
        {"pr": pr.id, "branch": pr.branch, "files": list(files)},
    )
