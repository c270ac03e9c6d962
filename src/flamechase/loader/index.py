"""A flow index (a "flowverse"): which flows exist, in which versions, at which commit.

An index is YAML or JSON: a list of entries, `{flows: [...]}`, or one entry per manifest
(`**/flow.yaml`, the flowverse's layout) in a directory or a git repository. An entry:
name, version, description, repo (a URL, or OWNER/NAME on GitHub), ref (the tag), commit
(the full SHA the ref named when the index was written), subdir, license.

Installing resolves the entry's ref on its repository and refuses it unless it still names
the recorded commit; the code is then checked out at that commit (and verified again at
every load) and read from that commit's own objects (loader/pinned.py), so an index entry runs
only the code it recorded; an entry whose `subdir` is not a plain path inside its repository
is refused as `#SUBDIR` is.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from flamechase.errors import FlowIndexError, FlowNotFound
from flamechase.loader import gitsource, installed

INDEX_VAR = "FLAMECHASE_FLOW_INDEX"
MANIFESTS = ("flow.yaml", "flow.yml", "flow.json")
INDEX_FILES = ("index.yaml", "index.yml", "index.json")
_MAX_BYTES = 4 << 20
_GITHUB = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


class Entry(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, coerce_numbers_to_str=True)

    name: str = Field(pattern=installed.NAME.pattern)
    version: str = Field(min_length=1, max_length=100)
    description: str = ""
    repo: str = Field(min_length=1)
    ref: str | None = None
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    subdir: str = ""
    license: str = ""

    @field_validator("subdir")
    @classmethod
    def _inside(cls, subdir: str) -> str:
        # Checked as `#SUBDIR` is: an entry names a directory of its own commit, nothing else.
        subdir = subdir.rstrip("/")
        problem = gitsource.subdir_problem(subdir)
        if problem:
            raise ValueError(problem)
        return subdir

    @property
    def url(self) -> str:
        """The repository as a git URL (`OWNER/NAME` is a GitHub repository)."""
        if _GITHUB.fullmatch(self.repo) and not Path(self.repo).exists():
            return f"https://github.com/{self.repo}"
        return self.repo


def version_key(version: str) -> tuple[tuple[int, str], ...]:
    """Sort key: numeric parts as numbers (0.10 after 0.9), the rest as text."""
    parts = re.split(r"[.+-]", version.lstrip("v"))
    return tuple((int(p), "") if p.isdigit() else (-1, p) for p in parts)


def default_source() -> str | None:
    return os.environ.get(INDEX_VAR) or None


def read(source: str, *, refresh: bool = False) -> list[Entry]:
    """Every entry of the index at `source` (a file, a directory or `git+URL[@REV][#SUBDIR]`)."""
    checkout: Path | None = None
    if source.startswith(gitsource.PREFIX):
        ref = gitsource.parse(source)
        try:
            checkout, _commit = gitsource.resolve(ref, refresh=refresh)
        except FlowNotFound as exc:
            raise FlowIndexError(f"index {source}: {exc}") from None
        path = checkout / ref.subdir if ref.subdir else checkout
    else:
        path = Path(source).expanduser()
    if path.is_dir():
        files = [path / n for n in INDEX_FILES if (path / n).is_file()] or sorted(
            p for n in MANIFESTS for p in path.rglob(n) if ".git" not in p.parts
        )
        if not files:
            raise FlowIndexError(f"index {source} has no index.yaml and no flow.yaml manifests")
    elif path.is_file():
        files = [path]
    else:
        raise FlowIndexError(
            f"index {source} does not exist; give a YAML/JSON file, a "
            "directory of flow.yaml manifests or git+URL"
        )
    # An index in git says what its commit says, not what a symlink in it points at.
    outside = [f for f in files if checkout and not f.resolve().is_relative_to(checkout.resolve())]
    if checkout and outside:
        raise FlowIndexError(
            f"index {source}: {outside[0].relative_to(checkout)} is a symlink out of the "
            "repository; an index in git is read from its own files only"
        )
    entries: list[Entry] = []
    for file in files:
        entries += _entries(file, source)
    return sorted(entries, key=lambda e: (e.name, version_key(e.version)))


def _entries(file: Path, source: str) -> list[Entry]:
    try:
        if file.stat().st_size > _MAX_BYTES:
            raise FlowIndexError(f"index {file} is over {_MAX_BYTES >> 20} MiB")
        data: Any = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise FlowIndexError(f"index {file} is unreadable: {exc.__class__.__name__}") from None
    if isinstance(data, dict) and "flows" in data:
        data = data["flows"]
    items = data if isinstance(data, list) else [data]
    found = []
    for n, item in enumerate(items, 1):
        try:
            found.append(Entry.model_validate(item))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "entry"
            raise FlowIndexError(f"index {file}: entry {n}: {where}: {err['msg']}") from None
    return found


def pick(entries: list[Entry], spec: str, source: str) -> Entry:
    """The entry `NAME[@VERSION]` names (the newest version when none is given)."""
    name, _, version = spec.partition("@")
    same = [e for e in entries if e.name == name]
    if not same:
        names = ", ".join(sorted({e.name for e in entries})) or "none"
        raise FlowIndexError(f"index {source} has no flow {name!r}; it has: {names}")
    if not version:
        return max(same, key=lambda e: version_key(e.version))
    for entry in same:
        if entry.version.lstrip("v") == version.lstrip("v"):
            return entry
    raise FlowIndexError(
        f"index {source} has no version {version} of {name}; it has "
        + ", ".join(e.version for e in same)
    )


def install(entry: Entry, source: str) -> installed.Installed:
    """Fetch `entry` at its recorded commit, check that its ref still names that commit and
    that it defines a flow, then record it as installed."""
    from flamechase.loader import resolve as loader

    url = entry.url
    if entry.ref:
        named = gitsource.remote_commit(url, entry.ref)
        if named != entry.commit:
            raise FlowIndexError(
                f"{entry.name} {entry.version}: the index records commit {entry.commit[:12]} "
                f"for {entry.ref}, but the repository's {entry.ref} names "
                f"{(named or 'nothing')[:12]}; refusing to install code the index did not "
                "record"
            )
    record = installed.Installed(
        name=entry.name,
        version=entry.version,
        description=entry.description,
        url=url,
        ref=entry.ref,
        commit=entry.commit,
        subdir=entry.subdir,
        license=entry.license,
        index=source,
    )
    loader.load_installed(record, None)  # fetches, verifies and imports: refuses a non-flow
    installed.save(record)
    return record
