"""Receipts and the integration policy: what gets measured, and what becomes main.

A PR made ready is measured by the runtime: a clean checkout of exactly its head (which also
says what the PR changes since its merge base with main: paths the task does not allow reject
it), then the evaluator, jailed as the PR's lane. The receipt (commit, tree, command, exit
code, duration, output hash, value) is kept in the flow's state and the run database, where
lanes cannot write; only then is the PR ready.

Integration takes one PR at a time: the best ready score, if it strictly beats main's (main's
is the baseline's until the first merge, so a candidate must beat the original code). Its
merge into main is a two-parent commit made in the integration clone; when the PR's head
descends from main it is exactly the measured tree, otherwise it is git's merge with the
current main (conflicts reject the PR), which the runtime measures again and merges only if
it still beats main: work merged earlier is never dropped. A stale PR (main moved since its
base) is integrated in its turn whatever its head alone scored, since only its merge can say
whether it beats main. Main moves through the central repository's hook. Ready PRs whose
receipt measured their merge and does not beat main are rejected, each with its reason, and
every rejection reaches its lane as a system report.
"""

from __future__ import annotations

from typing import Any

from flamechase.flow import Emit
from flamechase.flows.git_pr import events as gev
from flamechase.flows.git_pr import frozen, jobs, programs
from flamechase.flows.git_pr.model import (
    CENTRAL,
    INTEGRATION,
    GitState,
    Job,
    LedgerEntry,
    PullRequest,
    Receipt,
    Review,
    checkout_place,
    result_of,
)
from flamechase.flows.parallel_flame_chase import events as pev

__all__ = ["evaluate", "fresh", "integrate", "on_result", "reject"]

MERGE_CHECKOUT = "checkouts/merge"
SHOWN = 5  # disallowed paths named in a rejection


def better(value: float, than: float | None, direction: str) -> bool:
    if than is None:
        return True
    return value < than if direction == "minimize" else value > than


def _fmt(value: float | None) -> str:
    return "no value" if value is None else f"{value:g}"


def reject(state: GitState, pr_id: str, reason: str, at: str) -> GitState:
    pr = state.pr(pr_id).replace(status="rejected", reason=reason)
    state = state.with_pr(pr)
    if state.review is not None and state.review.pr == pr_id:
        state = state.replace(review=None)
    state = jobs.owe(state, Emit(gev.PrRejected(lane=pr.lane, pr=pr.id, reason=reason)))
    return jobs.system_report(
        state,
        [pr.lane],
        "pr_rejected",
        f"{pr.id} was rejected: {reason}",
        at,
        {"pr": pr.id, "branch": pr.branch, "reason": reason},
    )


def evaluate(state: GitState, pr_id: str) -> GitState:
    """Measure a PR made ready: first a clean checkout of exactly its head."""
    pr = state.pr(pr_id)
    central = state.place(CENTRAL)
    return jobs.add(
        state,
        "checkout",
        subject=pr.id,
        place=checkout_place(pr.lane),
        reads=(CENTRAL,),
        argv=(*programs.checkout(central, pr.head, state.main, state.allowed), *frozen.args(state)),
    )


def _measure(state: GitState, purpose: str, subject: str, place: str, lane: str) -> GitState:
    p = state.params
    return jobs.add(
        state,
        purpose,
        subject=subject,
        place=place,
        lane=lane,
        command=p.evaluator,
        pattern=p.metric_pattern,
        timeout=p.evaluator_timeout,
    )


def _receipt(job: Job, receipt: dict[str, Any], commit: str, tree: str, at: str) -> Receipt:
    value = receipt.get("value")
    return Receipt(
        key=job.key,
        commit=commit,
        tree=tree,
        command=job.command,
        exit_code=receipt.get("exit_code"),
        duration=receipt.get("duration") or 0.0,
        output_sha256=receipt.get("output_sha256"),
        value=float(value) if isinstance(value, int | float) else None,
        error=receipt.get("error"),
        at=at,
    )


