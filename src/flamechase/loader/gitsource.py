"""`git+URL[@REV][#SUBDIR][:FLOW]`: a flow from a git repository, pinned to one commit.

A repository is cloned once per commit into `<state home>/flows/git/<url key>/<commit>/`
and loaded from there. A tag is pinned the first time it is resolved (`pins.json` beside the
checkouts); when it later names another commit the load is refused unless `refresh` re-pins
it, so a release that was re-tagged never runs silently. Branches and HEAD move by design:
they are resolved afresh and the run records the commit it ran. Every load verifies that the
checkout is still that commit with nothing changed in it; the flow's code is then read from
the commit's objects, not from the checkout (loader/pinned.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from flamechase.errors import FlowNotFound, FlowPinMoved, FlowSourceUnreachable
from flamechase.fsutil import atomic_write
from flamechase.store.home import ensure_private_dir, state_home

PREFIX = "git+"
_SHA = re.compile(r"[0-9a-f]{40}")
_HEX = re.compile(r"[0-9a-f]{4,40}")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# ls-remote and clone of a flow are small; a hung remote must still end in a one-line error.
_TIMEOUT = 300


@dataclasses.dataclass(frozen=True, slots=True)
class GitRef:
    """A parsed `git+` reference."""

    url: str
    rev: str | None = None
    subdir: str = ""
    attr: str | None = None

    def source(self, commit: str) -> str:
        """The reference pinned to `commit`: what a run records as its flow's source."""
        text = f"{PREFIX}{self.url}@{commit}"
        if self.subdir or self.attr:
            text += f"#{self.subdir}"
        return text + (f":{self.attr}" if self.attr else "")


def parse(ref: str) -> GitRef:
    """Split `git+URL[@REV][#SUBDIR][:FLOW]`; FlowNotFound (one line) if it is malformed."""
    body = ref.removeprefix(PREFIX)
    rest, hash_, fragment = body.partition("#")
    attr: str | None = None
    if hash_:
        subdir, colon, name = fragment.rpartition(":") if ":" in fragment else (fragment, "", "")
        attr = name if colon else None
    else:
        subdir = ""
        head, colon, name = rest.rpartition(":")
        # Without '#', a trailing ':FLOW' is a name (never a port or an scp path: no '/').
        if colon and _IDENT.fullmatch(name) and "/" in head:
            rest, attr = head, name
    at = rest.rfind("@")
    url, rev = (rest[:at], rest[at + 1 :]) if at >= _path_start(rest) else (rest, "")
    subdir = subdir.rstrip("/")
    if not url:
        raise FlowNotFound(f"-f {ref!r}: no repository URL; expected git+URL[@REV][#SUBDIR][:FLOW]")
    if attr is not None and not _IDENT.fullmatch(attr):
        raise FlowNotFound(f"-f {ref!r}: {attr!r} is not a flow name (a Python identifier)")
    problem = subdir_problem(subdir)
    if problem:
        raise FlowNotFound(f"-f {ref!r}: #SUBDIR {problem}")
    return GitRef(url=url, rev=rev or None, subdir=subdir, attr=attr)


def subdir_problem(subdir: str) -> str | None:
    """Why `subdir` (`#SUBDIR`, an index entry's `subdir`) is not a plain path inside the
    repository, or None. Symlinks on the way are the commit's to resolve (loader/pinned.py)."""
    if not subdir:
        return None
    if (
        subdir.startswith(("/", "~"))
        or any(part in ("", ".", "..") for part in subdir.split("/"))
        or any(ord(c) < 32 or c in "\\\x7f" for c in subdir)
    ):
        return (
            f"{subdir!r} must be a relative path inside the repository "
            "(no '..', '.', '//' or leading '/')"
        )
    return None


def _path_start(rest: str) -> int:
    """Where the path of a URL starts: after `scheme://authority`, or after an scp-style
    `user@host:`; an '@' before it belongs to the user, not to a revision."""
    scheme = rest.find("://")
    if scheme >= 0:
        slash = rest.find("/", scheme + 3)
        return len(rest) if slash < 0 else slash
    colon = rest.find(":")
    return colon + 1 if colon >= 0 else 0


def cache_root() -> Path:
    return state_home() / "flows" / "git"


def _repo_dir(url: str) -> Path:
    return cache_root() / hashlib.sha256(url.encode()).hexdigest()[:20]


def _git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    proc = git_bytes(*args, cwd=cwd)
    return subprocess.CompletedProcess(
        proc.args,
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
    )


