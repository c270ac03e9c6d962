"""Publication: the source tree follows main, one checked publication after each merge.

The runtime program (`flamechase.tools.git_pr.publish`) runs in the source: it writes only the paths
main changed since the last publication, each checked against what the source held, and in a
git work tree commits them on the user's current branch. When it refuses (a path edited
outside the run, or uncommitted changes to it), publication is held, the reason is journaled,
and it is tried again every RETRY seconds and after every merge, until the source lets it.
"""

from __future__ import annotations

from typing import Any

from flamechase.flow import Command, Emit, Run, WaitUntil
from flamechase.flows.git_pr import events as gev
from flamechase.flows.git_pr import jobs, programs
from flamechase.flows.git_pr.model import CENTRAL, GitState, LedgerEntry, epoch, result_of

__all__ = ["commands", "on_result"]

RETRY = 60.0
KEY = "publish/"


def _since(state: GitState) -> list[LedgerEntry]:
    """The merges main has and the source does not."""
    done = [n for n, e in enumerate(state.ledger) if e.merge == state.published]
    return list(state.ledger[done[-1] + 1 :] if done else state.ledger)


def _message(state: GitState, target: str) -> str:
    entries = _since(state)
    names = ", ".join(e.pr for e in entries) or "main"
    lines = [f"flamechase: merge {names} into the source", ""]
    for e in entries:
        pr = state.prs.get(e.pr)
        title = pr.title if pr else ""
        lines.append(
            f"- {e.pr} from {e.lane}: {title} ({state.params.metric} {e.prior_score} -> {e.score})"
        )
    lines += ["", f"Flamechase-Run: {state.book.run_id}", f"Flamechase-Main: {target}"]
    return "\n".join(lines) + "\n"


def commands(state: GitState, now: float) -> list[Command]:
    pub = state.publication
    target = pub.target
    if target is None or target == state.published or state.published is None:
        return []
    if pub.retry_at is not None and now < pub.retry_at:
        return [WaitUntil(pub.retry_at)]
    return [
        Run(
            key=f"{KEY}{pub.attempts + 1}",
            place="source",
            reads=(CENTRAL,),
            jailed=False,
            argv=programs.publish(
                state.place(CENTRAL), state.published, target, _message(state, target)
            ),
            label=f"the publication of main ({target[:12]}) into your tree",
        )
    ]


def on_result(state: GitState, receipt: dict[str, Any], at: str) -> GitState:
    pub = state.publication.replace(attempts=state.publication.attempts + 1)
    result = result_of(receipt)
    published = result.get("published")
    if published:
        state = state.replace(
            published=str(published), publication=pub.replace(held=None, retry_at=None)
        )
        return jobs.owe(
            state,
            Emit(
                gev.MainPublished(
                    commit=str(published),
                    paths=int(result.get("changed") or 0),
                    source_commit=result.get("commit"),
                )
            ),
        )
    reason = str(result.get("refused") or result.get("error") or "publication failed")
    state = state.replace(publication=pub.replace(held=reason, retry_at=epoch(at) + RETRY))
    if reason == pub.held:  # said already; not again every RETRY seconds
        return state
    return jobs.owe(state, Emit(gev.PublicationHeld(commit=pub.target or "", reason=reason)))
