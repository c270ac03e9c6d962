"""Lane 1 on a node, backed by git: the user's tree goes there as commits and comes back as one.

With `-p ray.lane_1=node` the lane that works in the user's tree runs on a node, in a copy
of the tree there. Both sides speak git, never a packed copy of the tree:

    head -> node   before each turn, the user's tree as a commit S (what `git add -A` would
                   record: tracked and untracked files, not the ignored ones), in a bundle
                   of what the node lacks (the whole history once, then a commit or nothing)
    node -> head   after the turn, the node's copy as a commit T whose only parent is S, in a
                   bundle of T alone

The head lands T in the user's tree (`TreeLink.land`): the files T changed are written with
git's own checkout, paths T removed are removed, and nothing else is touched. When the user
changed a path T also changed since S was taken, nothing lands: T is kept under a ref and the
turn is reported held. Each landed T is the next turn's parent, so
`refs/flamechase/RUN/LANE` is the lane's history, one commit per turn; the user's branches,
index and HEAD are never moved (every snapshot uses a private index).

On the node the runtime's repository is private (`NodeRepo.git_dir`, outside the place, under
the protected state home): the agent cannot plant hooks, filters or config the runtime's git
would then run. The agent gets a `.git` of its own in the place, made once, which the
runtime's git never reads (git never records a `.git`).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from flamechase.engine.remote import shipping

# The runtime's git must not run anything a repository or a tree asks for.
_SAFE = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "transfer.fsckObjects=true",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
)
_IDENTITY = {
    "GIT_AUTHOR_NAME": "flamechase",
    "GIT_AUTHOR_EMAIL": "flamechase@localhost",
    "GIT_COMMITTER_NAME": "flamechase",
    "GIT_COMMITTER_EMAIL": "flamechase@localhost",
}
_TIMEOUT = 3600.0  # a first bundle of a large history can take a while


class GitSyncError(ValueError):
    """A git step of the sync failed, or what came back is not what was asked for."""


@dataclasses.dataclass(frozen=True, slots=True)
class Sync:
    """Head -> node: make the copy commit `commit`; `bundle` holds what the node lacks."""

    commit: str
    bundle: bytes = b""
    ref: str = ""  # the bundle's ref


@dataclasses.dataclass(frozen=True, slots=True)
class Commits:
    """Node -> head: the copy after the turn as `commit` (== the Sync's when nothing
    changed, with no bundle), its only parent the Sync's commit."""

    commit: str
    bundle: bytes = b""


@dataclasses.dataclass(frozen=True, slots=True)
class Landing:
    """What `TreeLink.land` did: the paths written or removed, or the paths the user also
    changed (then nothing was written and `held_ref` keeps the turn's commit)."""

    commit: str
    changed: tuple[str, ...] = ()
    clashes: tuple[str, ...] = ()
    held_ref: str = ""

    @property
    def held(self) -> bool:
        return bool(self.clashes)


