"""Compare, copy and fingerprint working trees: what a runtime needs to give each writer its own
copy and take back only the files that writer owns.

    python -m flamechase.tools.treesync mirror --from OTHER
        make the current directory an exact copy of OTHER (`.git` and ignored files included)
    python -m flamechase.tools.treesync diff --from OTHER --allow GLOB... [--frozen GLOB...]
        what OTHER changed relative to the current directory, sorted into frozen (a frozen
        glob), accepted (an allowed glob) and outside (neither)
    python -m flamechase.tools.treesync apply --from OTHER --allow GLOB... [--frozen GLOB...]
        the same, and copy the accepted changes (never frozen ones) into the current directory
    python -m flamechase.tools.treesync hash --globs GLOB...
        the SHA-256 of every file matching the globs (gate scripts, metric code)

Changes are judged file by file: type, executable bit, link target and content (compared byte
for byte, never by timestamps, so an edit that keeps size and time is still seen). `.git` is
never compared; nor are paths the tree's git ignores (`git check-ignore` in the current
directory, so an edited `.gitignore` elsewhere hides nothing) or `--ignore` globs. Every
command prints one last line `TREESYNC {json}`; lists in it are capped, counts are not.
Exit 0, 2 on a usage error, 3 when a tree cannot be read or written.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from flamechase.globs import GlobError, any_match, parse

__all__ = ["Entry", "changes", "main", "scan"]

LIST_CAP = 200
_CHUNK = 1 << 20
DEFAULT_IGNORES = (
    "**/__pycache__/**",
    "**/*.pyc",
    ".pytest_cache/**",
    ".mypy_cache/**",
    ".ruff_cache/**",
)


@dataclasses.dataclass(frozen=True, slots=True)
class Entry:
    kind: str  # "f" (regular file) or "l" (symbolic link)
    exec_bit: bool = False
    size: int = 0
    target: str = ""


def scan(root: Path, *, with_git: bool = False) -> tuple[dict[str, Entry], set[str]]:
    """(files and links by relative path, directories) under `root`; special files skipped;
    `.git` (at any depth) skipped unless `with_git`."""
    files: dict[str, Entry] = {}
    dirs: set[str] = set()
    for top, dirnames, filenames in os.walk(root):
        rel_top = os.path.relpath(top, root)
        prefix = "" if rel_top == "." else rel_top.replace(os.sep, "/") + "/"
        keep = []
        for d in dirnames:
            if d == ".git" and not with_git:
                continue
            full = os.path.join(top, d)
            if os.path.islink(full):
                files[prefix + d] = Entry("l", target=os.readlink(full))
            else:
                keep.append(d)
                dirs.add(prefix + d)
        dirnames[:] = keep
        for name in filenames:
            if name == ".git" and not with_git:
                continue
            full = os.path.join(top, name)
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                files[prefix + name] = Entry("l", target=os.readlink(full))
            elif stat.S_ISREG(st.st_mode):
                files[prefix + name] = Entry("f", bool(st.st_mode & 0o111), st.st_size)
    return files, dirs


def _same_bytes(a: Path, b: Path) -> bool:
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(_CHUNK), fb.read(_CHUNK)
            if x != y:
                return False
            if not x:
                return True


def _differs(base: Path, other: Path, path: str, e1: Entry, e2: Entry) -> bool:
    if e1.kind != e2.kind or e1.exec_bit != e2.exec_bit or e1.target != e2.target:
        return True
    if e1.kind == "l":
        return False
    return e1.size != e2.size or not _same_bytes(base / path, other / path)


def changes(base: Path, other: Path, *, with_git: bool = False) -> list[str]:
    """Paths whose file or link differs between the trees (added, removed or changed), sorted."""
    a, _ = scan(base, with_git=with_git)
    b, _ = scan(other, with_git=with_git)
    out = [
        p
        for p in a.keys() | b.keys()
        if p not in a or p not in b or _differs(base, other, p, a[p], b[p])
    ]
    return sorted(out)


def git_ignored(root: Path, paths: Sequence[str]) -> set[str]:
    """Which of `paths` the git repository at `root` ignores (none when it is not one)."""
    if not paths or not (root / ".git").exists() or shutil.which("git") is None:
        return set()
    proc = subprocess.run(
        ["git", "-C", str(root), "check-ignore", "--stdin", "-z"],
        input="\0".join(paths).encode(),
        capture_output=True,
        timeout=300,
        check=False,
    )
    if proc.returncode not in (0, 1):  # 1: nothing ignored
        return set()
    return {p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p}


def _classify(
    paths: Iterable[str], allow: Sequence[str], frozen: Sequence[str]
) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"frozen": [], "accepted": [], "outside": []}
    for p in paths:
        if any_match(frozen, p):
            out["frozen"].append(p)
        elif any_match(allow, p):
            out["accepted"].append(p)
        else:
            out["outside"].append(p)
    return out


def judged(
    base: Path, other: Path, allow: Sequence[str], frozen: Sequence[str], ignore: Sequence[str]
) -> tuple[dict[str, list[str]], int]:
    """OTHER's changes sorted into frozen/accepted/outside, and how many were ignored."""
    changed = changes(base, other)
    skip = git_ignored(base, changed) | {p for p in changed if any_match(ignore, p)}
    return _classify((p for p in changed if p not in skip), allow, frozen), len(skip)


