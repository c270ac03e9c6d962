"""The runtime programs the flow asks for (`flamechase.tools.git_pr.gitpr`, `.publish`): their
command lines, and the policies the central repository's hook enforces for each push."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from flamechase.flow import runtime_module, runtime_shell
from flamechase.flows.git_pr.model import FROZEN, GitState, PullRequest

# The interpreter flamechase runs in, isolated: they run in places lanes write (a checkout,
# the user's tree), where a `flamechase.py` must never shadow the real package.
GITPR = runtime_module("flamechase.tools.git_pr.gitpr")
PUBLISH = runtime_module("flamechase.tools.git_pr.publish")
BUNDLE = ".git/flamechase/outgoing.bundle"  # in a lane's clone, where its export writes


def pr_cli() -> str:
    """How an agent calls `flamechase pr` (this installation, whatever PATH says)."""
    return f"{runtime_shell()} pr"


def init_central(source: str, run_id: str) -> tuple[str, ...]:
    return (*GITPR, "init-central", "--source", source, "--run", run_id)


def clone(central: str, name: str, *, outbox: bool) -> tuple[str, ...]:
    return (
        *GITPR,
        "clone",
        "--central",
        central,
        "--name",
        name,
        *(("--outbox",) if outbox else ()),
    )


def export(central: str, bundle: str) -> tuple[str, ...]:
    return (*GITPR, "export", "--central", central, "--bundle", bundle)


def forward(
    central: str, lane: str, bundle: str | None, updates: Mapping[str, str], deletes: Iterable[str]
) -> tuple[str, ...]:
    out = [*GITPR, "forward", "--central", central, "--lane", lane]
    if bundle:
        out += ["--bundle", bundle]
    for ref, sha in sorted(updates.items()):
        out += ["--update", f"{ref}={sha}"]
    for ref in sorted(deletes):
        out += ["--delete", ref]
    return tuple(out)


def checkout(
    central: str, commit: str, main: str | None, allowed: Sequence[str]
) -> tuple[str, ...]:
    out = [*GITPR, "checkout", "--central", central, "--commit", commit]
    if main:
        out += ["--main", main]
    for glob in allowed:
        out += ["--allow", glob]
    return tuple(out)


def merge(pr: PullRequest, main: str) -> tuple[str, ...]:
    return (
        *GITPR,
        "merge",
        "--pr",
        pr.id,
        "--lane",
        pr.lane,
        "--title",
        pr.title or pr.id,
        "--head",
        pr.head,
        "--main",
        main,
    )


def push_main(central: str, merge_sha: str, main: str) -> tuple[str, ...]:
    return (*GITPR, "push-main", "--central", central, "--merge", merge_sha, "--main", main)


def publish(central: str, old: str, new: str, message: str) -> tuple[str, ...]:
    return (*PUBLISH, "--central", central, "--from", old, "--to", new, "--message", message)


def lane_policy(state: GitState, lane: str) -> dict[str, str]:
    """The hook's policy for a lane's forwarded pushes: its own branches, minus frozen heads,
    and never deleting the branch of any PR it opened."""
    frozen = {p.ref: {"sha": p.head, "pr": p.id} for p in state.prs.values() if p.status in FROZEN}
    kept = {p.ref: p.id for p in state.prs.values() if p.lane == lane}
    policy = {"pusher": lane, "frozen": frozen, "kept": kept}
    return {"FLAMECHASE_GIT_POLICY": json.dumps(policy, sort_keys=True)}


def runtime_policy(
    pr: PullRequest | None = None, parent: str | None = None, commit: str | None = None
) -> dict[str, str]:
    """The hook's policy for the runtime's own pushes (a staged merge, or main)."""
    merge_rule = (
        {"pr": pr.id, "head": pr.head, "parent": parent, "commit": commit}
        if pr is not None
        else None
    )
    return {
        "FLAMECHASE_GIT_POLICY": json.dumps(
            {"pusher": "runtime", "merge": merge_rule}, sort_keys=True
        )
    }
