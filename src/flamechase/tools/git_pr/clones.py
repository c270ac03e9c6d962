"""Clones of the central repository: a lane's, the runtime's integration clone, and clean
checkouts of exactly one commit.

`clone` makes a working clone with its own identity and config, fetching branches and no tags
(a lane's also gets an outbox: `git push origin ...` lands there, in the lane's own place, and
the runtime forwards it through the central repository's hook after the turn). `export` (run
jailed as the lane) bundles what the lane pushed since the central repository last saw it.
`checkout` makes a clean checkout of one commit for the evaluator and says what it changes
(and which of the evaluator's frozen files, which it puts back: `tools.git_pr.frozen`).
`merge` makes the runtime's merge of a PR head into main in the integration clone and stages it
in the central repository.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flamechase.tools.git_pr import frozen as frozen_files
from flamechase.tools.git_pr.central import HOOK_PREFIX
from flamechase.tools.git_pr.git import NO_CONVERSION, Git, GitError, wipe, write_text

__all__ = ["allowed", "checkout", "clone", "export", "merge"]

READY = "flamechase-ready"
OUTBOX = Path(".git") / "flamechase" / "outbox.git"
DISALLOWED_SHOWN = 20


def clone(place: Path, central: Path, name: str, *, outbox: bool) -> dict[str, Any]:
    """A working clone of `central` in `place`, configured as `name`'s; idempotent."""
    git = Git(place)
    if (place / ".git" / READY).is_file():
        return {"head": git.sha("HEAD")}
    wipe(place)
    # --no-hardlinks: a clone sharing the central repository's object files (inodes) could
    # change them from inside its owner's jail. --no-tags (and remote.origin.tagOpt, which it
    # sets): `git fetch origin` brings branches only; no tag, which would outrank the
    # remote-tracking `origin/main` the lanes start from.
    git.run("clone", "-q", "--no-hardlinks", "--no-tags", str(central), ".")
    settings = {
        "user.name": f"flamechase {name}",
        "user.email": f"{name}@flamechase.invalid",
        "core.hooksPath": str(place / ".git" / "hooks"),
        "commit.gpgSign": "false",
        "tag.gpgSign": "false",
        "core.autocrlf": "false",
        "advice.detachedHead": "false",
        "flamechase.lane": name,
        "flamechase.central": str(central),
    }
    write_text(place / ".git" / "info" / "attributes", NO_CONVERSION)
    if outbox:
        box = place / OUTBOX
        git.run("init", "-q", "--bare", str(box))
        # Pushes into the outbox run in the lane's jail with the user's global config: none of
        # the user's hooks there either.
        Git(place, git_dir=box).run("config", "core.hooksPath", str(box / "hooks"))
        # Objects stay in the clone: the outbox holds only the refs the lane pushed.
        write_text(box / "objects" / "info" / "alternates", str(place / ".git" / "objects") + "\n")
        settings |= {"remote.origin.pushurl": str(box), "flamechase.outbox": str(box)}
    for key, value in settings.items():
        git.run("config", key, value)
    (place / ".git" / READY).write_text(name + "\n")
    return {"head": git.sha("HEAD")}


def export(place: Path, central: Path, bundle: Path, seen: dict[str, str]) -> dict[str, Any]:
    """What the lane pushed into its outbox since the runtime last forwarded it (`seen`: its
    refs then): the refs that changed, those deleted, and a `bundle` of the commits of the
    changed ones that the central repository lacks. Runs in the lane's jail: the lane's
    repository config applies only there."""
    bundle.unlink(missing_ok=True)
    if not (place / OUTBOX).is_dir():
        raise ValueError("the outbox of this clone is gone; the clone cannot push")
    box = Git(place, git_dir=place / OUTBOX)
    refs = box.refs()
    changed = {ref: sha for ref, sha in refs.items() if seen.get(ref) != sha}
    deleted = sorted(ref for ref in seen if ref not in refs)
    if not changed:
        return {"changed": {}, "deleted": deleted, "bundle": None}
    shas = sorted(set(Git(central, git_dir=central).refs().values()))
    wanted = "".join(f"{sha}\n" for sha in shas).encode()
    listing = box.run("cat-file", "--batch-check", input=wanted, check=False).stdout.decode()
    have = [line.split()[0] for line in listing.splitlines() if not line.endswith("missing")]
    # The central repository's tips the lane has are the bundle's prerequisites: it carries
    # only commits the central repository lacks.
    proc = box.run("bundle", "create", "-q", str(bundle), *changed, "--not", *have, check=False)
    made = proc.returncode == 0 and bundle.is_file()
    return {"changed": changed, "deleted": deleted, "bundle": str(bundle) if made else None}


def allowed(path: str, patterns: Sequence[str]) -> bool:
    """Whether a changed path is one the task allows (no patterns: any but .git/)."""
    if path == ".git" or path.startswith(".git/"):
        return False
    return not patterns or any(
        p in ("**", path)
        or fnmatch.fnmatchcase(path, p)
        or (p.endswith("/**") and path.startswith(p[:-2]))
        for p in patterns
    )