# ---- writing -----------------------------------------------------------------------------------


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _put(base: Path, rel: str, src: Path) -> None:
    """Copy one file or link `src` to `base/rel` (files through a temporary name)."""
    dest = base / rel
    node = base
    for part in rel.split("/")[:-1]:  # a file or link where the tree now has a directory
        node = node / part
        if node.is_symlink() or (node.exists() and not node.is_dir()):
            node.unlink()
    parent = dest.parent
    parent.mkdir(parents=True, exist_ok=True)
    if dest.is_dir() and not dest.is_symlink():
        shutil.rmtree(dest)
    if src.is_symlink():
        if os.path.lexists(dest):
            dest.unlink()
        os.symlink(os.readlink(src), dest)
        return
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", dir=parent)
    os.close(fd)
    try:
        shutil.copy2(src, tmp)
        os.replace(tmp, dest)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def take(base: Path, other: Path, path: str) -> None:
    """Make `path` in `base` what it is in `other` (removed if `other` lacks it)."""
    src, dest = other / path, base / path
    if not os.path.lexists(src):
        _remove(dest)
        node = dest.parent
        while node != base and node.is_dir() and not any(node.iterdir()):
            node.rmdir()
            node = node.parent
        return
    _put(base, path, src)


def mirror(base: Path, other: Path) -> dict[str, int]:
    """Make `base` an exact copy of `other`, `.git` included; counts of what changed."""
    diff = changes(base, other, with_git=True)
    for p in diff:
        take(base, other, p)
    _, have = scan(base, with_git=True)
    _, want = scan(other, with_git=True)
    for d in sorted(have - want, key=len, reverse=True):
        node = base / d
        if node.is_dir() and not any(node.iterdir()):
            node.rmdir()
    for d in sorted(want - have, key=len):
        (base / d).mkdir(parents=True, exist_ok=True)
    return {"changed": len(diff)}


def digest(root: Path, globs: Sequence[str]) -> dict[str, str]:
    """SHA-256 of every file under `root` matching `globs` (links: of their target text)."""
    files, _ = scan(root)
    out: dict[str, str] = {}
    for p in sorted(files):
        if not any_match(globs, p):
            continue
        h = hashlib.sha256()
        if files[p].kind == "l":
            h.update(b"link:" + files[p].target.encode())
        else:
            with open(root / p, "rb") as f:
                while block := f.read(_CHUNK):
                    h.update(block)
        out[p] = h.hexdigest()
    return out


# ---- the command ------------------------------------------------------------------------------


def _capped(d: dict[str, list[str]]) -> dict[str, object]:
    return {k: {"count": len(v), "paths": v[:LIST_CAP]} for k, v in d.items()}


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m flamechase.tools.treesync")
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("mirror")
    m.add_argument("--from", dest="other", required=True)
    for name in ("diff", "apply"):
        d = sub.add_parser(name)
        d.add_argument("--from", dest="other", required=True)
        d.add_argument("--allow", nargs="*", default=[])
        d.add_argument("--frozen", nargs="*", default=[])
        d.add_argument("--ignore", nargs="*", default=list(DEFAULT_IGNORES))
    h = sub.add_parser("hash")
    h.add_argument("--globs", nargs="*", default=[])
    return ap


def run(argv: Sequence[str], cwd: Path) -> dict[str, object]:
    args = _parser().parse_args(list(argv))
    for g in [
        *getattr(args, "allow", []),
        *getattr(args, "frozen", []),
        *getattr(args, "ignore", []),
        *getattr(args, "globs", []),
    ]:
        parse(g)
    if args.cmd == "hash":
        files = digest(cwd, args.globs)
        whole = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
        return {"files": files, "digest": whole}
    other = Path(args.other)
    if not other.is_dir():
        raise OSError(f"{other} is not a directory")
    if args.cmd == "mirror":
        return dict(mirror(cwd, other))
    sorted_, ignored = judged(cwd, other, args.allow, args.frozen, args.ignore)
    if args.cmd == "apply":
        for p in sorted_["accepted"]:
            take(cwd, other, p)
    return {**_capped(sorted_), "ignored": ignored, "applied": args.cmd == "apply"}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        result = run(sys.argv[1:] if argv is None else argv, Path.cwd())
    except GlobError as exc:
        print("TREESYNC " + json.dumps({"error": str(exc)}))
        return 2
    except (OSError, subprocess.SubprocessError) as exc:
        print("TREESYNC " + json.dumps({"error": f"{exc.__class__.__name__}: {exc}"}))
        return 3
    print("TREESYNC " + json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
