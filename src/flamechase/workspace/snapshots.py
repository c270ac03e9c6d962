"""Private snapshots of the user's source tree (planning workspace, lanes 2..N).

Owns: `snapshot` (copy the source into a sibling temp dir `.<name>.partial-<uuid>` with
`cp -a --reflink=auto`, falling back to `shutil.copytree` after a free-space check, then fsync and
rename into place, so a crash never leaves half a snapshot under the real name) and
`clean_partials` (remove temp dirs a crash left behind).
Must not touch: the source tree (it is only read), the run database, anything in the destination
parent other than the destination and its own temp dirs.

Snapshots contain directories, regular files and symlinks (copied as links, never followed).
FIFOs, sockets and devices are not copied, and never read. File contents are not fsynced one by
one (that would double the cost of a large copy); the directory entries are.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import subprocess
import uuid
from pathlib import Path

from flamechase.errors import SnapshotFailed
from flamechase.fsutil import fsync_dir
from flamechase.workspace.stats import measure

__all__ = ["clean_partials", "remove_tree", "snapshot"]

PARTIAL_RE = re.compile(r"^\..+\.partial-[0-9a-f]{32}$")
CP_ARGS = ("-a", "--reflink=auto", "--")


def _cp_binary() -> str | None:
    return shutil.which("cp")


def _is_special(mode: int) -> bool:
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return "no error output"


def _remove_specials(top: Path) -> None:
    """Delete FIFOs, sockets and devices that `cp -a` recreated (uses d_type: no extra stat)."""
    stack = [os.fspath(top)]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    if entry.is_symlink():
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    elif not entry.is_file(follow_symlinks=False):
                        with contextlib.suppress(OSError):
                            os.unlink(entry.path)
        except OSError:
            continue


def _ignore_specials(directory: str, names: list[str]) -> set[str]:
    skipped: set[str] = set()
    for name in names:
        try:
            mode = os.lstat(os.path.join(directory, name)).st_mode
        except OSError:
            continue
        if _is_special(mode):
            skipped.add(name)
    return skipped


def remove_tree(path: Path) -> None:
    """Remove `path` (a tree, a file or a link) without following links; tolerate read-only dirs."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    try:
        shutil.rmtree(path)
        return
    except OSError:
        pass
    # Read-only directories copied from the source: give the owner write access, then retry.
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)
    for dirpath, dirnames, _files in os.walk(path):
        for name in dirnames:
            child = os.path.join(dirpath, name)
            with contextlib.suppress(OSError):
                if stat.S_ISDIR(os.lstat(child).st_mode):
                    os.chmod(child, 0o700)
    shutil.rmtree(path, ignore_errors=True)


def _copy_with_cp(cp: str, source: Path, tmp: Path) -> str | None:
    """Copy with cp; None on success, else cp's first error line."""
    try:
        done = subprocess.run(
            [cp, *CP_ARGS, f"{source}/.", os.fspath(tmp)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            check=False,
        )
    except OSError as exc:
        return f"{cp}: {exc.strerror or exc}"
    if done.returncode != 0:
        return _first_line(done.stderr.decode("utf-8", "replace"))
    _remove_specials(tmp)
    return None


def _copy_with_python(source: Path, tmp: Path, dest: Path) -> None:
    needed = measure(source).bytes
    free = shutil.disk_usage(tmp).free
    if free < needed:
        raise SnapshotFailed(
            f"not enough free space to snapshot {source} into {dest}: needs {needed:,} bytes, "
            f"{free:,} free; free some space and retry"
        )
    try:
        shutil.copytree(source, tmp, symlinks=True, ignore=_ignore_specials, dirs_exist_ok=True)
    except shutil.Error as exc:
        errors = exc.args[0] if exc.args and isinstance(exc.args[0], list) else []
        detail = str(errors[0][2]) if errors and len(errors[0]) == 3 else str(exc)
        raise SnapshotFailed(
            f"could not snapshot {source} into {dest}: {_first_line(detail)}; "
            "make the source readable and retry"
        ) from None


def _copy_tree(source: Path, tmp: Path, dest: Path) -> None:
    """Fill the empty directory `tmp` with a copy of `source`."""
    cp = _cp_binary()
    if cp is not None:
        error = _copy_with_cp(cp, source, tmp)
        if error is None:
            return
        remove_tree(tmp)
        os.mkdir(tmp, 0o700)
    _copy_with_python(source, tmp, dest)


# long: one copy protocol (checks, temporary name, copy, fsync, rename) read top to bottom.
def snapshot(source: Path, dest: Path) -> None:
    """Make `dest` a private copy of `source`, or do nothing if `dest` is already a directory.

    The copy is made in a sibling `.<name>.partial-<uuid>` directory and renamed to `dest` only
    once complete and fsynced, so `dest` either does not exist or is a finished snapshot. The
    parent of `dest` must exist. Raises `SnapshotFailed` (the partial copy removed) if the source
    is not a directory, `dest` is inside the source, `dest` exists but is not a real directory,
    or the copy fails.
    """
    try:
        src = Path(source).resolve(strict=True)
    except OSError as exc:
        raise SnapshotFailed(
            f"cannot snapshot {source}: {exc.strerror or exc}; check the workspace path"
        ) from None
    if not src.is_dir():
        raise SnapshotFailed(f"cannot snapshot {source}: not a directory; check the workspace")
    dest = Path(os.path.abspath(dest))
    parent = dest.parent
    try:
        real_parent = parent.resolve(strict=True)
    except OSError:
        raise SnapshotFailed(
            f"cannot snapshot into {dest}: {parent} does not exist; create it first"
        ) from None
    target = real_parent / dest.name
    if target == src or target.is_relative_to(src):
        raise SnapshotFailed(
            f"cannot snapshot {src} into itself ({dest}); choose a destination outside the source"
        )
    try:
        existing = os.lstat(dest)
    except FileNotFoundError:
        existing = None
    if existing is not None:
        if stat.S_ISDIR(existing.st_mode):
            return
        raise SnapshotFailed(
            f"snapshot destination {dest} exists but is not a directory (a link or a file); "
            "remove it and retry"
        )

    tmp = parent / f".{dest.name}.partial-{uuid.uuid4().hex}"
    try:
        os.mkdir(tmp, 0o700)
    except OSError as exc:
        raise SnapshotFailed(
            f"cannot create {tmp}: {exc.strerror or exc}; check that {parent} is writable"
        ) from None
    try:
        _copy_tree(src, tmp, dest)
        fsync_dir(tmp)
        if os.path.lexists(dest):
            raise SnapshotFailed(
                f"snapshot destination {dest} appeared while copying; remove it and retry"
            )
        os.rename(tmp, dest)
        fsync_dir(parent)
    except SnapshotFailed:
        remove_tree(tmp)
        raise
    except Exception as exc:
        remove_tree(tmp)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SnapshotFailed(
            f"could not snapshot {src} into {dest}: {_first_line(reason)}; "
            "check disk space and permissions, then retry"
        ) from exc
    except BaseException:
        remove_tree(tmp)
        raise


def clean_partials(parent: Path) -> list[Path]:
    """Remove `.<name>.partial-<uuid>` leftovers of interrupted snapshots in `parent`.

    Only entries matching that pattern are touched; a link is unlinked, never followed.
    Returns what was removed (nothing if `parent` does not exist).
    """
    removed: list[Path] = []
    try:
        names = os.listdir(parent)
    except (FileNotFoundError, NotADirectoryError):
        return removed
    for name in sorted(names):
        if PARTIAL_RE.match(name):
            path = Path(parent) / name
            remove_tree(path)
            removed.append(path)
    return removed