def _checked_out(
    state: GitState, pr: PullRequest, result: dict[str, Any], at: str
) -> GitState | str:
    """The checkout's facts, or the reason to reject."""
    if result.get("error"):
        return f"the runtime could not check out {pr.head[:12]}: {result['error']}"
    bad = [str(p) for p in result.get("disallowed") or ()]
    if bad:
        more = int(result.get("disallowed_count") or len(bad)) - min(len(bad), SHOWN)
        return (
            "it changes paths the task does not allow: "
            + ", ".join(bad[:SHOWN])
            + (f" and {more} more" if more > 0 else "")
            + f" (allowed: {', '.join(state.allowed)})"
        )
    return state


def _on_checkout(state: GitState, job: Job, result: dict[str, Any], at: str) -> GitState:
    pr = state.prs.get(job.subject)
    if pr is None or pr.status != "evaluating":
        return state  # superseded meanwhile
    if result.get("tampered"):
        return frozen.tamper(state, pr.id, [str(p) for p in result["tampered"]], at, merged=False)
    checked = _checked_out(state, pr, result, at)
    if isinstance(checked, str):
        return reject(state, pr.id, checked, at)
    pr = pr.replace(
        tree=result.get("tree"),
        base=result.get("base"),
        descends=bool(result.get("descends")),
        changed=int(result.get("changed") or 0),
    )
    return _measure(state.with_pr(pr), "measure", pr.id, job.place, pr.lane)


def _on_measure(state: GitState, job: Job, receipt: dict[str, Any], at: str) -> GitState:
    pr = state.prs.get(job.subject)
    if pr is None or pr.status != "evaluating":
        return state
    rec = _receipt(job, receipt, pr.head, pr.tree or "", at)
    pr = pr.replace(receipt=rec)
    if rec.error or rec.value is None:
        return reject(
            state.with_pr(pr),
            pr.id,
            f"the evaluator failed on {pr.head[:12]}: {rec.error or 'no value'}",
            at,
        )
    seq = state.ready_seq + 1
    pr = pr.replace(status="ready", score=rec.value, ready_seq=seq)
    state = state.with_pr(pr).replace(ready_seq=seq)
    state = jobs.owe(
        state,
        Emit(
            gev.PrReady(
                lane=pr.lane, pr=pr.id, commit=pr.head, value=rec.value, main_value=state.main_score
            )
        ),
    )
    stale = (
        ""
        if fresh(state, pr)
        else "; main moved since your branch's base, so what decides is its merge with the "
        "current main, which the runtime measures when it integrates it"
    )
    return jobs.system_report(
        state,
        [pr.lane],
        "pr_ready",
        f"{pr.id} is ready: the runtime measured {state.params.metric} = {_fmt(rec.value)} "
        f"at {pr.head[:12]} (main: {_fmt(state.main_score)}){stale}",
        at,
        {"pr": pr.id, "value": rec.value, "receipt": rec.key},
    )


def fresh(state: GitState, pr: PullRequest) -> bool:
    """Whether the PR's receipt measured what its merge with the current main holds (its head
    descends from the current main); otherwise only measuring that merge can judge it."""
    return pr.descends and pr.base is not None and pr.base == state.main


