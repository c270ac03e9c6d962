"""Checkpoints of the user's tree in git, and integrating a finished copy back into it.

    python -m flamechase.tools.gitpoint checkpoint --tag NAME --message TEXT [--require]
        commit everything (git add -A; an empty commit when nothing changed is not made) and
        tag HEAD `NAME` (or `NAME-2`, `NAME-3`... when taken). Never pushes.
    python -m flamechase.tools.gitpoint integrate --from COPY --allow GLOB... --message TEXT
        copy COPY's changes under the allowed globs into the current tree (treesync's rules:
        byte comparison, git-ignored paths skipped) and commit exactly those paths.
    python -m flamechase.tools.gitpoint control --dir DIR --data JSON --message TEXT
        write JSON's files (relative path -> text, from the run's state) under DIR and
        commit DIR alone, as one commit of its own.

Not a git repository: `checkpoint` reports `skipped` (exit 3 with `--require`), `integrate`
copies and commits nothing. Commits use the repository's identity, or `flamechase` when it
has none, and skip hooks (`--no-verify`): a runtime checkpoint must not run project code.
Prints one last line `GITPOINT {json}`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from flamechase.interpreter import installation_holding
from flamechase.tools import treesync

__all__ = ["main"]

_IDENTITY = {
    "GIT_AUTHOR_NAME": "flamechase",
    "GIT_AUTHOR_EMAIL": "flamechase@localhost",
    "GIT_COMMITTER_NAME": "flamechase",
    "GIT_COMMITTER_EMAIL": "flamechase@localhost",
}


# No hooks and no fsmonitor, whatever the repository's config says: a hooks path inside the
# tree (`core.hooksPath=.githooks`) holds files a front's integration may have written.
_GIT = ("git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")


_LOCK_TRIES = 40


class GitFailed(RuntimeError):
    pass


def _git(
    root: Path, *args: str, stdin: str | None = None, ok: tuple[int, ...] = (0,)
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    probe = subprocess.run(
        ["git", "-C", str(root), "config", "user.email"],
        capture_output=True,
        text=True,
        check=False,
    )
    if not probe.stdout.strip():
        env.update(_IDENTITY)
    for _ in range(_LOCK_TRIES):
        proc = subprocess.run(
            [*_GIT, "-C", str(root), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=600,
        )
        # The control plane's commit and a front's integration may meet on the index.
        if proc.returncode == 0 or "index.lock" not in proc.stderr:
            break
        time.sleep(0.5)
    if proc.returncode not in ok:
        err = (proc.stderr or proc.stdout).strip().splitlines()
        raise GitFailed(f"git {args[0]} exited {proc.returncode}: {err[-1] if err else ''}")
    return proc


def is_repo(root: Path) -> bool:
    if shutil.which("git") is None or not (root / ".git").exists():
        return False
    proc = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.returncode == 0 and proc.stdout.strip() == "true"


def _head(root: Path) -> str | None:
    proc = _git(root, "rev-parse", "--verify", "-q", "HEAD", ok=(0, 1))
    return proc.stdout.strip() or None


def checkpoint(root: Path, tag: str, message: str) -> dict[str, object]:
    _git(root, "add", "-A")
    staged = _git(root, "diff", "--cached", "--quiet", ok=(0, 1)).returncode == 1
    committed = False
    if staged or _head(root) is None:
        _git(root, "commit", "--no-verify", "--allow-empty", "-q", "-m", message)
        committed = True
    name, n = tag, 1
    while _git(root, "rev-parse", "-q", "--verify", f"refs/tags/{name}", ok=(0, 1)).returncode == 0:
        n += 1
        name = f"{tag}-{n}"
    _git(root, "tag", "-a", name, "-m", message)
    return {"commit": _head(root), "tag": name, "committed": committed}


def integrate(root: Path, other: Path, allow: Sequence[str], message: str) -> dict[str, object]:
    sorted_, ignored = treesync.judged(root, other, allow, (), treesync.DEFAULT_IGNORES)
    paths = sorted_["accepted"]
    for p in paths:  # code there would run in every Python the runtime starts
        held = installation_holding(root / p)
        if held is not None:
            raise GitFailed(
                f"{p} lies in the Python installation flamechase runs from ({held}); "
                "nothing was integrated"
            )
    for p in paths:
        treesync.take(root, other, p)
    out: dict[str, object] = {
        "files": len(paths),
        "paths": paths[: treesync.LIST_CAP],
        "outside": len(sorted_["outside"]),
        "ignored": ignored,
        "commit": None,
    }
    if paths and is_repo(root):
        _git(
            root,
            "add",
            "-A",
            "--pathspec-from-file=-",
            "--pathspec-file-nul",
            stdin="\0".join(paths),
        )
        if _git(root, "diff", "--cached", "--quiet", ok=(0, 1)).returncode == 1:
            _git(root, "commit", "--no-verify", "-q", "-m", message)
            out["commit"] = _head(root)
    return out


def control(root: Path, where: str, files: dict[str, str], message: str) -> dict[str, object]:
    base = (root / where).resolve()
    if not base.is_relative_to(root.resolve()) or base == root.resolve():
        raise GitFailed(f"{where} is not inside {root}")
    for rel, text in sorted(files.items()):
        path = (base / rel).resolve()
        if not path.is_relative_to(base):
            raise GitFailed(f"{rel} is not inside {where}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    out: dict[str, object] = {"files": len(files), "dir": where, "commit": None}
    if is_repo(root):
        _git(root, "add", "-A", "--", where)
        if _git(root, "diff", "--cached", "--quiet", "--", where, ok=(0, 1)).returncode == 1:
            _git(root, "commit", "--no-verify", "-q", "-m", message, "--", where)
            out["commit"] = _head(root)
    return out


def release(root: Path, tag: str, message: str) -> dict[str, object]:
    if not is_repo(root):
        return {"skipped": f"{root} is not a git repository"}
    _git(root, "tag", "-a", tag, "-m", message)
    return {"tag": tag, "commit": _head(root)}


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m flamechase.tools.gitpoint")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("checkpoint")
    c.add_argument("--tag", required=True)
    c.add_argument("--message", required=True)
    c.add_argument("--require", action="store_true")
    i = sub.add_parser("integrate")
    i.add_argument("--from", dest="other", required=True)
    i.add_argument("--allow", nargs="*", default=[])
    i.add_argument("--message", required=True)
    k = sub.add_parser("control")
    k.add_argument("--dir", dest="where", required=True)
    k.add_argument("--data", required=True)
    k.add_argument("--message", required=True)
    r = sub.add_parser("release")
    r.add_argument("--tag", required=True)
    r.add_argument("--message", required=True)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    root = Path.cwd()
    code = 0
    try:
        if args.cmd == "checkpoint":
            if is_repo(root):
                result: dict[str, object] = checkpoint(root, args.tag, args.message)
            else:
                result = {"skipped": f"{root} is not a git repository"}
                code = 3 if args.require else 0
        elif args.cmd == "release":
            result = release(root, args.tag, args.message)
        elif args.cmd == "control":
            result = control(root, args.where, json.loads(args.data), args.message)
        else:
            result = integrate(root, Path(args.other), args.allow, args.message)
    except (GitFailed, OSError, ValueError, subprocess.SubprocessError) as exc:
        result, code = {"error": str(exc)}, 3
    print("GITPOINT " + json.dumps(result, sort_keys=True))
    return code


if __name__ == "__main__":
    sys.exit(main())
