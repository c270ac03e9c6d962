"""Content-addressed, read-only store of published artifact files.

Owns: `BlobStore` — `freeze` (check each declared artifact path, read it without ever following
a link, hash it and copy it into `<root>/sha256/<ab>/<rest>`, mode 0444 in 0555 directories),
`verify` (re-hash one blob) and `extract` (rebuild a package under a directory, verifying every
hash on the way out and never writing outside it or through a link).
Must not touch: the run database (the engine records the returned manifest), the lanes' artifact
roots (only read), anything outside `root` except the `extract` destination.

Every path walk is done component by component with `openat(..., O_NOFOLLOW)` from a directory
descriptor, so a directory swapped for a symlink after a check cannot redirect a read or write.
Agent mistakes and attacks raise `ArtifactRefused` (freeze) or `ArtifactError` (extract), each one
line. A tampered store (its root or directories replaced by links) raises `ControlPathViolation`
from `freeze`; genuine I/O failures (disk full) propagate as `OSError`.
"""

# long file: the blob store's no-follow walks for freezing and extracting share their descriptor
# helpers; split, each half would re-implement them.

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flamechase.errors import ArtifactError, ControlPathViolation
from flamechase.fsutil import kind_of

__all__ = [
    "ARTIFACT_FILE_LIMIT",
    "ArtifactRefused",
    "BlobStore",
    "FrozenArtifact",
    "canonical_path",
]

ARTIFACT_FILE_LIMIT = 64 * 1024 * 1024
_BLOCK = 1024 * 1024
_MAX_PATH_BYTES = 4096
_MAX_NAME_BYTES = 255
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_BLOB_MODE = 0o444
_FANOUT_MODE = 0o555

# Installing a blob briefly makes its fan-out directory writable; one installer at a time.
_INSTALL_LOCK = threading.Lock()


class ArtifactRefused(ValueError):
    """A declared artifact was refused at publication; `str()` is one line naming it."""

    def __init__(self, message: str, path: str | None = None) -> None:
        self.path = path
        super().__init__(message)


def _refused(path: object, reason: str) -> ArtifactRefused:
    shown = path if isinstance(path, str) else repr(path)
    return ArtifactRefused(f"artifact {shown!r}: {reason}", shown)


@dataclass(frozen=True)
class FrozenArtifact:
    """One published file: canonical relative path, SHA-256 (hex), size, and description."""

    path: str
    sha256: str
    size: int
    description: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "sha256": self.sha256,
            "size": self.size,
            "description": self.description,
        }


class _BadPathError(Exception):
    pass


class _TamperedError(Exception):
    pass


class _TooLargeError(Exception):
    pass


def canonical_path(path: object) -> tuple[str, ...]:
    """The components of a declared artifact path, or ValueError with the reason.

    Relative, '/'-separated, UTF-8, no NUL, no backslash, no empty component, no '..';
    '.' components are dropped ('./a' is 'a').
    """
    try:
        return _split(path)
    except _BadPathError as exc:
        raise ValueError(str(exc)) from None


def _split(path: object) -> tuple[str, ...]:
    if not isinstance(path, str):
        raise _BadPathError("is not a string")
    if not path:
        raise _BadPathError("is empty")
    if "\0" in path:
        raise _BadPathError("contains a NUL byte")
    if "\\" in path:
        raise _BadPathError("contains a backslash")
    try:
        encoded = path.encode("utf-8")
    except UnicodeEncodeError:
        raise _BadPathError("is not valid UTF-8") from None
    if path.startswith("/"):
        raise _BadPathError("is absolute; give a path relative to the artifact root")
    if len(encoded) > _MAX_PATH_BYTES:
        raise _BadPathError(f"is longer than {_MAX_PATH_BYTES} bytes")
    parts = path.split("/")
    if any(part == "" for part in parts):
        raise _BadPathError("has an empty component")
    if any(part == ".." for part in parts):
        raise _BadPathError("contains '..'")
    kept = tuple(part for part in parts if part != ".")
    if not kept:
        raise _BadPathError("names the artifact root itself, not a file")
    if any(len(part.encode("utf-8")) > _MAX_NAME_BYTES for part in kept):
        raise _BadPathError(f"has a component longer than {_MAX_NAME_BYTES} bytes")
    return kept