def _env(index: Path | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GIT_") or k in ("GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL")
    }
    env.update(_IDENTITY, GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    return env


def _run(
    base: Sequence[str],
    *args: str,
    index: Path | None = None,
    stdin: bytes | None = None,
    ok: tuple[int, ...] = (0,),
) -> bytes:
    try:
        proc = subprocess.run(
            ["git", *_SAFE, *base, *args],
            input=stdin,
            capture_output=True,
            env=_env(index),
            check=False,
            timeout=_TIMEOUT,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitSyncError(f"git {args[0]}: {exc}") from None
    if proc.returncode not in ok:
        err = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip().splitlines()
        raise GitSyncError(
            f"git {args[0]} exited {proc.returncode}: {err[-1] if err else 'no message'}"
        )
    return proc.stdout


def _line(base: Sequence[str], *args: str, index: Path | None = None) -> str:
    return _run(base, *args, index=index).decode("utf-8", "replace").strip()


def _tree_of(base: Sequence[str], index: Path) -> str:
    """The tree `git add -A` would record for the work tree, written through `index` (which
    starts as a copy of an index that matches most files: git then hashes only the rest)."""
    _run(base, "add", "-A", "--", ".", index=index)
    return _line(base, "write-tree", index=index)


def _names(base: Sequence[str], a: str, b: str) -> list[tuple[str, str]]:
    """(status letter, path) of every file that differs between trees or commits a and b."""
    out = _run(base, "diff-tree", "-r", "-z", "--no-renames", "--name-status", a, b)
    parts = out.split(b"\0")
    pairs = []
    for i in range(0, len(parts) - 1, 2):
        pairs.append((parts[i].decode()[:1], os.fsdecode(parts[i + 1])))
    return pairs


def _bundle(base: Sequence[str], ref: str, have: str | None) -> bytes:
    with tempfile.TemporaryDirectory(prefix="flamechase-bundle-") as tmp:
        out = Path(tmp) / "b"
        # No new delta search (what a pack already holds is reused): on a cluster's network
        # a bigger bundle costs less than the search (5,000 files: 10 s -> 1.6 s, 6.5 MB).
        _run(
            base,
            "-c",
            "pack.window=0",
            "bundle",
            "create",
            "-q",
            str(out),
            ref,
            *([f"^{have}"] if have else []),
        )
        return out.read_bytes()


def _fetch(base: Sequence[str], data: bytes, src: str, dst: str) -> str:
    """Objects and ref `src` of bundle `data` into `dst` (checked by fsck); dst's commit."""
    with tempfile.TemporaryDirectory(prefix="flamechase-bundle-") as tmp:
        path = Path(tmp) / "b"
        path.write_bytes(data)
        _run(base, "fetch", "-q", "--no-tags", "--no-write-fetch-head", str(path), f"+{src}:{dst}")
    return _line(base, "rev-parse", "--verify", f"{dst}^{{commit}}")


def _copy_index(src: Path, dest: Path) -> None:
    """A copy of an index that git reads as it reads the original: with its modification
    time. Git trusts a file's cached stat only when the file is older than the index; a copy
    made now would make every file written in the index's last second look unchanged (a
    same-size edit a turn made just after its copy was made went missing)."""
    shutil.copy2(src, dest)


def _clash(path: str, user: set[str]) -> bool:
    if path in user:
        return True
    return any(u.startswith(path + "/") or path.startswith(u + "/") for u in user)


def _remove(root: Path, rel: str) -> None:
    """Remove `root/rel` (never through a link on the way), then the parents it left empty."""
    shipping.remove(root, rel)
    parent = (root / rel).parent
    while parent != root:
        try:
            parent.rmdir()
        except OSError:
            break
        parent = parent.parent


def why_not(source: Path) -> str | None:
    """Why lane 1 cannot run on a node in `source`, or None."""
    if shutil.which("git") is None:
        return "it needs git on this machine and on every node"
    try:
        top = _line(("-C", str(source)), "rev-parse", "--show-toplevel")
    except GitSyncError:
        return (
            f"{source} is not a git repository (its turns come back as commits): "
            "`git init` it, or keep lane 1 here"
        )
    if Path(top).resolve() != source.resolve():
        return (
            f"{source} is inside the git repository {top}; start the run at its top, "
            "or keep lane 1 here"
        )
    return None


class TreeLink:
    """The head's end: the user's tree at `source`, the lane's history under `ref`."""

    def __init__(self, source: Path, run_id: str, lane: str) -> None:
        self.source = source
        self.base = ("-C", str(source))
        self.ref = f"refs/flamechase/{run_id}/{lane}"
        self.last = self._existing(self.ref)  # resumed: the chain goes on

    def _existing(self, ref: str) -> str | None:
        try:
            return _line(self.base, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        except GitSyncError:
            return None

    def _index(self, tmp: Path) -> Path:
        index = tmp / "index"
        real = Path(_line(self.base, "rev-parse", "--path-format=absolute", "--git-path", "index"))
        if real.is_file():
            _copy_index(real, index)
        return index

    def snapshot(self, message: str) -> str:
        """The user's tree now, as a commit on the lane's chain (the last one when nothing
        changed; the user's HEAD for a clean tree on the first turn)."""
        with tempfile.TemporaryDirectory(prefix="flamechase-index-") as tmp:
            tree = _tree_of(self.base, self._index(Path(tmp)))
        parent = self.last or self._existing("HEAD")
        if parent is not None and _line(self.base, "rev-parse", f"{parent}^{{tree}}") == tree:
            return parent
        args = ["commit-tree", tree, "-m", message, *(["-p", parent] if parent else [])]
        return _line(self.base, *args)

    def sync(self, have: str | None, message: str) -> Sync:
        """What the node needs to hold the user's tree, given it holds commit `have`."""
        commit = self.snapshot(message)
        self.last = commit
        _run(self.base, "update-ref", self.ref, commit)
        if commit == have:
            return Sync(commit)
        return Sync(commit, _bundle(self.base, self.ref, have), self.ref)

    def land(self, sync: Sync, back: Commits, held_name: str) -> Landing:
        """The node's commit into the user's tree (see the module's docstring)."""
        if back.commit == sync.commit:
            return Landing(commit=sync.commit)
        incoming = f"{self.ref}-incoming"
        commit = _fetch(self.base, back.bundle, "refs/flamechase/turn", incoming)
        try:
            if commit != back.commit:
                raise GitSyncError(
                    f"the node sent commit {commit[:12]}, not the {back.commit[:12]} it named"
                )
            parents = _line(self.base, "rev-list", "--parents", "-n", "1", commit).split()[1:]
            if parents != [sync.commit]:
                raise GitSyncError(
                    f"the node's commit {commit[:12]} does not follow "
                    f"{sync.commit[:12]}, the tree it was sent"
                )
            changes = _names(self.base, sync.commit, commit)
            with tempfile.TemporaryDirectory(prefix="flamechase-index-") as tmp:
                now = _tree_of(self.base, self._index(Path(tmp)))
                user = {p for _, p in _names(self.base, f"{sync.commit}^{{tree}}", now)}
                clashes = tuple(sorted(p for _, p in changes if _clash(p, user)))
                if clashes:
                    held = f"{self.ref}-held/{held_name}"
                    _run(self.base, "update-ref", held, commit)
                    return Landing(commit=commit, clashes=clashes, held_ref=held)
                self._write(changes, commit, Path(tmp) / "turn-index")
        finally:
            _run(self.base, "update-ref", "-d", incoming)
        self.last = commit
        _run(self.base, "update-ref", self.ref, commit)
        return Landing(commit=commit, changed=tuple(p for _, p in changes))

    def _write(self, changes: list[tuple[str, str]], commit: str, index: Path) -> None:
        # read-tree first: it refuses a tree with a path git would never check out (`.git`,
        # `..`) before anything in the user's tree is touched.
        _run(self.base, "read-tree", commit, index=index)
        for status, path in changes:
            if status == "D":
                _remove(self.source, path)
        written = [p for s, p in changes if s != "D"]
        if not written:
            return
        # git's own checkout: modes, links and the repository's filters as a checkout has
        # them, and never a write through a link on the way.
        _run(
            self.base,
            "checkout-index",
            "-f",
            "-z",
            "--stdin",
            index=index,
            stdin=b"".join(os.fsencode(p) + b"\0" for p in written),
        )


class NodeRepo:
    """The node's end: the runtime's private repository `git_dir` over the copy `place`."""

    def __init__(self, git_dir: Path, place: Path) -> None:
        self.git_dir = git_dir
        self.place = place
        self.base = ("--git-dir", str(git_dir), "--work-tree", str(place))
        self.at: str | None = None  # the commit the copy was last made

    def materialise(self, sync: Sync) -> None:
        """The copy made afresh from `sync` (whatever was there goes), with a `.git` of the
        agent's own at the same commit."""
        for path in (self.git_dir, self.place):
            if path.is_symlink() or path.is_file():
                path.unlink()
            elif path.exists():
                shutil.rmtree(path)
        self.place.mkdir(mode=0o700, parents=True)
        _run((), "init", "-q", "--bare", "--template=", str(self.git_dir))
        self.apply(sync)
        agent = ("-C", str(self.place))
        _run((), "init", "-q", "--template=", str(self.place))
        _run(
            agent,
            "fetch",
            "-q",
            "--no-tags",
            str(self.git_dir),
            "+refs/flamechase/sync:refs/heads/flamechase",
        )
        _run(agent, "symbolic-ref", "HEAD", "refs/heads/flamechase")
        _run(agent, "read-tree", "HEAD")

    def apply(self, sync: Sync) -> None:
        """Make the copy commit `sync.commit` (what an agent left behind goes, except what the
        tree ignores: build outputs stay, as they would here)."""
        if sync.bundle:
            got = _fetch(self.base, sync.bundle, sync.ref, "refs/flamechase/sync")
        else:
            got = _line(self.base, "rev-parse", "--verify", f"{sync.commit}^{{commit}}")
            _run(self.base, "update-ref", "refs/flamechase/sync", got)
        if got != sync.commit:
            raise GitSyncError(f"the bundle holds {got[:12]}, not {sync.commit[:12]}")
        _run(self.base, "reset", "-q", "--hard", sync.commit)
        _run(self.base, "clean", "-f", "-d", "-q")
        self.at = sync.commit

    def commit(self, message: str) -> Commits:
        """The copy now, as a commit on the one it was made from."""
        if self.at is None:
            raise GitSyncError("the copy was never made")
        with tempfile.TemporaryDirectory(prefix="flamechase-index-") as tmp:
            index = Path(tmp) / "index"
            _copy_index(self.git_dir / "index", index)
            tree = _tree_of(self.base, index)
        if _line(self.base, "rev-parse", f"{self.at}^{{tree}}") == tree:
            return Commits(self.at)
        commit = _line(self.base, "commit-tree", tree, "-p", self.at, "-m", message)
        _run(self.base, "update-ref", "refs/flamechase/turn", commit)
        return Commits(commit, _bundle(self.base, "refs/flamechase/turn", self.at))
