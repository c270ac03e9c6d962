"""Publication: the paths a merge changed, copied into the source tree, each checked first.

    python -m flamechase.tools.git_pr.publish --central C --from OLD --to NEW --message M
    (run in the source tree)

For every path that differs between commits OLD (what the source held when the run last
published, at first the baseline) and NEW (main) of the central repository, the source's file
must be OLD's version (or already NEW's); anything else is someone else's edit, and the whole
publication stops naming that path, before anything is written. When the source is a git work
tree, a path with uncommitted changes (other than exactly this publication, half done by a
crash) stops it too. Then each file is written through a temporary file and a rename (mode and
symbolic links as the merge has them; never through a linked directory), deleted files are
removed, and in a git work tree one ordinary commit of exactly those paths is made on the
current branch with the runtime's identity (the user's hooks, identity and config untouched;
the user's index gets the same entries for those paths, as `git commit PATHS` would leave it).
Running it again after any crash finishes the same publication.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flamechase.interpreter import installation_holding
from flamechase.tools.git_pr.git import ZERO, Git, GitError, done, fail

__all__ = ["Refused", "publish"]


class Refused(Exception):
    """Publication stops; `str()` is the one line naming the path and what to do."""


@dataclasses.dataclass(frozen=True, slots=True)
class Change:
    path: str
    old: bytes | None  # content (a link's target for links), None when absent
    new: bytes | None
    old_link: bool
    new_link: bool
    new_exec: bool


def _changes(central: Git, old: str, new: str) -> list[Change]:
    raw = central.run("diff", "--raw", "-z", "--no-renames", "--no-abbrev", old, new).stdout
    fields = raw.split(b"\0")
    out: list[Change] = []
    for head, path in zip(fields[0::2], fields[1::2], strict=False):
        if not head.startswith(b":"):
            continue
        omode, nmode, osha, nsha, _status = head[1:].decode().split()
        out.append(
            Change(
                os.fsdecode(path),
                _blob(central, osha),
                _blob(central, nsha),
                omode == "120000",
                nmode == "120000",
                nmode == "100755",
            )
        )
    return out


def _blob(git: Git, sha: str) -> bytes | None:
    return None if sha == ZERO else git.run("cat-file", "blob", sha).stdout


def _current(source: Path, path: str) -> tuple[bytes | None, bool]:
    """(content, is a link) of `path` in the source; content None when absent.

    Raises Refused when a parent is a link or not a directory, or the path is a directory or
    a special file: nothing is ever read or written through a link."""
    here = source
    for part in Path(path).parts[:-1]:
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            return None, False
        if not stat.S_ISDIR(mode):
            raise Refused(
                f"{path}: {here.relative_to(source)} in the source is not a plain "
                "directory; publication never writes through links"
            )
    target = source / path
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return None, False
    if stat.S_ISLNK(mode):
        return os.fsencode(os.readlink(target)), True
    if not stat.S_ISREG(mode):
        raise Refused(f"{path} in the source is not a file; publication stops")
    return target.read_bytes(), False


def _check(source: Path, changes: Sequence[Change]) -> dict[str, tuple[bytes | None, bool]]:
    """The source's current version of each path, after checking it is OLD's or NEW's, and
    that it is no file of the Python installation the runtime runs from."""
    now: dict[str, tuple[bytes | None, bool]] = {}
    for c in changes:
        held = installation_holding(source / c.path)
        if held is not None:
            raise Refused(
                f"{c.path} lies in the Python installation flamechase runs from ({held}): "
                "code there would run as the runtime; publication stops until main leaves it"
            )
        content, link = _current(source, c.path)
        same_old = content == c.old and (content is None or link == c.old_link)
        same_new = content == c.new and (content is None or link == c.new_link)
        if not (same_old or same_new):
            raise Refused(
                f"{c.path} was changed in the source outside the run; publication "
                "stops until it holds what the run started from again"
            )
        now[c.path] = (content, link)
    return now


class SourceRepo:
    """The git work tree around the source, if any: its HEAD, index and a commit on it."""

    def __init__(self, source: Path) -> None:
        probe = Git(source)
        self.prefix = probe.out("rev-parse", "--show-prefix")
        # Paths below are the repository's own (prefix included): git runs at its top.
        self.git = Git(Path(probe.out("rev-parse", "--show-toplevel")))
        self.head = self.git.sha("HEAD")

    @staticmethod
    def find(source: Path) -> SourceRepo | None:
        proc = Git(source).run("rev-parse", "--is-inside-work-tree", check=False)
        ok = proc.returncode == 0 and proc.stdout.strip() == b"true"
        return SourceRepo(source) if ok else None

    def ids(self, content: bytes | None) -> str | None:
        if content is None:
            return None
        return self.git.out("hash-object", "--no-filters", "--stdin", input=content)

    def entries(self, where: str, paths: Sequence[str]) -> dict[str, str]:
        """repo path -> blob id in HEAD (`where`="HEAD") or the index ("index")."""
        full = [self.prefix + p for p in paths]
        if where == "HEAD":
            if self.head is None:
                return {}
            text = self.git.run("ls-tree", "-z", "HEAD", "--", *full).stdout
            rows = [r.split(b"\t", 1) for r in text.split(b"\0") if r]
            return {os.fsdecode(p): meta.split()[2].decode() for meta, p in rows}
        text = self.git.run(
            "ls-files", "-s", "-z", "--", *full, env={"GIT_OPTIONAL_LOCKS": "0"}
        ).stdout
        out: dict[str, str] = {}
        for row in (r for r in text.split(b"\0") if r):
            meta, path = row.split(b"\t", 1)
            _mode, sha, stage = meta.decode().split()
            out[os.fsdecode(path)] = sha if stage == "0" else "conflict"
        return out

    def check(self, changes: Sequence[Change], now: dict[str, tuple[bytes | None, bool]]) -> None:
        """Refuse paths with uncommitted changes, unless the change is exactly this one."""
        paths = [c.path for c in changes]
        head, index = self.entries("HEAD", paths), self.entries("index", paths)
        for c in changes:
            full = self.prefix + c.path
            h, i = head.get(full), index.get(full)
            w = self.ids(now[c.path][0])
            old, new = self.ids(c.old), self.ids(c.new)
            if h == i == w:
                continue  # no uncommitted change to this path
            if not (w == new and h == old and i in (old, new)):
                raise Refused(
                    f"{c.path} has uncommitted changes in the source; commit or "
                    "stash them and the run publishes again"
                )

    def commit(self, changes: Sequence[Change], message: str) -> str | None:
        """One commit of exactly `changes` on the current branch (None: nothing to commit)."""
        lines = b""
        for c in changes:
            full = os.fsencode(self.prefix + c.path)
            if c.new is None:
                lines += b"0 " + ZERO.encode() + b"\t" + full + b"\0"
                continue
            sha = self.git.out("hash-object", "-w", "--no-filters", "--stdin", input=c.new)
            mode = "120000" if c.new_link else ("100755" if c.new_exec else "100644")
            lines += f"{mode} {sha}\t".encode() + full + b"\0"
        gitdir = Path(self.git.out("rev-parse", "--absolute-git-dir"))
        scratch = {"GIT_INDEX_FILE": str(gitdir / "flamechase-publish.index")}
        try:
            self.git.run(
                *(["read-tree", "HEAD"] if self.head else ["read-tree", "--empty"]), env=scratch
            )
            self.git.run("update-index", "-z", "--index-info", input=lines, env=scratch)
            tree = self.git.out("write-tree", env=scratch)
        finally:
            Path(scratch["GIT_INDEX_FILE"]).unlink(missing_ok=True)
        if self.head and tree == self.git.out("rev-parse", "HEAD^{tree}"):
            return None
        parents = ["-p", self.head] if self.head else []
        commit = self.git.out("commit-tree", tree, *parents, "-m", message)
        # The user's index gets these paths as the commit has them, before HEAD moves: if
        # the index is locked, nothing has moved and a later attempt finishes the job.
        self.git.run("update-index", "-z", "--index-info", input=lines)
        self.git.run(
            "update-ref", "-m", "flamechase: publish a merge", "HEAD", commit, self.head or ZERO
        )
        return commit


def _write(source: Path, c: Change, current: tuple[bytes | None, bool]) -> None:
    target = source / c.path
    content, link = current
    if content == c.new and (c.new is None or link == c.new_link):
        if c.new is not None and not link:  # the same bytes; the mode may still change
            os.chmod(target, _mode(target, c.new_exec))
        return
    if c.new is None:
        target.unlink()
        parent = target.parent
        while parent != source and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
        return
    for parent in reversed(Path(c.path).parents[:-1]):
        (source / parent).mkdir(exist_ok=True)
    _current(source, c.path)  # parents again: a link planted meanwhile stops it here
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        if c.new_link:
            os.close(fd)
            os.unlink(tmp)
            os.symlink(os.fsdecode(c.new), tmp)
        else:
            with os.fdopen(fd, "wb") as f:
                f.write(c.new)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, _mode(target, c.new_exec))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _mode(target: Path, executable: bool) -> int:
    try:
        perm = stat.S_IMODE(os.lstat(target).st_mode) if not target.is_symlink() else 0o644
    except FileNotFoundError:
        perm = 0o644
    return perm | ((perm & 0o444) >> 2) if executable else perm & ~0o111


def publish(source: Path, central: Path, old: str, new: str, message: str) -> dict[str, Any]:
    cgit = Git(central, git_dir=central)
    changes = sorted(_changes(cgit, old, new), key=lambda c: (c.new is not None, c.path))
    now = _check(source, changes)
    repo = SourceRepo.find(source)
    if repo is not None:
        repo.check(changes, now)
    for c in changes:
        _write(source, c, now[c.path])
    commit = repo.commit(changes, message) if repo is not None else None
    return {
        "published": new,
        "paths": [c.path for c in changes][:200],
        "changed": len(changes),
        "commit": commit,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="flamechase.tools.git_pr.publish")
    parser.add_argument("--central", required=True, type=Path)
    parser.add_argument("--from", dest="old", required=True)
    parser.add_argument("--to", dest="new", required=True)
    parser.add_argument("--message", required=True)
    args = parser.parse_args(argv)
    try:
        done(publish(Path.cwd(), args.central, args.old, args.new, args.message))
    except Refused as exc:
        done({"refused": str(exc)})
    except (GitError, OSError) as exc:
        fail(f"publication failed: {exc}")


if __name__ == "__main__":
    main()
