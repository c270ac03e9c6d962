"""Control-path guard: the run directory's paths must stay the directories and files we made.

Owns: `ControlPaths`, a record of (device, inode) identities taken with `lstat` when the runtime
creates each control path (lane snapshot roots, artifact roots, report and checkpoint
locations, the database), and `verify()`, which fails closed with `ControlPathViolation` if any
of them is missing, is a symlink, has the wrong type, sits under a linked directory, or is a
different object than the one recorded. The record serializes to JSON so the engine can keep it
in the run database and re-verify the *stored* identities after a resume.
Must not touch: anything on disk (it only lstats), the run database (the engine stores
`to_json()`).

A file the runtime replaces by rename gets a new inode: call `record()` again after each such
replacement (and store the new JSON). Files written in place (the database, append-only logs)
keep their identity.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from flamechase.errors import ControlPathViolation

__all__ = ["ControlPaths", "Kind", "Recorded"]

Kind = Literal["dir", "file"]
_VERSION = 1


@dataclass(frozen=True)
class Recorded:
    """One control path: its kind, whether it may be absent, and its identity when recorded."""

    path: str
    kind: Kind
    optional: bool
    dev: int | None
    ino: int | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "optional": self.optional,
            "dev": self.dev,
            "ino": self.ino,
        }


def _violation(path: str, detail: str) -> ControlPathViolation:
    return ControlPathViolation(
        f"control path {path} was replaced or linked ({detail}); "
        "the run stopped to protect your files"
    )


def _describe(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "it is now a symbolic link"
    if stat.S_ISDIR(mode):
        return "it is now a directory"
    if stat.S_ISREG(mode):
        return "it is now a regular file"
    return "it is now a special file"


def _check_type(path: str, kind: Kind, mode: int) -> None:
    want_dir = kind == "dir"
    ok = stat.S_ISDIR(mode) if want_dir else stat.S_ISREG(mode)
    if not ok:
        raise _violation(path, _describe(mode))


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        # A parent was replaced by a file: the path is as good as gone, and wrong.
        raise _violation(path, "a parent directory is no longer a directory") from None
    except OSError as exc:
        raise _violation(path, f"cannot be examined: {exc.strerror or exc}") from None


def _int_or_none(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise ValueError("dev/ino must be a non-negative integer or null")


class ControlPaths:
    """The set of control paths of one run, with the identities they had when created."""

    def __init__(self) -> None:
        self._entries: dict[str, Recorded] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, path: object) -> bool:
        if not isinstance(path, (str, os.PathLike)):
            return False
        return os.path.abspath(path) in self._entries

    @property
    def entries(self) -> list[Recorded]:
        return [self._entries[key] for key in sorted(self._entries, key=_sort_key)]

    def record(self, path: Path | str, kind: Kind, *, optional: bool = False) -> None:
        """Record `path` as a control path of `kind` with its current (dev, ino).

        Call it right after creating the path (and again after replacing a file by rename).
        An `optional` path may be absent now and later; when present it must have the right
        type, and if it was present when recorded, the same identity. Raises
        `ControlPathViolation` if the path is already a link or of the wrong type, or is
        missing and not optional.
        """
        if kind not in ("dir", "file"):
            raise ValueError(f"control path kind must be 'dir' or 'file', not {kind!r}")
        key = os.path.abspath(path)
        st = _lstat(key)
        if st is None:
            if not optional:
                raise _violation(key, "it is missing")
            self._entries[key] = Recorded(key, kind, optional, None, None)
            return
        _check_type(key, kind, st.st_mode)
        self._entries[key] = Recorded(key, kind, optional, st.st_dev, st.st_ino)

    def forget(self, path: Path | str) -> None:
        """Stop guarding `path` (e.g. a lane that was removed)."""
        self._entries.pop(os.path.abspath(path), None)

    def verify(self) -> None:
        """Check every recorded path; raise `ControlPathViolation` naming the first bad one."""
        dirs = {key for key, entry in self._entries.items() if entry.kind == "dir"}
        for entry in self.entries:
            if not self._verify_ancestors(entry, dirs):
                continue
            st = _lstat(entry.path)
            if st is None:
                if entry.optional:
                    continue
                raise _violation(entry.path, "it is missing")
            _check_type(entry.path, entry.kind, st.st_mode)
            if entry.ino is not None and (st.st_dev, st.st_ino) != (entry.dev, entry.ino):
                raise _violation(entry.path, "it is a different object than the one created")

    @staticmethod
    def _verify_ancestors(entry: Recorded, dirs: set[str]) -> bool:
        """Directories between the topmost recorded ancestor and the entry must be real dirs.

        Returns False if one is missing and the entry is optional (so it is absent too).
        """
        ancestors = [os.fspath(parent) for parent in Path(entry.path).parents]  # nearest first
        top = None
        for index, ancestor in enumerate(ancestors):
            if ancestor in dirs:
                top = index
        if top is None:
            return True
        for ancestor in reversed(ancestors[: top + 1]):
            st = _lstat(ancestor)
            if st is None:
                if entry.optional and ancestor not in dirs:
                    return False
                raise _violation(ancestor, "it is missing")
            if not stat.S_ISDIR(st.st_mode):
                raise _violation(ancestor, _describe(st.st_mode))
        return True

    def to_json(self) -> str:
        """The identities as JSON text, for the run database."""
        return json.dumps(
            {"version": _VERSION, "paths": [entry.as_dict() for entry in self.entries]},
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> ControlPaths:
        """Load stored identities; `verify()` then checks the disk against *them*.

        Raises `ControlPathViolation` if the stored text is malformed (fail closed).
        """
        guard = cls()
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or data.get("version") != _VERSION:
                raise ValueError("unknown format version")
            items = data["paths"]
            if not isinstance(items, list):
                raise ValueError("'paths' is not a list")
            for item in items:
                if not isinstance(item, dict):
                    raise ValueError("an entry is not an object")
                path, kind, optional = item["path"], item["kind"], item["optional"]
                if not isinstance(path, str) or not os.path.isabs(path) or "\0" in path:
                    raise ValueError("an entry's path is not absolute")
                if kind not in ("dir", "file") or not isinstance(optional, bool):
                    raise ValueError("an entry's kind or optional flag is invalid")
                dev, ino = _int_or_none(item["dev"]), _int_or_none(item["ino"])
                if (dev is None) != (ino is None) or (dev is None and not optional):
                    raise ValueError("an entry's identity is incomplete")
                key = os.path.abspath(path)
                guard._entries[key] = Recorded(key, kind, optional, dev, ino)
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise ControlPathViolation(
                f"stored control-path identities are unreadable ({exc}); "
                "the run cannot be verified, start a new run"
            ) from None
        return guard


def _sort_key(path: str) -> tuple[str, ...]:
    return Path(path).parts