def _lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _copy_hashing(src_fd: int, dst_fd: int | None, limit: int) -> tuple[str, int]:
    """Read `src_fd` to EOF in 1 MiB blocks, hashing (and copying to `dst_fd`).

    Raises _TooLargeError as soon as more than `limit` bytes were read, whatever fstat said.
    """
    digest = hashlib.sha256()
    total = 0
    while True:
        block = os.read(src_fd, _BLOCK)
        if not block:
            return digest.hexdigest(), total
        total += len(block)
        if total > limit:
            raise _TooLargeError(total)
        digest.update(block)
        if dst_fd is not None:
            view = memoryview(block)
            while view:
                view = view[os.write(dst_fd, view) :]


@contextlib.contextmanager
def _closing(fds: list[int]) -> Iterator[list[int]]:
    try:
        yield fds
    finally:
        for fd in reversed(fds):
            with contextlib.suppress(OSError):
                os.close(fd)


class BlobStore:
    """A write-once store of file contents, addressed by SHA-256, under `root`."""

    def __init__(self, root: Path, *, file_limit: int = ARTIFACT_FILE_LIMIT) -> None:
        self.root = Path(root)
        self.file_limit = file_limit

    def blob_path(self, sha256: str) -> Path:
        """Where the blob for `sha256` lives (whether or not it exists)."""
        if not _HEX64.match(sha256):
            raise ValueError(f"not a SHA-256 hex digest: {sha256!r}")
        return self.root / "sha256" / sha256[:2] / sha256[2:]

    # -- store directories ----------------------------------------------------------------

    def _open_root(self, *, create: bool) -> int:
        if create:
            try:
                os.mkdir(self.root, 0o700)
            except FileExistsError:
                pass
            except FileNotFoundError:
                raise _TamperedError(f"blob store parent {self.root.parent} is missing") from None
            else:
                with contextlib.suppress(OSError):
                    _fsync_path(self.root.parent)
        try:
            return os.open(self.root, _DIR_FLAGS)
        except FileNotFoundError:
            raise _TamperedError(f"blob store {self.root} is missing") from None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise _TamperedError(f"blob store {self.root} is not a real directory") from None
            raise

    def _open_sub(self, parent_fd: int, name: str, shown: str, *, create: bool) -> int:
        if create:
            try:
                os.mkdir(name, 0o700, dir_fd=parent_fd)
            except FileExistsError:
                pass
            else:
                os.fsync(parent_fd)
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
        except FileNotFoundError:
            raise _TamperedError(f"blob store directory {shown} is missing") from None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise _TamperedError(
                    f"blob store directory {shown} was replaced or linked"
                ) from None
            raise

    def _open_blob(self, root_fd: int, sha256: str) -> int:
        """An fd on the blob file, never through a link; _TamperedError if absent or not regular."""
        shown = self.blob_path(sha256)
        with _closing([]) as fds:
            fds.append(self._open_sub(root_fd, "sha256", f"{self.root}/sha256", create=False))
            fds.append(self._open_sub(fds[-1], sha256[:2], os.fspath(shown.parent), create=False))
            try:
                fd = os.open(sha256[2:], _READ_FLAGS, dir_fd=fds[-1])
            except FileNotFoundError:
                raise _TamperedError(f"blob {shown} is missing") from None
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise _TamperedError(f"blob {shown} was replaced by a link") from None
                raise
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                raise _TamperedError(f"blob {shown} is not a regular file")
            return fd

    # -- freeze ---------------------------------------------------------------------------

    def freeze(self, artifact_root: Path, refs: Sequence[tuple[str, str]]) -> list[FrozenArtifact]:
        """Check, hash and copy every declared artifact into the store; all or a refusal.

        `refs` is a list of (path relative to `artifact_root`, description). Each path must be
        syntactically safe (see `canonical_path`), reach a regular file of at most
        `file_limit` bytes without passing through any symlink, and appear once. Raises
        `ArtifactRefused` naming the first bad artifact. Blobs already in the store are
        verified and kept (a corrupt one is replaced).
        """
        planned: list[tuple[str, tuple[str, ...], str]] = []
        seen: set[str] = set()
        for ref in refs:
            if not isinstance(ref, (tuple, list)) or len(ref) != 2:
                raise ArtifactRefused(f"artifact reference {ref!r} is not (path, description)")
            raw, description = ref
            try:
                parts = _split(raw)
            except _BadPathError as exc:
                raise _refused(raw, str(exc)) from None
            canonical = "/".join(parts)
            if canonical in seen:
                raise _refused(raw, f"is listed twice (as {canonical!r}) in one deliverable")
            seen.add(canonical)
            planned.append((canonical, parts, description if isinstance(description, str) else ""))

        root_shown = os.fspath(artifact_root)
        try:
            art_fd = os.open(artifact_root, _DIR_FLAGS)
        except OSError as exc:
            reason = "is missing" if exc.errno == errno.ENOENT else "is not a real directory"
            if exc.errno == errno.ELOOP:
                reason = "is a symbolic link"
            elif exc.errno == errno.ENOTDIR:
                with contextlib.suppress(OSError):
                    if stat.S_ISLNK(os.lstat(artifact_root).st_mode):
                        reason = "is a symbolic link"
            raise ArtifactRefused(
                f"artifact root {root_shown} {reason}; it must be the lane's own directory",
                root_shown,
            ) from None
        frozen: list[FrozenArtifact] = []
        with _closing([art_fd]) as fds:
            try:
                fds.append(self._open_root(create=True))
                store_fd = fds[-1]
                fds.append(self._open_sub(store_fd, "staging", f"{self.root}/staging", create=True))
                tmp_fd = fds[-1]
                for canonical, parts, description in planned:
                    sha, size = self._freeze_one(art_fd, store_fd, tmp_fd, canonical, parts)
                    frozen.append(FrozenArtifact(canonical, sha, size, description))
            except _TamperedError as exc:
                raise ControlPathViolation(
                    f"{exc}; the run stopped to protect your files"
                ) from None
        return frozen

    def _open_artifact(self, art_fd: int, canonical: str, parts: tuple[str, ...]) -> int:
        with _closing([]) as fds:
            current = art_fd
            for depth, name in enumerate(parts[:-1]):
                so_far = "/".join(parts[: depth + 1])
                try:
                    fds.append(os.open(name, _DIR_FLAGS, dir_fd=current))
                except OSError as exc:
                    st = None
                    with contextlib.suppress(OSError):
                        st = _lstat_at(current, name)
                    if st is None:
                        raise _refused(canonical, f"is missing (no directory {so_far!r})") from None
                    if stat.S_ISLNK(st.st_mode):
                        raise _refused(
                            canonical, f"passes through a symlink ({so_far!r})"
                        ) from None
                    if not stat.S_ISDIR(st.st_mode):
                        raise _refused(canonical, f"{so_far!r} is not a directory") from None
                    raise _refused(canonical, f"cannot be read ({exc.strerror})") from None
                current = fds[-1]
            name = parts[-1]
            try:
                before = _lstat_at(current, name)
            except OSError as exc:
                raise _refused(canonical, f"cannot be read ({exc.strerror})") from None
            if before is None:
                raise _refused(canonical, "is missing")
            if stat.S_ISLNK(before.st_mode):
                raise _refused(canonical, "is a symbolic link; publish the file itself")
            if not stat.S_ISREG(before.st_mode):
                raise _refused(canonical, f"is {kind_of(before.st_mode)}, not a regular file")
            if before.st_size > self.file_limit:
                raise _refused(canonical, f"exceeds {self.file_limit} bytes")
            try:
                fd = os.open(name, _READ_FLAGS, dir_fd=current)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise _refused(
                        canonical, "is a symbolic link; publish the file itself"
                    ) from None
                raise _refused(canonical, f"cannot be read ({exc.strerror})") from None
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (
                before.st_dev,
                before.st_ino,
            ):
                os.close(fd)
                raise _refused(canonical, "was replaced while being published")
            if st.st_size > self.file_limit:
                os.close(fd)
                raise _refused(canonical, f"exceeds {self.file_limit} bytes")
            return fd

    def _freeze_one(
        self, art_fd: int, store_fd: int, tmp_fd: int, canonical: str, parts: tuple[str, ...]
    ) -> tuple[str, int]:
        src_fd = self._open_artifact(art_fd, canonical, parts)
        tmp_name = f"{uuid.uuid4().hex}.part"
        installed = False
        try:
            dst_fd = os.open(tmp_name, _CREATE_FLAGS, 0o600, dir_fd=tmp_fd)
            try:
                try:
                    sha, size = _copy_hashing(src_fd, dst_fd, self.file_limit)
                except _TooLargeError:
                    raise _refused(
                        canonical, f"exceeds {self.file_limit} bytes (grew while being read)"
                    ) from None
                except OSError as exc:
                    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                        raise
                    raise _refused(canonical, f"cannot be read ({exc.strerror})") from None
                os.fchmod(dst_fd, _BLOB_MODE)
                os.fsync(dst_fd)
            finally:
                os.close(dst_fd)
            self._install(store_fd, tmp_fd, tmp_name, sha)
            installed = True
            return sha, size
        finally:
            os.close(src_fd)
            if not installed:
                with contextlib.suppress(OSError):
                    os.unlink(tmp_name, dir_fd=tmp_fd)

    def _install(self, store_fd: int, tmp_fd: int, tmp_name: str, sha: str) -> None:
        """Move a finished temp file to its blob path; keep an existing good blob."""
        with _INSTALL_LOCK, _closing([]) as fds:
            fds.append(self._open_sub(store_fd, "sha256", f"{self.root}/sha256", create=True))
            fan_shown = os.fspath(self.blob_path(sha).parent)
            fds.append(self._open_sub(fds[-1], sha[:2], fan_shown, create=True))
            fan_fd = fds[-1]
            rest = sha[2:]
            if self._blob_is_good(fan_fd, rest, sha, max(self.file_limit, ARTIFACT_FILE_LIMIT)):
                os.unlink(tmp_name, dir_fd=tmp_fd)
                os.fchmod(fan_fd, _FANOUT_MODE)
                return
            os.fchmod(fan_fd, 0o755)
            try:
                existing = _lstat_at(fan_fd, rest)
                if existing is not None and stat.S_ISDIR(existing.st_mode):
                    what = kind_of(existing.st_mode)
                    raise _TamperedError(f"blob {self.blob_path(sha)} is {what}")
                # rename replaces a corrupt blob or a planted link; it never writes through one.
                os.rename(tmp_name, rest, src_dir_fd=tmp_fd, dst_dir_fd=fan_fd)
                os.fsync(fan_fd)
            finally:
                os.fchmod(fan_fd, _FANOUT_MODE)

    @staticmethod
    def _blob_is_good(fan_fd: int, rest: str, sha: str, limit: int) -> bool:
        try:
            fd = os.open(rest, _READ_FLAGS, dir_fd=fan_fd)
        except OSError:
            return False
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return False
            digest, _size = _copy_hashing(fd, None, limit)
            return digest == sha
        except (OSError, _TooLargeError):
            return False
        finally:
            os.close(fd)

    def allow_removal(self) -> None:
        """Make the fan-out directories owner-writable so the run directory can be deleted.

        Blobs are 0444 in 0555 directories; a non-root user cannot unlink them until this
        runs. Links are never followed. Only for deleting a run: the store is no longer frozen.
        """
        try:
            root_fd = self._open_root(create=False)
        except _TamperedError:
            return
        with _closing([root_fd]) as fds:
            try:
                fds.append(self._open_sub(root_fd, "sha256", "sha256", create=False))
            except _TamperedError:
                return
            for name in os.listdir(fds[-1]):
                with contextlib.suppress(OSError):
                    fan_fd = os.open(name, _DIR_FLAGS, dir_fd=fds[-1])
                    try:
                        os.fchmod(fan_fd, 0o700)
                    finally:
                        os.close(fan_fd)

    # -- verify ---------------------------------------------------------------------------

    def verify(self, sha256: str) -> bool:
        """True iff the blob exists as a regular file (no link) and still hashes to `sha256`."""
        if not isinstance(sha256, str) or not _HEX64.match(sha256):
            return False
        try:
            root_fd = self._open_root(create=False)
        except (_TamperedError, OSError):
            return False
        try:
            fd = self._open_blob(root_fd, sha256)
        except (_TamperedError, OSError):
            return False
        finally:
            os.close(root_fd)
        try:
            digest, _size = _copy_hashing(fd, None, max(self.file_limit, ARTIFACT_FILE_LIMIT))
            return digest == sha256
        except (OSError, _TooLargeError):
            return False
        finally:
            os.close(fd)

    # -- extract --------------------------------------------------------------------------

    def extract(self, manifest: Iterable[Mapping[str, Any]], dest: Path) -> list[Path]:
        """Write every manifest entry `{path, sha256, size}` under `dest`, verified.

        Nothing is written unless every check passes first: no path may escape `dest`
        (absolute, '..', NUL, backslash, empty component) or repeat; every blob must exist
        as a regular file (no link) and match its sha256 and size; `dest` and every existing
        directory on the way must be a real directory (not a link) and an existing file in
        the way a regular file (it is replaced, never written through). Files are then
        written to temp names, hashed again on the way, and renamed into place; a blob that
        changes in between is refused with nothing written for that file. `dest` is created
        if missing. Raises `ArtifactError` (one line). Returns the written paths.
        """
        entries = self._check_manifest(manifest, dest)
        dest = Path(dest)
        with _closing([]) as fds:
            try:
                fds.append(self._open_root(create=False))
            except _TamperedError as exc:
                raise ArtifactError(f"{exc}; cannot extract from it") from None
            store_fd = fds[-1]
            for canonical, _parts, sha, size in entries:
                self._check_blob(store_fd, canonical, sha, size)
            fds.append(self._open_dest(dest))
            dest_fd = fds[-1]
            for _canonical, parts, _sha, _size in entries:
                _check_dest_path(dest_fd, dest, parts)
            written: list[Path] = []
            for canonical, parts, sha, size in entries:
                self._write_one(store_fd, dest_fd, dest, (canonical, parts, sha, size))
                written.append(dest.joinpath(*parts))
            return written

    @staticmethod
    def _check_manifest(
        manifest: Iterable[Mapping[str, Any]], dest: Path
    ) -> list[tuple[str, tuple[str, ...], str, int]]:
        entries: list[tuple[str, tuple[str, ...], str, int]] = []
        seen: set[str] = set()
        for item in manifest:
            if not isinstance(item, Mapping):
                raise ArtifactError(f"manifest entry {item!r} is not an object; cannot extract")
            raw = item.get("path")
            sha = item.get("sha256")
            size = item.get("size")
            try:
                parts = _split(raw)
            except _BadPathError as exc:
                raise ArtifactError(
                    f"artifact {raw!r} {exc}: it would escape {dest}; refusing to extract"
                ) from None
            if not isinstance(sha, str) or not _HEX64.match(sha):
                raise ArtifactError(f"artifact {raw!r} has no valid sha256; refusing to extract")
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise ArtifactError(f"artifact {raw!r} has no valid size; refusing to extract")
            canonical = "/".join(parts)
            if canonical in seen:
                raise ArtifactError(f"artifact {canonical!r} is listed twice; refusing to extract")
            seen.add(canonical)
            entries.append((canonical, parts, sha, size))
        return entries

    def _read_blob(self, store_fd: int, canonical: str, sha: str) -> int:
        try:
            return self._open_blob(store_fd, sha)
        except _TamperedError as exc:
            raise ArtifactError(f"artifact {canonical!r}: {exc}; cannot extract it") from None

    @staticmethod
    def _mismatch(canonical: str, sha: str, target: Path | None) -> ArtifactError:
        outcome = f"{target} was not written" if target else "nothing was written"
        return ArtifactError(
            f"artifact {canonical!r}: stored blob does not match its recorded sha256 "
            f"{sha[:16]}…; the store was altered, {outcome}"
        )

    def _check_blob(self, store_fd: int, canonical: str, sha: str, size: int) -> None:
        fd = self._read_blob(store_fd, canonical, sha)
        try:
            digest, got = _copy_hashing(fd, None, size)
        except _TooLargeError:
            digest, got = "", -1
        finally:
            os.close(fd)
        if digest != sha or got != size:
            raise self._mismatch(canonical, sha, None)

    @staticmethod
    def _open_dest(dest: Path) -> int:
        try:
            st = os.lstat(dest)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise ArtifactError(
                f"cannot use {dest} ({exc.strerror}); choose another directory"
            ) from None
        if st is None:
            try:
                os.makedirs(dest, exist_ok=True)
            except OSError as exc:
                raise ArtifactError(
                    f"cannot create {dest} ({exc.strerror}); choose another directory"
                ) from None
        elif not stat.S_ISDIR(st.st_mode):
            raise ArtifactError(
                f"extraction target {dest} is {kind_of(st.st_mode)}; give a real directory"
            )
        try:
            return os.open(dest, _DIR_FLAGS)
        except OSError as exc:
            raise ArtifactError(
                f"extraction target {dest} cannot be opened as a real directory "
                f"({exc.strerror}); give a real directory"
            ) from None

    def _write_one(
        self,
        store_fd: int,
        dest_fd: int,
        dest: Path,
        entry: tuple[str, tuple[str, ...], str, int],
    ) -> None:
        canonical, parts, sha, size = entry
        target = dest.joinpath(*parts)
        with _closing([self._read_blob(store_fd, canonical, sha)]) as fds:
            blob_fd = fds[0]
            current = dest_fd
            for depth, name in enumerate(parts[:-1]):
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=current)
                shown = dest.joinpath(*parts[: depth + 1])
                try:
                    fds.append(_open_dest_dir(current, name, shown))
                except FileNotFoundError:
                    raise ArtifactError(
                        f"{shown} vanished while extracting; extract again"
                    ) from None
                current = fds[-1]
            name = parts[-1]
            _check_dest_file(current, name, target)
            tmp_name = f".{name[:200]}.{uuid.uuid4().hex}.extract"
            out_fd = os.open(tmp_name, _CREATE_FLAGS, 0o644, dir_fd=current)
            keep = False
            try:
                try:
                    digest, got = _copy_hashing(blob_fd, out_fd, size)
                except _TooLargeError:
                    digest, got = "", -1
                if digest != sha or got != size:
                    raise self._mismatch(canonical, sha, target)
                os.fsync(out_fd)
                keep = True
            finally:
                os.close(out_fd)
                if not keep:
                    with contextlib.suppress(OSError):
                        os.unlink(tmp_name, dir_fd=current)
            try:
                # rename replaces a link planted since the check; it never writes through one
                os.rename(tmp_name, name, src_dir_fd=current, dst_dir_fd=current)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.unlink(tmp_name, dir_fd=current)
                raise ArtifactError(
                    f"cannot write {target} ({exc.strerror}); remove what is there and retry"
                ) from None
            os.fsync(current)


def _open_dest_dir(parent_fd: int, name: str, shown: Path) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        found = None
        with contextlib.suppress(OSError):
            found = _lstat_at(parent_fd, name)
        if found is None and exc.errno == errno.ENOENT:
            raise
        what = kind_of(found.st_mode) if found else f"unusable ({exc.strerror})"
        raise ArtifactError(
            f"{shown} is {what}, not a directory; refusing to write through it"
        ) from None


def _check_dest_file(dir_fd: int, name: str, target: Path) -> None:
    existing = _lstat_at(dir_fd, name)
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        raise ArtifactError(
            f"{target} already exists as {kind_of(existing.st_mode)}; "
            "refusing to overwrite it, remove it or extract elsewhere"
        )


def _check_dest_path(dest_fd: int, dest: Path, parts: tuple[str, ...]) -> None:
    """Before writing anything: existing components are real dirs, an existing file regular."""
    with _closing([]) as fds:
        current = dest_fd
        for depth, name in enumerate(parts[:-1]):
            try:
                fds.append(_open_dest_dir(current, name, dest.joinpath(*parts[: depth + 1])))
            except FileNotFoundError:
                return  # created at write time
            current = fds[-1]
        _check_dest_file(current, parts[-1], dest.joinpath(*parts))


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