def checkout(
    place: Path,
    central: Path,
    commit: str,
    main: str | None,
    patterns: Sequence[str],
    baseline: str | None = None,
    frozen: Mapping[str, str] | None = None,
    named: Sequence[str] = (),
    watched: Sequence[str] = (),
) -> dict[str, Any]:
    """A clean checkout of exactly `commit` in `place`, and what it changes since its base
    (its merge base with `main`). With `frozen` (the evaluator's files, path -> SHA-256, from
    the `baseline` commit; `named`: the paths the evaluator's command names; `watched`: the
    `evaluator_files` globs): the frozen files it changes, the named paths and watched globs
    where it differs from the baseline (`tampered`), or, when there are none, the checkout
    with each frozen file put back as frozen."""
    wipe(place)
    git = Git(place)
    git.run("init", "-q")
    write_text(place / ".git" / "info" / "attributes", NO_CONVERSION)
    judged = bool(baseline and (frozen or named or watched))
    wanted = [commit] + ([main] if main else []) + ([str(baseline)] if judged else [])
    try:
        git.run("fetch", "-q", "--no-tags", str(central), *wanted)
    except GitError as exc:
        return {"error": f"commit {commit[:12]} cannot be fetched: {exc}"}
    git.run("checkout", "-q", "--detach", commit)
    base = (
        git.out("merge-base", main, commit) if main and git.ok("merge-base", main, commit) else None
    )
    diff = (
        ["diff", "--name-only", "-z", base, commit]
        if base
        else ["ls-tree", "-r", "-z", "--name-only", commit]
    )
    changed = [p for p in git.out(*diff).split("\0") if p]
    bad = [p for p in changed if not allowed(p, patterns)]
    touched = (
        frozen_files.tampered(git, commit, str(baseline), frozen or {}, named, watched)
        if judged
        else []
    )
    if judged and frozen and not touched:
        frozen_files.put_back(git, place, str(baseline), frozen)
    return {
        "commit": commit,
        "tree": git.out("rev-parse", f"{commit}^{{tree}}"),
        "base": base,
        "descends": bool(main) and base == main,
        "changed": len(changed),
        "disallowed": bad[:DISALLOWED_SHOWN],
        "disallowed_count": len(bad),
        "tampered": touched,
    }


def merge(
    place: Path, pr: str, lane: str, title: str, head: str, main: str, policy: str
) -> dict[str, Any]:
    """Merge `head` into `main` in the integration clone; stage the merge in the central
    repository as refs/flamechase/merges/PR. A head that descends from main merges with
    exactly its own tree; otherwise git's merge, or the conflicting paths."""
    git = Git(place, hooks=True, env={"FLAMECHASE_GIT_POLICY": policy})
    staged = f"refs/flamechase/merges/{pr}"
    git.run("fetch", "-q", "--no-tags", "origin", main, head)
    have = git.run("ls-remote", "origin", staged).stdout.decode().split()
    if have and git.ok("cat-file", "-e", have[0]):
        parents = git.out("rev-list", "--parents", "-n", "1", have[0]).split()[1:]
        if parents == [main, head]:
            return _merged(
                git, have[0], main, fast=git.ok("merge-base", "--is-ancestor", main, head)
            )
    message = (
        f"Merge {pr} from {lane}: {' '.join(title.split())[:200]}\n\n"
        f"Flamechase-PR: {pr}\nFlamechase-Lane: {lane}\n"
    )
    fast = git.ok("merge-base", "--is-ancestor", main, head)
    if fast:
        tree = git.out("rev-parse", f"{head}^{{tree}}")
        commit = git.out("commit-tree", tree, "-p", main, "-p", head, "-m", message)
    else:
        # A merge a crash left half done is dropped first.
        git.run("merge", "--abort", check=False)
        git.run("reset", "-q", "--hard", check=False)
        git.run("checkout", "-q", "-f", "--detach", main)
        git.run("clean", "-q", "-fdx")
        proc = git.run("merge", "-q", "--no-ff", "--no-commit", head, check=False)
        if proc.returncode != 0:
            conflicts = [
                p for p in git.out("diff", "--name-only", "-z", "--diff-filter=U").split("\0") if p
            ]
            git.run("merge", "--abort", check=False)
            git.run("reset", "-q", "--hard", main)
            return {
                "conflicts": conflicts
                or [f"(git could not merge: {proc.stderr.decode(errors='replace')[-200:]})"]
            }
        git.run("commit", "-q", "--no-verify", "-m", message)
        commit = git.out("rev-parse", "HEAD")
    proc = git.run("push", "-q", "origin", f"+{commit}:{staged}", check=False)
    if proc.returncode != 0:
        text = proc.stderr.decode("utf-8", "replace")
        why = next(
            (ln.split(HOOK_PREFIX, 1)[1] for ln in text.splitlines() if HOOK_PREFIX in ln),
            text.strip()[-300:],
        )
        raise ValueError(f"the merge could not be staged: {why}")
    return _merged(git, commit, main, fast=fast)


def _merged(git: Git, commit: str, main: str, *, fast: bool) -> dict[str, Any]:
    return {
        "merge": commit,
        "tree": git.out("rev-parse", f"{commit}^{{tree}}"),
        "main": main,
        "fast": fast,
    }
