"""Keeping an explorer lane's copy in step: its own changes carried onto lane 1's tree.

    python -I -m flamechase.tools.lanerefresh record [--repo REPO] --tree DIR
        DIR's tree as a commit: {"base": SHA}
    python -I -m flamechase.tools.lanerefresh refresh [--repo REPO] --base SHA --lane LANE
            --copy DIR (--onto-commit SHA [--at N] | --onto DIR)
        {"base": SHA (lane 1's tree), "written": N, "conflicts": [PATH, ...], "at": N}

A runtime program a flow runs with `Run` (unjailed: it writes the runtime's own repository),
one JSON line out (`{"error"}` and exit 1 on failure); asked again after a crash, it gives
the same result. `--repo` defaults to `$FLAMECHASE_RUN_DIR/lanerefresh.git` (set by `Run`).

Owns a private git repository of the runtime (`repo`, bare, made here) and three steps:
`record(repo, tree_dir)` (a tree as a commit: the base a lane's copy was made from),
`refresh(repo, base, lane_dir, lane1)` (the three-way merge base -> lane copy onto lane 1's
tree, written into the lane copy), and `resume(repo, lane_dir)` (finishing a refresh a SIGKILL
cut). A flow refreshes onto a commit `record` made of lane 1's tree between two of its turns
(`--onto-commit`), never onto the tree while a lane-1 turn may be writing it; `--onto DIR`
reads a tree as it is now (the bench, tests). Must not touch: anything but the repository
and the lane copy; it never reads a tree's own `.git` (git skips `.git` in a work tree) and
never runs anything from one: the system and global configs are off, hooks point at
/dev/null, no fsmonitor.

Conflicts keep the lane's version: the refresh names them (path, and the result says which
side changed what) so the lane's next prompt can say so. A conflict keeps the whole path: a
lane that made a directory a link (or a nested repository) keeps it, and nothing lane 1
changed under it is written, so nothing is ever written through a link. Paths git ignores in
a tree are not carried (they stay as they are in the copy), nor is what a nested repository
without a commit holds. Bytes are carried as they are: the repository's `info/attributes`
turns off every conversion a tree's `.gitattributes` could ask for (line endings, filters,
`ident`, encodings). Each tree keeps its own index in the repository (`indexes/`), so a
snapshot re-reads only the files whose stat changed.

Crash-safe: before the copy is written, `<repo>/refresh-<lane>.json` records the lane's tree
and the result; `resume` re-applies it (writing the result's bytes is idempotent), and the
journal goes once the copy holds the result. A lane's refreshes take turns (a lock file
beside the journal): the program of an engine SIGKILLed mid-refresh goes on in its own session
while the resumed engine asks for the same refresh again.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from flamechase.errors import SnapshotFailed
from flamechase.fsutil import atomic_write

__all__ = ["Refreshed", "main", "record", "refresh", "resume"]

_IDENTITY = {
    "GIT_AUTHOR_NAME": "flamechase",
    "GIT_AUTHOR_EMAIL": "flamechase@localhost",
    "GIT_COMMITTER_NAME": "flamechase",
    "GIT_COMMITTER_EMAIL": "flamechase@localhost",
    "GIT_AUTHOR_DATE": "1970-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "1970-01-01T00:00:00Z",
}
_SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.symlinks=true")
# Above every `.gitattributes` of a tree: its bytes as they are, whatever a tree asks for.
_ATTRIBUTES = b"* -text -eol -filter -ident -working-tree-encoding\n"
# git's name for one side of a file/directory or type conflict: `PATH~<the side's commit>`.
_SIDE = re.compile(r"~[0-9a-f]{40}$")


@dataclasses.dataclass(frozen=True, slots=True)
class Refreshed:
    base: str  # commit of lane 1's tree the copy is now on
    written: int  # paths of the copy rewritten or removed
    conflicts: tuple[str, ...]  # paths both changed: the lane's version kept


def _env(repo: Path, work: Path | None = None, index: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(_IDENTITY)
    env.update(GIT_DIR=str(repo), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    if work is not None:
        env["GIT_WORK_TREE"] = str(work)
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    return env


def _git(
    repo: Path, *args: str, work: Path | None = None, index: Path | None = None, ok: int = 0
) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run(
        ["git", *_SAFE, *args],
        env=_env(repo, work, index),
        cwd=str(work or repo),
        capture_output=True,
        check=False,
    )
    if proc.returncode not in (0, ok):
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        raise SnapshotFailed(f"git {args[0]} in {repo} failed: {err[-1] if err else 'no output'}")
    return proc


def _init(repo: Path) -> None:
    # Lanes refresh at once, each its own program: two `git init`s of one repository race
    # on its template files ("cannot copy .../description"), so the first is made alone.
    repo.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(repo.parent / f".{repo.name}.init", "a") as made:
        fcntl.flock(made, fcntl.LOCK_EX)
        if not (repo / "HEAD").is_file():
            repo.mkdir(mode=0o700, exist_ok=True)
            _git(repo, "init", "-q", "--bare", str(repo))
        attributes = repo / "info" / "attributes"
        if not attributes.is_file() or attributes.read_bytes() != _ATTRIBUTES:
            attributes.parent.mkdir(exist_ok=True)
            atomic_write(attributes, _ATTRIBUTES)


def _tree(repo: Path, tree_dir: Path) -> str:
    """The tree of `tree_dir`, through the tree's own index in the repository (nothing of
    its `.git` is read). `--ignore-errors`: a path git cannot add (a nested repository
    without a commit, an unreadable file) is left out, not the whole refresh; left out, it
    is never written by one."""
    indexes = repo / "indexes"
    indexes.mkdir(mode=0o700, exist_ok=True)
    name = hashlib.sha256(os.fsencode(os.path.abspath(tree_dir))).hexdigest()[:24]
    index = indexes / name
    # One add at a time in the repository: lanes recording at once mostly hold the same
    # files, and two gits adding one file each write its object (a lane refresh's run then
    # wrote lane 1's tree 1.7 times); one after the other, the second finds it and writes none.
    with open(indexes / f"{name}.held", "a") as held, open(repo / "objects.held", "a") as whole:
        fcntl.flock(held, fcntl.LOCK_EX)  # not .lock: git takes that one
        fcntl.flock(whole, fcntl.LOCK_EX)
        # Held by us, the index is no other git's: a `.lock` of git's is one a SIGKILL left
        # (it would stop every later snapshot of this tree).
        Path(f"{index}.lock").unlink(missing_ok=True)
        add = ("add", "-A", "--ignore-errors", "--", ".")
        if _git(repo, *add, work=tree_dir, index=index, ok=1).returncode:
            # A path it could not read keeps its old entry in a kept index: start afresh, so
            # that what cannot be read now is left out rather than stale.
            index.unlink(missing_ok=True)
            _git(repo, *add, work=tree_dir, index=index, ok=1)
        out = _git(repo, "write-tree", work=tree_dir, index=index)
    return out.stdout.decode().strip()


def _commit(repo: Path, tree: str, parent: str | None, message: str) -> str:
    args = ["commit-tree", tree, "-m", message, *(["-p", parent] if parent else [])]
    return _git(repo, *args).stdout.decode().strip()


def record(repo: Path, tree_dir: Path, message: str = "lane 1") -> str:
    """`tree_dir` as a commit (a lane copy's base, or lane 1's tree now)."""
    _init(repo)
    return _commit(repo, _tree(repo, tree_dir), None, message)


def _journal(repo: Path, lane: str) -> Path:
    return repo / f"refresh-{lane}.json"


@contextlib.contextmanager
def _alone(repo: Path, lane: str) -> Iterator[None]:
    """One refresh of a lane at a time: an engine SIGKILLed mid-refresh leaves its program
    running (it is in its own session), and the resumed engine asks for the same refresh;
    the second waits for the first, then finds its work done and gives the same result."""
    with open(repo / f"refresh-{lane}.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _commit_id(repo: Path, sha: str) -> str:
    """`sha` if it names a commit of the repository (a full id, nothing git would resolve
    otherwise: no ref, no revision expression)."""
    if not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise ValueError(f"not a commit id: {sha!r}")
    _git(repo, "rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}")
    return sha


def refresh(repo: Path, base: str, lane_dir: Path, lane1: Path | str, *, lane: str) -> Refreshed:
    """Carry `lane_dir`'s changes since `base` onto lane 1's tree, into `lane_dir`: `lane1`
    is a commit `record` made of it (a str), or a directory read as it is now."""
    _init(repo)
    with _alone(repo, lane):
        return _refresh(repo, base, lane_dir, lane1, lane=lane)


def _refresh(repo: Path, base: str, lane_dir: Path, lane1: Path | str, *, lane: str) -> Refreshed:
    _resume(repo, lane_dir, lane=lane)
    base = _commit_id(repo, base)
    base_tree = _git(repo, "rev-parse", f"{base}^{{tree}}").stdout.decode().strip()
    if isinstance(lane1, str):
        new_base = _commit_id(repo, lane1)
        theirs_tree = _git(repo, "rev-parse", f"{new_base}^{{tree}}").stdout.decode().strip()
    else:
        theirs_tree = _tree(repo, lane1)
        new_base = _commit(repo, theirs_tree, None, "lane 1")
    if theirs_tree == base_tree:
        return Refreshed(base, 0, ())
    ours = _commit(repo, _tree(repo, lane_dir), base, f"{lane} copy")
    theirs = _commit(repo, theirs_tree, base, "lane 1")
    merged = _git(repo, "merge-tree", "--write-tree", "--name-only", "-z", ours, theirs, ok=1)
    # `-z --name-only`: the tree, then (on conflicts) one name per field, an empty field,
    # and git's messages.
    fields = merged.stdout.decode("utf-8", "surrogateescape").split("\0")
    result_tree = fields[0]
    names = fields[1 : fields.index("", 1)] if "" in fields[1:] else fields[1:]
    # A side git moved aside (`PATH~<commit>`) is the conflict at PATH.
    found = {_SIDE.sub("", n) for n in names if n} if merged.returncode == 1 else set()
    conflicts = tuple(sorted(found))
    atomic_write(
        _journal(repo, lane),
        json.dumps(
            {"ours": ours, "result": result_tree, "conflicts": conflicts, "base": new_base}
        ).encode(),
    )
    written, kept = _apply(repo, lane_dir, lane=lane)
    return Refreshed(new_base, written, tuple(sorted({*conflicts, *kept})))


def resume(repo: Path, lane_dir: Path, *, lane: str) -> int:
    """Finish a refresh a crash cut (0 when none was under way)."""
    if not _journal(repo, lane).is_file():
        return 0
    with _alone(repo, lane):
        return _resume(repo, lane_dir, lane=lane)


def _resume(repo: Path, lane_dir: Path, *, lane: str) -> int:
    if not _journal(repo, lane).is_file():
        return 0
    return _apply(repo, lane_dir, lane=lane)[0]


def _kept(path: str, keep: set[str]) -> bool:
    """Whether `path` is a kept path or lies under one (the lane's version of a directory,
    a link or a nested repository is kept whole)."""
    parts = path.split("/")
    return any("/".join(parts[:i]) in keep for i in range(1, len(parts) + 1))


def _apply(repo: Path, lane_dir: Path, *, lane: str) -> tuple[int, set[str]]:
    """Write the journal's result into the copy: (paths written, paths kept because the
    copy holds something else than a directory above them)."""
    job = json.loads(_journal(repo, lane).read_text())
    keep = set(job["conflicts"])
    diff = _git(repo, "diff-tree", "-r", "-z", "--no-renames", job["ours"], job["result"])
    parts = diff.stdout.decode("utf-8", "surrogateescape").split("\0")
    written, blocked = 0, set()
    for meta, path in zip(parts[0::2], parts[1::2], strict=False):
        if not meta.startswith(":") or _kept(path, keep) or _SIDE.search(path):
            continue
        _, new_mode, _, new_sha, status = meta[1:].split(" ")
        if status == "A" and os.path.lexists(lane_dir / path):
            # Something the lane's tree as recorded does not hold (git could not add it: in
            # a nested repository without a commit, unreadable): the lane's, kept.
            blocked.add(path)
        elif _place(repo, lane_dir, path, new_mode, new_sha, deleted=status == "D"):
            written += 1
        else:
            blocked.add(path)
    _journal(repo, lane).unlink()
    return written, blocked


def _place(repo: Path, root: Path, rel: str, mode: str, sha: str, *, deleted: bool) -> bool:
    """Write one path of the result (False: not written, something of the lane's is in the
    way: a link or a file where a directory above it would be, or a directory at it)."""
    target = root / rel
    for above in reversed(target.parents):
        if root not in above.parents:
            continue
        if above.is_symlink() or (above.exists() and not above.is_dir()):
            return False  # never written through a link, nor over the lane's file
        if os.path.lexists(above / ".git"):
            return False  # inside a nested repository of the lane's: its own
    if target.is_dir() and not target.is_symlink():
        return False  # a directory of the lane's where lane 1 has a file: kept
    if target.is_symlink() or target.is_file():
        target.unlink()
    if deleted:
        return True
    target.parent.mkdir(parents=True, exist_ok=True)
    if mode == "160000":  # a nested repository's commit: nothing to write
        return False
    data = _git(repo, "cat-file", "blob", sha).stdout
    if mode == "120000":
        os.symlink(data, target)
    else:
        atomic_write(target, data, mode=0o755 if mode == "100755" else 0o644)
    return True


def _default_repo() -> Path | None:
    # Run by a flow (`Run`): the run directory's own repository, which no agent can write.
    run_dir = os.environ.get("FLAMECHASE_RUN_DIR")
    return Path(run_dir) / "lanerefresh.git" if run_dir else None


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="flamechase.tools.lanerefresh")
    sub = ap.add_subparsers(dest="what", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--repo", type=Path, default=_default_repo())
    rec.add_argument("--tree", type=Path, required=True)
    ref = sub.add_parser("refresh")
    ref.add_argument("--repo", type=Path, default=_default_repo())
    ref.add_argument("--copy", type=Path, required=True)
    onto = ref.add_mutually_exclusive_group(required=True)
    onto.add_argument("--onto-commit", help="a commit `record` made of lane 1's tree")
    onto.add_argument("--onto", type=Path, help="lane 1's tree, read as it is now")
    ref.add_argument("--at", type=int, default=None, help="its lane-1 count, said back")
    ref.add_argument("--base", required=True)
    ref.add_argument("--lane", required=True)
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    if args.repo is None:
        ap.error("--repo is required outside a run (FLAMECHASE_RUN_DIR unset)")
    try:
        if args.what == "record":
            out: dict[str, object] = {"base": record(args.repo, args.tree)}
        else:
            lane1 = args.onto_commit if args.onto_commit is not None else args.onto
            done = refresh(args.repo, args.base, args.copy, lane1, lane=args.lane)
            out = {"base": done.base, "written": done.written, "conflicts": list(done.conflicts)}
            if args.at is not None:
                out["at"] = args.at
    except (SnapshotFailed, OSError, ValueError) as exc:
        print(json.dumps({"error": f"{exc.__class__.__name__}: {exc}"}))
        return 1
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
