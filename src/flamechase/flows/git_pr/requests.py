"""What a lane asks with `flamechase pr open|ready` during its turn, carried out after it.

Requests are JSON objects the CLI appended to the turn's requests file; the runtime trusts
none of their claims: a branch must be the lane's own (`LANE/...`) and in the central
repository at the head the lane says it pushed. A refused request goes back to the lane as a
system report with the reason.

    {"op": "open", "branch": "lane-2/x", "head": SHA, "title": ..., "hypothesis": ...}
    {"op": "ready", "pr": "PR000003" | "branch": "lane-2/x", "head": SHA}

`ready` freezes the PR's head (the hook refuses moving or deleting it) and asks the runtime to
measure it in a clean checkout (`review.py`); a lane's older PR that was ready is superseded.
"""

from __future__ import annotations

import re
from typing import Any

from flamechase.flow import Emit
from flamechase.flows.git_pr import events as gev
from flamechase.flows.git_pr import jobs, review
from flamechase.flows.git_pr.model import (
    CLOSED,
    OPEN,
    AfterTurn,
    GitState,
    PullRequest,
    waiting_key,
)

__all__ = ["carry_out"]

MAX_OPEN = 20  # open PRs per lane
_BRANCH = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")


class Refusal(Exception):
    """A request not carried out; `str()` is the reason, one line."""


def carry_out(state: GitState, lane: str, after: AfterTurn, at: str) -> GitState:
    """Every request of the turn, in order; then the lane may take its next turn."""
    for line in after.refused_lines:
        state = _refused(state, lane, "request", f"not a request: {line}", at)
    for req in after.requests:
        op = str(req.get("op") or "")
        try:
            if op == "open":
                state = _open(state, lane, req, at)
            elif op == "ready":
                state = _ready(state, lane, req, at)
            else:
                raise Refusal(f"unknown request {op!r}; flamechase pr asks open or ready")
        except Refusal as exc:
            state = _refused(state, lane, op, str(exc), at)
    rest = {k: v for k, v in state.after.items() if k != lane}
    return state.replace(after=rest, book=state.book.done_waiting(waiting_key(lane)))


def _refused(state: GitState, lane: str, op: str, reason: str, at: str) -> GitState:
    state = jobs.owe(state, Emit(gev.PrRequestRefused(lane=lane, op=op, reason=reason)))
    return jobs.system_report(
        state,
        [lane],
        "pr_request_refused",
        f"Your `flamechase pr {op}` was refused: {reason}",
        at,
        {"op": op, "reason": reason},
    )


def _text(req: dict[str, Any], key: str, limit: int) -> str:
    value = req.get(key)
    return " ".join(str(value).split())[:limit] if value is not None else ""


def _pushed(state: GitState, lane: str, branch: str, req: dict[str, Any]) -> str:
    """The branch's head in the central repository, checked against what the lane says."""
    sha = state.refs.get(lane, {}).get(f"refs/heads/{branch}")
    if sha is None:
        raise Refusal(
            f"branch {branch} is not in the central repository; push it first "
            f"(git push origin {branch})"
        )
    claimed = req.get("head")
    if claimed and claimed != sha:
        raise Refusal(
            f"your HEAD {str(claimed)[:12]} is not what {branch} holds in the central "
            f"repository ({sha[:12]}); push it first (git push origin {branch})"
        )
    return sha


def _open(state: GitState, lane: str, req: dict[str, Any], at: str) -> GitState:
    branch = _text(req, "branch", 200)
    if not branch.startswith(f"{lane}/") or not _BRANCH.match(branch) or ".." in branch:
        raise Refusal(
            f"a PR comes from one of your own branches, {lane}/NAME, not {branch or 'nothing'}"
        )
    head = _pushed(state, lane, branch, req)
    mine = [p for p in state.prs.values() if p.lane == lane and p.status in OPEN]
    same = [p for p in mine if p.branch == branch]
    if same:
        raise Refusal(f"{same[0].id} is already open on {branch}")
    if len(mine) >= MAX_OPEN:
        raise Refusal(
            f"{lane} has {len(mine)} open PRs already; make one ready or let them be decided first"
        )
    pr = PullRequest(
        id=f"PR{len(state.prs) + 1:06d}",
        lane=lane,
        branch=branch,
        title=_text(req, "title", 200) or branch,
        hypothesis=_text(req, "hypothesis", 2000),
        head=head,
        opened_at=at,
    )
    state = state.with_pr(pr)
    return jobs.owe(
        state, Emit(gev.PrOpened(lane=lane, pr=pr.id, branch=branch, head=head, title=pr.title))
    )


def _find(state: GitState, lane: str, req: dict[str, Any]) -> PullRequest:
    wanted = _text(req, "pr", 20)
    if wanted:
        pr = state.prs.get(wanted)
        if pr is None:
            raise Refusal(f"there is no {wanted}")
    else:
        branch = _text(req, "branch", 200)
        found = [p for p in state.prs.values() if p.branch == branch and p.status in OPEN]
        if not found:
            raise Refusal(f"no open PR on {branch or 'your branch'}; open one first")
        pr = found[-1]
    if pr.lane != lane:
        raise Refusal(f"{pr.id} belongs to {pr.lane}; a lane acts only on its own PRs")
    return pr


def _ready(state: GitState, lane: str, req: dict[str, Any], at: str) -> GitState:
    pr = _find(state, lane, req)
    if pr.status != "draft":
        raise Refusal(
            f"{pr.id} is {pr.status}, not a draft"
            + ("; open a new PR" if pr.status in CLOSED else "")
        )
    head = _pushed(state, lane, pr.branch, req)
    busy = [p for p in state.prs.values() if p.lane == lane and p.status == "reviewing"]
    if busy:
        raise Refusal(
            f"{busy[0].id} is being integrated; make another PR ready once it is merged or rejected"
        )
    for old in [
        p for p in state.prs.values() if p.lane == lane and p.status in ("evaluating", "ready")
    ]:
        state = review.reject(state, old.id, f"superseded by {pr.id}", at)
    pr = pr.replace(status="evaluating", head=head, ready_at=at)
    return review.evaluate(state.with_pr(pr), pr.id)
