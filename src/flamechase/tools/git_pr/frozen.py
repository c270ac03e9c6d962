"""The evaluator's frozen files in a clean checkout: which of them a commit changes, and
putting them back as they were frozen.

The runtime froze the evaluator's files (path -> SHA-256 of their bytes) from a clean checkout
of the baseline at the start. A commit whose tree holds any of them other than the baseline
does (changed, deleted, its mode changed, turned into a link or hidden under a linked
directory: git then lists no file at that path), that adds a file at a path the evaluator's
command names (`python bench.py` with no bench.py yet), or that holds anything else than the
baseline under an `evaluator_files` glob (a `conftest.py` that `**/conftest.py` names), is
`tampered`: it is never measured. In a
checkout that is measured, each frozen file is written back from the baseline's blob, whose
bytes must hash to the frozen SHA-256, so the evaluator that runs is exactly the frozen one.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

from flamechase.globs import Glob, matches, parse
from flamechase.tools.git_pr.git import Git

__all__ = ["put_back", "tampered"]

REGULAR = ("100644", "100755")


def entries(git: Git, rev: str) -> dict[str, tuple[str, str]]:
    """path -> (mode, object) of every file of `rev`'s tree."""
    out: dict[str, tuple[str, str]] = {}
    for record in git.out("ls-tree", "-r", "-z", "--full-tree", rev).split("\0"):
        meta, sep, path = record.partition("\t")
        if sep:
            mode, _, sha = meta.split(" ")
            out[path] = (mode, sha)
    return out


def tampered(
    git: Git,
    commit: str,
    baseline: str,
    frozen: Mapping[str, str],
    named: Sequence[str] = (),
    watched: Sequence[str] = (),
) -> list[str]:
    """The frozen files `commit` does not hold exactly as the baseline does, the `named`
    paths (those the evaluator's command names) where it holds another file than the
    baseline (one the baseline did not have), and the `watched` globs (`evaluator_files`)
    under which it holds anything else than the baseline."""
    if not frozen and not named and not watched:
        return []
    mine, base = entries(git, commit), entries(git, baseline)
    out = {path for path in frozen if path not in base or mine.get(path) != base[path]}
    out |= {path for path in named if mine.get(path) != base.get(path)}
    for pattern in watched:
        glob = parse(pattern)  # GlobError (a ValueError): the program fails, naming it
        if _under(mine, glob) != _under(base, glob):
            out.add(pattern)
    return sorted(out)


def _under(tree: Mapping[str, tuple[str, str]], glob: Glob) -> dict[str, tuple[str, str]]:
    return {p: e for p, e in tree.items() if matches(glob, p)}


def put_back(git: Git, place: Path, baseline: str, frozen: Mapping[str, str]) -> None:
    """Write each frozen file into the checkout at `place` from the baseline's blob, checked
    against its frozen hash (ValueError when the baseline does not hold it as frozen)."""
    base = entries(git, baseline)
    for rel, sha256 in sorted(frozen.items()):
        mode, blob = base.get(rel, ("", ""))
        if mode not in REGULAR:
            raise ValueError(f"the baseline holds no regular file {rel}, which was frozen")
        data = git.run("cat-file", "blob", blob).stdout
        if hashlib.sha256(data).hexdigest() != sha256:
            raise ValueError(f"the baseline's {rel} does not match its frozen hash")
        _write(place, rel, data, 0o755 if mode == "100755" else 0o644)


def _write(place: Path, rel: str, data: bytes, mode: int) -> None:
    """Replace `place/rel` with `data` through real directories only (never a link)."""
    node = place
    for part in rel.split("/")[:-1]:
        node = node / part
        if not stat.S_ISDIR(os.lstat(node).st_mode):
            raise ValueError(f"{rel} lies under {node.relative_to(place)}, not a directory")
    target = place / rel
    tmp = target.with_name(f".{target.name}.flamechase-frozen")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, mode)
    os.replace(tmp, target)
