"""The central repository's pre-receive hook: who may move which ref, and to what.

git runs it for every push into the central repository, before any ref moves; lines
`OLD NEW REF` come on stdin. Lanes cannot write the central repository at all (their jails
make it read-only); the runtime pushes into it on their behalf (their pushes, forwarded) or
its own (merges), and says who is pushing and what the flow allows in FLAMECHASE_GIT_POLICY:

    {"pusher": "lane-2" | "runtime",
     "frozen": {"refs/heads/lane-2/x": {"sha": ..., "pr": "PR000003"}},   heads of ready PRs
     "kept": {"refs/heads/lane-2/y": "PR000002"},                        branches of any PR
     "merge": {"pr": ..., "head": ..., "parent": ..., "commit": ...}}      the one main takes

A lane may create, move and delete only its own branches (`refs/heads/LANE/...`, no part of the
name `HEAD`), never move or delete a frozen head, and never delete a branch it pushed as a PR
(whatever became of the PR: its history stays for review): no tag, note, replace ref or
remote-tracking ref, which
every reader of the repository would see. Main takes only the runtime's two-parent merge of the
frozen head its policy names, on top of the current main, carrying the `Flamechase-PR:`
trailer. A refusal prints `flamechase hook: <why>` and exits 1 (git then refuses the push,
naming the hook).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

ZERO = "0" * 40
PREFIX = "flamechase hook: "


def _git(*args: str) -> str:
    # Objects as they are: a replace ref must not change what a merge's parents read as.
    env = {**os.environ, "GIT_NO_REPLACE_OBJECTS": "1"}
    proc = subprocess.run(["git", *args], capture_output=True, check=False, env=env)
    return proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else ""


def _runtime(old: str, new: str, ref: str, policy: Mapping[str, Any]) -> str | None:
    if ref.startswith("refs/flamechase/") and new != ZERO:
        return None
    if ref != "refs/heads/main":
        return f"the runtime pushes only main and refs/flamechase/*, not {ref}"
    merge = policy.get("merge") or {}
    if new == ZERO:
        return "main cannot be deleted"
    if not merge or new != merge.get("commit"):
        return "main accepts only the merge the runtime selected"
    parents = _git("rev-list", "--parents", "-n", "1", new).split()[1:]
    if parents != [old, merge.get("head")] or old != merge.get("parent"):
        return (
            "main accepts only a two-parent merge of the selected PR head on top of the "
            "current main"
        )
    message = _git("cat-file", "commit", new)
    if f"\nFlamechase-PR: {merge.get('pr')}" not in message:
        return f"the merge does not name {merge.get('pr')} in a Flamechase-PR: trailer"
    return None


def outside(lane: str, ref: str) -> str | None:
    """Why `ref` is not one of `lane`'s own branches (None: it is)."""
    if ref == "refs/heads/main":
        return "main accepts only the runtime's merges; push your branch and open a PR"
    if not ref.startswith(f"refs/heads/{lane}/"):
        return f"{lane} may push only its own branches (refs/heads/{lane}/...), not {ref}"
    if "HEAD" in ref.split("/"):
        return f"a branch name may not have a part named HEAD: {ref}"
    return None


def _lane(lane: str, old: str, new: str, ref: str, policy: Mapping[str, Any]) -> str | None:
    why = outside(lane, ref)
    if why:
        return why
    kept = (policy.get("kept") or {}).get(ref)
    if kept and new == ZERO:
        branch = ref.removeprefix("refs/heads/")
        return (
            f"{branch} was pushed as {kept}; the branch of a PR is kept and cannot be deleted "
            "(leave it, and push new work to a new branch)"
        )
    frozen = (policy.get("frozen") or {}).get(ref)
    if frozen and new != frozen.get("sha"):
        branch = ref.removeprefix("refs/heads/")
        what = "deleted" if new == ZERO else "moved"
        return (
            f"{branch} is frozen at {str(frozen.get('sha'))[:12]} while "
            f"{frozen.get('pr')} is ready; it cannot be {what} (push a new branch)"
        )
    return None


def judge(lines: list[tuple[str, str, str]], policy: Mapping[str, Any] | None) -> str | None:
    """The reason to refuse these ref updates, or None."""
    if not policy:
        return "the central repository accepts pushes only from the flamechase runtime"
    pusher = str(policy.get("pusher") or "")
    for old, new, ref in lines:
        why = (
            _runtime(old, new, ref, policy)
            if pusher == "runtime"
            else _lane(pusher, old, new, ref, policy)
        )
        if why:
            return why
    return None


def main() -> int:
    lines = []
    for raw in sys.stdin:
        parts = raw.split()
        if len(parts) == 3:
            lines.append((parts[0], parts[1], parts[2]))
    try:
        policy = json.loads(os.environ.get("FLAMECHASE_GIT_POLICY") or "null")
    except ValueError:
        policy = None
    why = judge(lines, policy if isinstance(policy, dict) else None)
    if why:
        sys.stderr.write(PREFIX + why + "\n")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
