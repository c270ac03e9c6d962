"""The central repository: seeded with the source's baseline, written only through its hook.

`init_central` makes the bare repository from the source tree the program runs in: exactly
the files the user's own `git add -A` would take when the source is a git work tree (tracked
and untracked-but-not-ignored), every file but `.git` otherwise, each as its exact bytes, in
one baseline commit on `main`; and installs the pre-receive hook (`tools.git_pr.hook`).
`forward` takes what a lane pushed (a bundle its own jailed export wrote) and pushes each
update of the lane's own branches into the central repository, through the hook, as that lane;
any other ref (a tag, a note, a replace ref, another lane's branch) is refused unread.
`push_main` moves main to a merge the runtime made and checked, through the hook, as the
runtime.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from flamechase.interpreter import runtime_shell
from flamechase.tools.git_pr import hook
from flamechase.tools.git_pr.git import ZERO, Git, GitError, wipe, write_text

__all__ = ["forward", "init_central", "push_main"]

MARKER = "flamechase.json"
HOOK_PREFIX = "flamechase hook: "
SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def hook_script() -> str:
    """The pre-receive hook: this Python, isolated, running `flamechase.tools.git_pr.hook`."""
    return f'#!/bin/sh\nexec {runtime_shell("flamechase.tools.git_pr.hook")} "$@"\n'


def init_central(central: Path, source: Path, run_id: str) -> dict[str, Any]:
    """Make (or find, when a crash came after it was made) the central repository."""
    marker = central / MARKER
    if marker.is_file():
        found: dict[str, Any] = json.loads(marker.read_text())
        return found
    wipe(central)
    git = Git(central, git_dir=central)
    git.run("init", "-q", "--bare", "-b", "main", str(central))
    # Its own hooks directory, named: a user's global core.hooksPath must never replace the
    # pre-receive hook, whoever pushes.
    for key, value in (
        ("receive.fsckObjects", "true"),
        ("core.logAllRefUpdates", "always"),
        ("uploadpack.allowAnySHA1InWant", "true"),
        ("receive.denyDeleteCurrent", "true"),
        ("core.hooksPath", str(central / "hooks")),
    ):
        git.run("config", key, value)
    entries = list(_baseline_entries(source, Git(source, git_dir=central)))
    index = central / "flamechase-baseline.index"
    env = {"GIT_INDEX_FILE": str(index)}
    lines = b"".join(f"{mode} {sha}\t".encode() + path + b"\0" for mode, sha, path in entries)
    git.run("update-index", "--add", "-z", "--index-info", input=lines, env=env)
    tree = git.out("write-tree", env=env)
    index.unlink(missing_ok=True)
    commit = git.out(
        "commit-tree",
        tree,
        "-m",
        f"flamechase: baseline of the source\n\nFlamechase-Run: {run_id}\n",
    )
    git.run("update-ref", "refs/heads/main", commit, ZERO)
    write_text(central / "hooks" / "pre-receive", hook_script(), 0o755)
    result = {"main": commit, "tree": tree, "files": len(entries)}
    write_text(marker, json.dumps(result), 0o644)
    return result


def _baseline_entries(source: Path, git: Git) -> Iterator[tuple[str, str, bytes]]:
    """(mode, blob, path) of every file of the baseline, blobs written into `git`'s repo
    (which runs in `source`, on the central repository)."""
    paths = _source_paths(source)
    links = [p for p in paths if os.path.islink(source / os.fsdecode(p))]
    files = [p for p in paths if p not in set(links)]
    plain = [p for p in files if b"\n" not in p]
    # Exact bytes: no filter or end-of-line conversion the tree's attributes might ask for.
    shas = (
        git.out(
            "hash-object",
            "-w",
            "--no-filters",
            "--stdin-paths",
            input=b"".join(p + b"\n" for p in plain),
        ).split()
        if plain
        else []
    )
    blobs = dict(zip(plain, shas, strict=True))
    for path in files:
        sha = blobs.get(path) or git.out(
            "hash-object", "-w", "--no-filters", "--", os.fsdecode(path)
        )
        mode = os.lstat(source / os.fsdecode(path)).st_mode
        yield ("100755" if mode & stat.S_IXUSR else "100644"), sha, path
    for path in links:
        target = os.readlink(source / os.fsdecode(path))
        sha = git.out("hash-object", "-w", "--stdin", input=os.fsencode(target))
        yield "120000", sha, path


def _source_paths(source: Path) -> list[bytes]:
    """Paths (relative, bytes) of the regular files and links of the baseline."""
    probe = Git(source)
    proc = probe.run("rev-parse", "--is-inside-work-tree", check=False)
    if proc.returncode == 0 and proc.stdout.strip() == b"true":
        # What `git add -A` would take: tracked files and untracked ones not ignored. Read
        # only: no index refresh is written (GIT_OPTIONAL_LOCKS=0).
        listed = probe.run(
            "ls-files", "-z", "-c", "-o", "--exclude-standard", env={"GIT_OPTIONAL_LOCKS": "0"}
        ).stdout.split(b"\0")
        names = sorted({p for p in listed if p})
    else:
        names = sorted(_walk(source))
    out = []
    for name in names:
        try:
            mode = os.lstat(source / os.fsdecode(name)).st_mode
        except FileNotFoundError:  # tracked but deleted in the work tree
            continue
        if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
            out.append(name)
    return out


def _walk(source: Path) -> Iterator[bytes]:
    for top, dirs, files in os.walk(source):
        rel = Path(top).relative_to(source)
        if rel == Path("."):
            dirs[:] = [d for d in dirs if d != ".git"]
        for d in list(dirs):
            if os.path.islink(os.path.join(top, d)):
                dirs.remove(d)
                yield os.fsencode(rel / d)
        for f in files:
            yield os.fsencode(rel / f)


# ---- pushes into the central repository, through its hook ------------------------------------


def _push(git: Git, central: Path, src: str, ref: str) -> str | None:
    """Push `src` to `ref` of `central` (force); None when accepted, else the reason."""
    proc = git.run("push", "--porcelain", str(central), f"+{src}:{ref}", check=False)
    if proc.returncode == 0:
        return None
    text = (proc.stderr + proc.stdout).decode("utf-8", "replace")
    for raw in text.splitlines():
        line = raw.strip().removeprefix("remote:").strip()
        if line.startswith(HOOK_PREFIX):
            return line.removeprefix(HOOK_PREFIX)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else f"push exited {proc.returncode}"


def _refusal(git: Git, lane: str, ref: str) -> str | None:
    """Why the runtime does not forward `ref` for `lane`: it is not one of the lane's own
    branches, or not a name git would make."""
    why = hook.outside(lane, ref)
    if why is None and not git.ok("check-ref-format", ref):
        why = f"{ref} is not a valid branch name"
    return why


def _fetch(git: Git, bundle: Path, refs: Sequence[str], staging: str) -> str | None:
    """Read `refs` of the lane's bundle into staging refs (no tag with them); what went
    wrong, or None."""
    if not bundle.is_file():
        return "the runtime found no bundle of your pushes"
    heads = {
        line.split(" ", 1)[1]
        for line in git.out("bundle", "list-heads", str(bundle)).splitlines()
        if " " in line
    }
    wanted = [f"+{ref}:{staging}{n}" for n, ref in enumerate(refs) if ref in heads]
    if wanted:
        try:
            git.run("fetch", "-q", "--no-tags", "--no-write-fetch-head", str(bundle), *wanted)
        except GitError as exc:
            return f"your pushes could not be read: {exc}"
    return None


def forward(
    central: Path,
    lane: str,
    bundle: Path | None,
    updates: dict[str, str],
    deletes: Sequence[str],
    policy: str,
) -> dict[str, Any]:
    """Push a lane's ref updates (objects from its bundle) into `central` as that lane.

    Only the lane's own branches are read from the bundle, each into a staging ref named by
    the runtime, and no tag with them: a fetch that followed tags would write them into the
    central repository past the hook. Every other ref is refused before anything is read."""
    git = Git(central, git_dir=central, hooks=True, env={"FLAMECHASE_GIT_POLICY": policy})
    results: dict[str, str] = {}
    for ref in [*updates, *deletes]:
        why = _refusal(git, lane, ref)
        if why:
            results[ref] = why
    for ref, sha in updates.items():
        if ref not in results and not SHA.fullmatch(sha):
            results[ref] = f"{sha[:80]!r} is not a commit id"
    own = [ref for ref in updates if ref not in results]
    staging = f"refs/flamechase/incoming/{lane}/"
    if bundle is not None and own:
        problem = _fetch(git, bundle, own, staging)
        if problem:
            results.update(dict.fromkeys(own, problem))
    for ref, sha in updates.items():
        if ref in results:
            continue
        if git.sha(sha) is None:
            results[ref] = f"commit {sha[:12]} is not in your pushes"
            continue
        results[ref] = _push(git, central, sha, ref) or "ok"
    for ref in deletes:
        if ref in results:
            continue
        # Gone already (a forward cut by a crash, done again): nothing to refuse.
        results[ref] = "ok" if git.sha(ref) is None else (_push(git, central, "", ref) or "ok")
    for ref in git.refs(staging):
        git.run("update-ref", "-d", ref)
    # Where each ref it touched now is (None: not there), and main.
    return {
        "results": results,
        "refs": {
            ref: git.sha(ref) if ref.startswith("refs/") else None for ref in [*updates, *deletes]
        },
        "main": git.sha("refs/heads/main"),
    }


def push_main(central: Path, merge: str, main: str, policy: str) -> dict[str, Any]:
    """Move main from `main` to `merge` through the hook (as the runtime); idempotent."""
    git = Git(central, git_dir=central, hooks=True, env={"FLAMECHASE_GIT_POLICY": policy})
    now = git.sha("refs/heads/main")
    if now == merge:
        return {"main": merge}
    if now != main:
        return {"refused": f"main moved to {str(now)[:12]} meanwhile"}
    problem = _push(git, central, merge, "refs/heads/main")
    return {"refused": problem} if problem else {"main": merge}
