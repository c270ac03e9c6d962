"""Keeping an explorer lane's copy in step: its own changes carried onto lane 1's tree.

    python -I -m flamechase.tools.lanerefresh record [--repo REPO] --tree DIR
        DIR's tree as a commit: {"base": SHA}
    python -I -m flamechase.tools.lanerefresh refresh [--repo REPO] --base SHA --lane LANE
            --copy DIR --onto DIR
        {"base": SHA (lane 1's tree now), "written": N, "conflicts": [PATH, ...]}

A runtime program a flow runs with `Run` (unjailed: it writes the runtime's own repository),
one JSON line out (`{"error"}` and exit 1 on failure); asked again after a crash, it gives
the same result. `--repo` defaults to `$FLAMECHASE_RUN_DIR/lanerefresh.git` (set by `Run`).

Owns a private git repository of the runtime (`repo`, bare, made here) and three steps:
`record(repo, tree_dir)` (a tree as a commit: the base a lane's copy was made from),
`refresh(repo, base, lane_dir, lane1_dir)` (the three-way merge base -> lane copy onto lane
1's current tree, written into the lane copy), and `resume(repo, lane_dir)` (finishing a
refresh a SIGKILL cut). Must not touch: anything but the repository and the lane copy; it
never reads a tree's own `.git` (git skips `.git` in a work tree) and never runs anything
from one: the system and global configs are off, hooks point at /dev/null, no fsmonitor.

Conflicts keep the lane's version: the refresh names them (path, and the result says which
side changed what) so the lane's next prompt can say so. Paths git ignores in a tree are not
carried (they stay as they are in the copy).

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
import json
import os
import subprocess
import sys
import tempfile
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
    if not (repo / "HEAD").is_file():
        repo.mkdir(mode=0o700, parents=True, exist_ok=True)
        _git(repo, "init", "-q", "--bare", str(repo))


def _tree(repo: Path, tree_dir: Path) -> str:
    """The tree of `tree_dir` (through a private index: nothing of its own `.git` is read)."""
    with tempfile.TemporaryDirectory(dir=repo) as tmp:
        index = Path(tmp) / "index"
        _git(repo, "add", "-A", "--", ".", work=tree_dir, index=index)
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


def refresh(repo: Path, base: str, lane_dir: Path, lane1_dir: Path, *, lane: str) -> Refreshed:
    """Carry `lane_dir`'s changes since `base` onto `lane1_dir`'s tree, into `lane_dir`."""
    _init(repo)
    with _alone(repo, lane):
        return _refresh(repo, base, lane_dir, lane1_dir, lane=lane)


def _refresh(repo: Path, base: str, lane_dir: Path, lane1_dir: Path, *, lane: str) -> Refreshed:
    _resume(repo, lane_dir, lane=lane)
    base_tree = _git(repo, "rev-parse", f"{base}^{{tree}}").stdout.decode().strip()
    ours = _commit(repo, _tree(repo, lane_dir), base, f"{lane} copy")
    theirs_tree = _tree(repo, lane1_dir)
    theirs = _commit(repo, theirs_tree, base, "lane 1")
    if theirs_tree == base_tree:
        return Refreshed(base, 0, ())
    merged = _git(repo, "merge-tree", "--write-tree", "--name-only", "-z", ours, theirs, ok=1)
    # `-z --name-only`: the tree, then (on conflicts) one name per field, an empty field,
    # and git's messages.
    fields = merged.stdout.decode("utf-8", "surrogateescape").split("\0")
    result_tree = fields[0]
    names = fields[1 : fields.index("", 1)] if "" in fields[1:] else fields[1:]
    conflicts = tuple(sorted({n for n in names if n})) if merged.returncode == 1 else ()
    new_base = _commit(repo, theirs_tree, None, "lane 1")
    atomic_write(
        _journal(repo, lane),
        json.dumps(
            {"ours": ours, "result": result_tree, "conflicts": conflicts, "base": new_base}
        ).encode(),
    )
    written = _apply(repo, lane_dir, lane=lane)
    return Refreshed(new_base, written, conflicts)


def resume(repo: Path, lane_dir: Path, *, lane: str) -> int:
    """Finish a refresh a crash cut (0 when none was under way)."""
    if not _journal(repo, lane).is_file():
        return 0
    with _alone(repo, lane):
        return _resume(repo, lane_dir, lane=lane)


def _resume(repo: Path, lane_dir: Path, *, lane: str) -> int:
    if not _journal(repo, lane).is_file():
        return 0
    return _apply(repo, lane_dir, lane=lane)


def _apply(repo: Path, lane_dir: Path, *, lane: str) -> int:
    job = json.loads(_journal(repo, lane).read_text())
    keep = set(job["conflicts"])
    diff = _git(repo, "diff-tree", "-r", "-z", "--no-renames", job["ours"], job["result"])
    parts = diff.stdout.decode("utf-8", "surrogateescape").split("\0")
    written = 0
    for meta, path in zip(parts[0::2], parts[1::2], strict=False):
        if not meta.startswith(":") or path in keep:
            continue
        _, new_mode, _, new_sha, status = meta[1:].split(" ")
        _place(repo, lane_dir, path, new_mode, new_sha, deleted=status == "D")
        written += 1
    _journal(repo, lane).unlink()
    return written


def _place(repo: Path, root: Path, rel: str, mode: str, sha: str, *, deleted: bool) -> None:
    target = root / rel
    if any(p.is_symlink() for p in target.parents if root in p.parents):
        raise SnapshotFailed(f"{target}: a directory above it is a link; not written through")
    if target.is_symlink() or target.is_file():
        target.unlink()
    if deleted:
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    data = _git(repo, "cat-file", "blob", sha).stdout
    if mode == "120000":
        os.symlink(data, target)
    elif mode != "160000":  # a nested repository's commit: nothing to write
        atomic_write(target, data, mode=0o755 if mode == "100755" else 0o644)


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
    for name in ("--copy", "--onto"):
        ref.add_argument(name, type=Path, required=True)
    ref.add_argument("--base", required=True)
    ref.add_argument("--lane", required=True)
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    if args.repo is None:
        ap.error("--repo is required outside a run (FLAMECHASE_RUN_DIR unset)")
    try:
        if args.what == "record":
            out: dict[str, object] = {"base": record(args.repo, args.tree)}
        else:
            done = refresh(args.repo, args.base, args.copy, args.onto, lane=args.lane)
            out = {"base": done.base, "written": done.written, "conflicts": list(done.conflicts)}
    except (SnapshotFailed, OSError, ValueError) as exc:
        print(json.dumps({"error": f"{exc.__class__.__name__}: {exc}"}))
        return 1
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