def git_bytes(
    *args: str, cwd: Path | None = None, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """`git ARGS` with no prompt, no system config and C messages; output as bytes."""
    env = {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "true",
        "GIT_CONFIG_NOSYSTEM": "1",
        "LC_ALL": "C",
    }
    try:
        return subprocess.run(
            ["git", *args],
            check=False,
            cwd=cwd,
            env=env,
            capture_output=True,
            timeout=_TIMEOUT,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise FlowSourceUnreachable("git is not installed; a git+ flow needs it") from None
    except subprocess.TimeoutExpired:
        raise FlowSourceUnreachable(f"git {args[0]} took longer than {_TIMEOUT} s") from None


def _last_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
    fatal = [ln.removeprefix("fatal: ") for ln in lines if ln.startswith("fatal: ")]
    return (fatal or lines or [f"git exited {proc.returncode}"])[0]


@dataclasses.dataclass(frozen=True, slots=True)
class Remote:
    """What the remote's refs say a revision is: a commit, and whether it is a tag."""

    commit: str | None
    tag: bool


def _ls_remote(url: str, rev: str | None) -> Remote:
    proc = _git("ls-remote", "--", url)
    if proc.returncode != 0:
        raise FlowSourceUnreachable(f"git+{url} could not be reached: {_last_line(proc)}")
    refs: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        sha, _, name = line.partition("\t")
        refs[name] = sha
    if rev is None:
        return Remote(refs.get("HEAD"), tag=False)
    # An annotated tag's commit is its peeled entry.
    for name in (f"refs/tags/{rev}^{{}}", f"refs/tags/{rev}"):
        if name in refs:
            return Remote(refs[name], tag=True)
    for name in (f"refs/heads/{rev}", rev):
        if name in refs:
            return Remote(refs[name], tag=False)
    return Remote(None, tag=False)


def remote_commit(url: str, rev: str) -> str | None:
    """The commit `rev` (a tag or branch) names on the remote now; None if it names none."""
    return _ls_remote(url, rev).commit


def _pins_file(url: str) -> Path:
    return _repo_dir(url) / "pins.json"


def _pins(url: str) -> dict[str, str]:
    try:
        data = json.loads(_pins_file(url).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _pin(url: str, tag: str, commit: str) -> None:
    pins = {**_pins(url), tag: commit}
    atomic_write(_pins_file(url), json.dumps(pins, indent=1, sort_keys=True).encode())


def resolve(ref: GitRef, *, refresh: bool = False) -> tuple[Path, str]:
    """(checkout directory, commit) of `ref`, cloning it once into the cache.

    A full 40-hex revision that is already cached needs no network; a pinned tag whose
    remote is unreachable is loaded from its pin. A tag that moved raises FlowPinMoved
    unless `refresh`.
    """
    rev = ref.rev
    if rev is not None and _SHA.fullmatch(rev) and (_repo_dir(ref.url) / rev).is_dir():
        return checkout(ref.url, rev), rev
    pinned = _pins(ref.url).get(rev) if rev is not None else None
    try:
        remote = _ls_remote(ref.url, rev)
    except FlowSourceUnreachable:
        if pinned and (_repo_dir(ref.url) / pinned).is_dir() and not refresh:
            return checkout(ref.url, pinned), pinned
        raise
    commit = remote.commit
    if remote.tag and commit is not None and rev is not None:
        if pinned and pinned != commit and not refresh:
            raise FlowPinMoved(
                f"tag {rev} of git+{ref.url} now names commit {commit[:12]}, not "
                f"{pinned[:12]} as when it was first used; pass --refresh to trust the new "
                f"commit, or name the commit: @{pinned}"
            )
        ensure_private_dir(_repo_dir(ref.url))
        if pinned != commit:
            _pin(ref.url, rev, commit)
    if commit is None:
        if rev is not None and _HEX.fullmatch(rev):
            return _by_commit(ref.url, rev)
        raise FlowNotFound(f"git+{ref.url} has no branch, tag or commit {rev!r}")
    return checkout(ref.url, commit), commit


def _by_commit(url: str, rev: str) -> tuple[Path, str]:
    """A revision given as a (possibly short) commit: clone, then resolve it there."""
    for existing in _cached_commits(url):
        if existing.startswith(rev):
            return checkout(url, existing), existing
    with tempfile.TemporaryDirectory(
        prefix="clone-", dir=ensure_private_dir(_repo_dir(url))
    ) as tmp:
        work = Path(tmp) / "repo"
        _clone(url, work)
        proc = _git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", cwd=work)
        if proc.returncode != 0:
            raise FlowNotFound(f"git+{url} has no branch, tag or commit {rev!r}")
        commit = proc.stdout.strip()
        _place(url, work, commit)
    return checkout(url, commit), commit


def _cached_commits(url: str) -> list[str]:
    root = _repo_dir(url)
    return [p.name for p in root.iterdir() if _SHA.fullmatch(p.name)] if root.is_dir() else []


def checkout(url: str, commit: str) -> Path:
    """The verified checkout of `commit` (cloned now if it is not cached yet)."""
    target = _repo_dir(url) / commit
    if not target.is_dir():
        with tempfile.TemporaryDirectory(
            prefix="clone-", dir=ensure_private_dir(_repo_dir(url))
        ) as tmp:
            work = Path(tmp) / "repo"
            _clone(url, work)
            _place(url, work, commit)
    verify(target, commit)
    return target


def _clone(url: str, work: Path) -> None:
    proc = _git("clone", "--quiet", "--no-checkout", "--", url, str(work))
    if proc.returncode != 0:
        raise FlowSourceUnreachable(f"git+{url} could not be cloned: {_last_line(proc)}")


def _place(url: str, work: Path, commit: str) -> None:
    """Check `commit` out in `work` and move it into the cache under its commit."""
    proc = _git(
        "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit, cwd=work
    )
    if proc.returncode != 0:
        raise FlowNotFound(f"git+{url} has no commit {commit}: {_last_line(proc)}")
    target = _repo_dir(url) / commit
    try:
        work.rename(target)
    except OSError:
        if not target.is_dir():  # another process placed it first: keep theirs
            raise
        shutil.rmtree(work, ignore_errors=True)


def verify(path: Path, commit: str) -> None:
    """Refuse a checkout that is not exactly `commit`: another HEAD, or changed files."""
    head = _git("rev-parse", "HEAD", cwd=path)
    if head.returncode != 0 or head.stdout.strip() != commit:
        raise FlowNotFound(
            f"the cached checkout {path} is not commit {commit[:12]}; delete "
            "it and load the flow again"
        )
    status = _git("status", "--porcelain", "--untracked-files=all", cwd=path)
    if status.returncode != 0 or status.stdout.strip():
        changed = status.stdout.strip().splitlines()[:1] or [_last_line(status)]
        raise FlowNotFound(
            f"the cached checkout {path} of commit {commit[:12]} was changed "
            f"({changed[0].strip()}); delete it and load the flow again"
        )
