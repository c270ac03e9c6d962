"""What travels between the head and a node: trees, deltas and files, each checked on landing.

A place travels once as a packed tree (tar, gzip level 1: cheap to make, and source trees
shrink 3-5x); after that only what a turn changed travels back (a `Delta`: the changed and
new entries packed the same way, and the paths removed). Changes are found by comparing a
`Manifest` (per entry: kind, size, mode, mtime and ctime in ns, link target) taken after the
last landing with a fresh scan; ctime cannot be set by a program, so a rewrite that keeps
size and mtime is still seen.

Trees hold directories, regular files and symlinks (copied as links, never followed), as
snapshots do; FIFOs, sockets and devices are skipped. Unpacking uses tarfile's `tar` filter
(nothing outside the destination, through a link or by a name) and refuses hard links, and
removal walks parents without following links: a packed tree is never trusted to stay inside
its place.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import shutil
import stat
import tarfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from flamechase.engine.executor import ShippedFile
from flamechase.fsutil import FileRefused, atomic_write, read_regular_file
from flamechase.store.blobs import ArtifactRefused, FrozenArtifact, canonical_path

# kind ("d", "f", "l"), size, mode, mtime_ns, ctime_ns, link target ("" unless a link)
Entry = tuple[str, int, int, int, int, str]
Manifest = dict[str, Entry]

COMPRESS_LEVEL = 1
_NAME_MAX = 3072  # bytes of a member's path; PATH_MAX is 4096 with the destination before it


@dataclasses.dataclass(frozen=True, slots=True)
class Delta:
    """What a turn changed in a place: packed entries, and paths to remove before landing."""

    data: bytes
    removed: tuple[str, ...]
    entries: int  # entries packed

    @property
    def empty(self) -> bool:
        return not self.entries and not self.removed


def scan(root: Path) -> Manifest:
    """Every directory, regular file and symlink under `root`, by relative path."""
    out: Manifest = {}
    stack = [""]
    while stack:
        rel = stack.pop()
        with os.scandir(root / rel if rel else root) as it:
            for entry in it:
                name = f"{rel}/{entry.name}" if rel else entry.name
                st = entry.stat(follow_symlinks=False)
                mode = st.st_mode
                if stat.S_ISLNK(mode):
                    out[name] = ("l", 0, 0, 0, 0, os.readlink(entry.path))
                elif stat.S_ISDIR(mode):
                    out[name] = ("d", 0, stat.S_IMODE(mode), 0, 0, "")
                    stack.append(name)
                elif stat.S_ISREG(mode):
                    out[name] = (
                        "f",
                        st.st_size,
                        stat.S_IMODE(mode),
                        st.st_mtime_ns,
                        st.st_ctime_ns,
                        "",
                    )
    return out


def _pack(root: Path, names: Iterable[str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=COMPRESS_LEVEL) as tar:
        for name in names:
            tar.add(root / name, arcname=name, recursive=False)
            # Hard links travel as copies: a delta's link could name a file it does not carry.
            tar.inodes.clear()  # type: ignore[attr-defined]  # tarfile's own record
    return buf.getvalue()


def pack_tree(root: Path) -> tuple[bytes, int]:
    """The whole tree at `root`, packed; (bytes, entries)."""
    names = sorted(scan(root))  # a parent sorts before its children
    return _pack(root, names), len(names)


def _changed(old: Entry | None, new: Entry) -> bool:
    if old is None or old[0] != new[0]:
        return True
    if new[0] == "d":
        return old[2] != new[2]
    return old != new


def diff(root: Path, before: Manifest) -> tuple[Delta, Manifest]:
    """What changed under `root` since `before` was taken, and the manifest now."""
    now = scan(root)
    changed = sorted(n for n, e in now.items() if _changed(before.get(n), e))
    # Removed: gone, or of another kind now (a file that became a directory, ...), or a
    # link pointed elsewhere (landing one over the old would resolve the old one's target).
    removed = sorted(
        n
        for n, e in before.items()
        if n not in now or now[n][0] != e[0] or (e[0] == "l" and now[n] != e)
    )
    data = _pack(root, changed) if changed else b""
    return Delta(data=data, removed=tuple(removed), entries=len(changed)), now


def _inside(root: Path, rel: str) -> Path | None:
    """`root/rel` when every directory on the way is a real directory; None when a parent
    is missing. Refuses ('..', absolute, a link on the way) with ValueError."""
    parts = canonical_path(rel)
    current = root
    for part in parts[:-1]:
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            return None
        if not stat.S_ISDIR(st.st_mode):
            raise ValueError(f"{rel!r} passes through {current}, which is not a directory")
    return current / parts[-1]


def remove(root: Path, rel: str) -> None:
    """Remove `root/rel`, file or directory; ValueError when a link or a file is on the way."""
    target = _inside(root, rel)
    if target is None:
        return
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(target)
    else:
        target.unlink()


def _owned(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """tarfile's `tar` filter, with the files owned by whoever lands them. Hard links are
    refused: packs carry copies (`_pack`), and the filter leaves a hard link's target
    unchecked, so one could tie a file of the place to any file of this file system."""
    if member.islnk():
        raise ValueError(
            f"{member.name!r} is a hard link to {member.linkname!r}; packed "
            "trees carry copies, never hard links"
        )
    # Checked here too, not only by the filter (it resolves paths with realpath, which some
    # Pythons let a long enough path defeat): names of a sane length, every directory on the
    # way a real one (members land in order, so earlier ones are on disk), and never a write
    # through a link that is already there.
    raw = os.fsencode(member.name)
    if len(raw) > _NAME_MAX or any(len(part) > 255 for part in raw.split(b"/")):
        raise ValueError(f"{member.name[:80]!r}...: a name longer than a place's names are")
    target = _inside(Path(dest), member.name)
    if target is not None and not member.issym() and target.is_symlink():
        raise ValueError(f"{member.name!r} would be written through the link already there")
    kept = tarfile.tar_filter(member, dest)
    if not (kept.isreg() or kept.isdir() or kept.issym()):
        return None
    return kept.replace(uid=os.getuid(), gid=os.getgid(), uname="", gname="", deep=False)


def unpack(data: bytes, dest: Path) -> None:
    """Land a packed tree (or a delta's entries) under `dest`, which must exist."""
    if not data:
        return
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(dest, filter=_owned)  # noqa: S202 -- every member passes `_owned`


def apply(delta: Delta, dest: Path) -> None:
    """Make `dest` what the place became: remove what went, then land what changed."""
    for rel in delta.removed:
        remove(dest, rel)
    unpack(delta.data, dest)


def materialise(data: bytes, dest: Path) -> Manifest:
    """`dest` made afresh from a packed tree (whatever was there goes); its manifest."""
    if dest.is_symlink() or dest.is_file():
        dest.unlink()
    elif dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(mode=0o700, parents=True)
    unpack(data, dest)
    return scan(dest)


# ---- single files --------------------------------------------------------------------------


def ship(root: Path, names: Iterable[str], limit: int) -> tuple[list[ShippedFile], list[str]]:
    """Regular files `names` under `root`, hashed; (shipped, one line per file left behind)."""
    out: list[ShippedFile] = []
    left: list[str] = []
    for name in names:
        try:
            data = read_regular_file(root / name, limit)
        except FileRefused as exc:
            left.append(f"{name}: {exc.reason}")
            continue
        out.append(ShippedFile(name, hashlib.sha256(data).hexdigest(), data))
    return out, left


def ship_dir(root: Path, limit: int) -> tuple[list[ShippedFile], list[str]]:
    """Every regular file under `root` (a turn's directory), each up to `limit` bytes."""
    if not root.is_dir():
        return [], []
    names = sorted(n for n, e in scan(root).items() if e[0] == "f")
    return ship(root, names, limit)


def land(root: Path, files: Sequence[ShippedFile], mode: int = 0o600) -> None:
    """Write `files` under `root`, each checked against its hash first (ArtifactRefused)."""
    for f in files:
        got = hashlib.sha256(f.data).hexdigest()
        if got != f.sha256:
            raise ArtifactRefused(
                f"artifact {f.path!r}: arrived with sha256 {got[:16]}… "
                f"but left with {f.sha256[:16]}…; refused",
                f.path,
            )
        try:
            target = _inside(root, f.path)
        except ValueError as exc:
            raise ArtifactRefused(f"artifact {f.path!r}: {exc}", f.path) from None
        if target is None:
            parts = canonical_path(f.path)
            parent = root.joinpath(*parts[:-1])
            parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            target = root.joinpath(*parts)
        try:
            atomic_write(target, f.data, mode)
        except FileRefused as exc:
            raise ArtifactRefused(f"artifact {f.path!r}: {exc}", f.path) from None


def check_frozen(frozen: Sequence[FrozenArtifact], shipped: Sequence[ShippedFile]) -> None:
    """What the head froze is what the node sent (hashed on both sides)."""
    sent: Mapping[str, str] = {"/".join(canonical_path(f.path)): f.sha256 for f in shipped}
    for art in frozen:
        if sent.get(art.path) != art.sha256:
            raise ArtifactRefused(
                f"artifact {art.path!r}: the frozen copy differs from the "
                "file the node sent; refused",
                art.path,
            )