def integrate(state: GitState, at: str) -> GitState:
    """Start integrating the best ready PR; reject the ready PRs whose own receipt measured
    their merge with main and does not beat it. A stale PR (main moved since its base) is
    judged by its real merge with the current main, whatever its head alone scored."""
    main = state.main
    if state.review is not None or not state.main_measured or main is None:
        return state
    p = state.params
    ready = [pr for pr in state.prs.values() if pr.status == "ready" and pr.score is not None]
    wins = {pr.id for pr in ready if better(float(pr.score or 0.0), state.main_score, p.direction)}
    for pr in [pr for pr in ready if pr.id not in wins and fresh(state, pr)]:
        state = reject(
            state,
            pr.id,
            f"{p.metric} {_fmt(pr.score)} does not beat main's "
            f"{_fmt(state.main_score)} ({p.direction})",
            at,
        )
    candidates = [pr for pr in ready if pr.id in wins or not fresh(state, pr)]
    if not candidates:
        return state
    sign = 1.0 if p.direction == "minimize" else -1.0
    # Those whose own value beats main first (best first, ties: ready first), then the stale
    # ones that need their merge measured to know.
    candidates.sort(
        key=lambda pr: (pr.id not in wins, sign * float(pr.score or 0.0), pr.ready_seq, pr.id)
    )
    best = candidates[0]
    review = Review(pr=best.id, main=main, score=best.score)
    state = state.with_pr(best.replace(status="reviewing"))
    state = state.replace(review=review)
    state = jobs.owe(
        state,
        Emit(
            gev.PrReviewing(
                lane=best.lane,
                pr=best.id,
                value=best.score,
                main_value=state.main_score,
                stale=not fresh(state, best),
            )
        ),
    )
    return jobs.add(
        state,
        "merge",
        subject=best.id,
        place=INTEGRATION,
        reads=(CENTRAL,),
        argv=programs.merge(best, main),
        env=programs.runtime_policy(),
    )


def _on_merge(state: GitState, job: Job, result: dict[str, Any], at: str) -> GitState:
    review = state.review
    if review is None or review.pr != job.subject:
        return state
    pr = state.pr(review.pr)
    if result.get("conflicts"):
        paths = ", ".join(str(x) for x in result["conflicts"][:SHOWN])
        return reject(
            state,
            pr.id,
            f"it conflicts with main in {paths} (main moved since "
            "your branch started); rebase your branch on origin/main "
            "and open a new PR",
            at,
        )
    if result.get("error") or not result.get("merge"):
        return reject(state, pr.id, f"the runtime could not merge it: {result.get('error')}", at)
    merge, fast = str(result["merge"]), bool(result.get("fast"))
    state = state.replace(review=review.replace(merge=merge, fast=fast))
    if fast:  # the merge holds exactly the measured tree
        return _push_main(state)
    return jobs.add(
        state,
        "merge-checkout",
        subject=pr.id,
        place=MERGE_CHECKOUT,
        reads=(CENTRAL,),
        argv=(
            *programs.checkout(state.place(CENTRAL), merge, review.main, state.allowed),
            *frozen.args(state),
        ),
    )


def _on_merge_checkout(state: GitState, job: Job, result: dict[str, Any], at: str) -> GitState:
    review = state.review
    if review is None or review.pr != job.subject or review.merge is None:
        return state
    pr = state.pr(review.pr)
    if result.get("tampered"):
        return frozen.tamper(state, pr.id, [str(p) for p in result["tampered"]], at, merged=True)
    checked = _checked_out(state, pr, result, at)
    if isinstance(checked, str):
        return reject(state, pr.id, f"its merge with main failed: {checked}", at)
    state = state.replace(
        review=review.replace(
            receipt=Receipt(
                key="",
                commit=review.merge,
                tree=str(result.get("tree")),
                command=state.params.evaluator,
            )
        )
    )
    return _measure(state, "merge-measure", pr.id, MERGE_CHECKOUT, pr.lane)


def _on_merge_measure(state: GitState, job: Job, receipt: dict[str, Any], at: str) -> GitState:
    review = state.review
    if review is None or review.pr != job.subject or review.receipt is None:
        return state
    p = state.params
    rec = _receipt(job, receipt, review.receipt.commit, review.receipt.tree, at)
    state = state.replace(review=review.replace(receipt=rec, score=rec.value))
    if rec.error or rec.value is None:
        return reject(
            state,
            review.pr,
            f"its merge with the current main failed the evaluator: {rec.error or 'no value'}",
            at,
        )
    if not better(rec.value, state.main_score, p.direction):
        return reject(
            state,
            review.pr,
            f"merged with the current main it measures "
            f"{p.metric} {_fmt(rec.value)}, which does not beat "
            f"main's {_fmt(state.main_score)}",
            at,
        )
    return _push_main(state)


def _push_main(state: GitState) -> GitState:
    review = state.review
    assert review is not None and review.merge is not None
    pr = state.pr(review.pr)
    return jobs.add(
        state,
        "push-main",
        subject=pr.id,
        place=CENTRAL,
        argv=programs.push_main(state.place(CENTRAL), review.merge, review.main),
        env=programs.runtime_policy(pr, parent=review.main, commit=review.merge),
    )


def _on_push_main(state: GitState, job: Job, result: dict[str, Any], at: str) -> GitState:
    review = state.review
    if review is None or review.pr != job.subject or review.merge is None:
        return state
    if result.get("main") != review.merge:
        why = result.get("refused") or result.get("error") or "main did not move"
        return reject(state, review.pr, f"main refused the merge: {why}", at)
    return _merged(state, review, at)


# long: the state a merge leaves, field by field, in one update
def _merged(state: GitState, review: Review, at: str) -> GitState:
    p = state.params
    pr = state.pr(review.pr)
    receipts = tuple(r.key for r in (pr.receipt, None if review.fast else review.receipt) if r)
    entry = LedgerEntry(
        seq=len(state.ledger) + 1,
        pr=pr.id,
        lane=pr.lane,
        prior_main=review.main,
        merge=review.merge or "",
        score=review.score,
        prior_score=state.main_score,
        fast=review.fast,
        receipts=receipts,
        at=at,
    )
    merged = pr.replace(
        status="merged", merge=review.merge, merge_receipt=None if review.fast else review.receipt
    )
    publication = state.publication.replace(target=review.merge, retry_at=None)
    state = state.with_pr(merged).replace(
        review=None,
        main=review.merge,
        main_score=review.score,
        ledger=(*state.ledger, entry),
        publication=publication,
    )
    value = float(review.score) if review.score is not None else 0.0
    state = jobs.owe(
        state,
        Emit(
            gev.PrMerged(
                lane=pr.lane,
                pr=pr.id,
                merge=entry.merge,
                value=review.score,
                prior=entry.prior_score,
                remeasured=not review.fast,
            )
        ),
        Emit(
            pev.CandidateSubmitted(
                lane=pr.lane,
                report_id=pr.id,
                metric=p.metric,
                direction=p.direction,
                claimed=value,
                measured=value,
                verified=True,
                ranked=True,
            )
        ),
        Emit(
            pev.CandidateBestUpdated(
                lane=pr.lane,
                report_id=pr.id,
                metric=p.metric,
                direction=p.direction,
                value=review.score,
            )
        ),
    )
    return jobs.system_report(
        state,
        list(state.book.lanes),
        "pr_merged",
        f"{pr.id} from {pr.lane} ({pr.title}) was merged into main at {entry.merge[:12]}: "
        f"{p.metric} {_fmt(entry.prior_score)} -> {_fmt(review.score)}. Start new work from "
        "origin/main (git fetch origin).",
        at,
        {"pr": pr.id, "lane": pr.lane, "merge": entry.merge, "value": review.score},
    )


HANDLERS = {
    "checkout": _on_checkout,
    "merge": _on_merge,
    "merge-checkout": _on_merge_checkout,
    "push-main": _on_push_main,
}
MEASURES = {"measure": _on_measure, "merge-measure": _on_merge_measure}


def on_result(state: GitState, job: Job, receipt: dict[str, Any], at: str) -> GitState:
    """Fold the result of one of this module's jobs."""
    if job.purpose in MEASURES:
        return MEASURES[job.purpose](state, job, receipt, at)
    return HANDLERS[job.purpose](state, job, result_of(receipt), at)
