"""Flows installed from an index: one JSON record each, under `<state home>/flows/installed/`.

A record says where the flow's code is (repository URL, the commit the index recorded, the
subdirectory) and which index and version it came from. The code itself is the pinned git
checkout in the cache (loader/gitsource.py), verified against the commit at every load; a
release of the official index is the built-in code, verified against its hash.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from flamechase.errors import FlowIndexError
from flamechase.fsutil import atomic_write
from flamechase.store.home import ensure_private_dir, state_home

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,99}")


class Installed(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str
    version: str
    description: str = ""
    url: str
    ref: str | None = None
    commit: str
    subdir: str = ""
    license: str = ""
    index: str = ""
    # A release of the official index (loader/official.py): the built-in code's hash, and
    # the variants it brought.
    code_hash: str = ""
    variants: list[str] = []


def root() -> Path:
    return state_home() / "flows" / "installed"


def _path(name: str) -> Path:
    if not NAME.fullmatch(name):
        raise FlowIndexError(f"{name!r} is not a flow name")
    return root() / f"{name}.json"


def get(name: str) -> Installed | None:
    if not NAME.fullmatch(name):
        return None
    path = root() / f"{name}.json"
    try:
        return Installed.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValidationError, ValueError) as exc:
        raise FlowIndexError(
            f"the record of installed flow {name} ({path}) is unreadable "
            f"({exc.__class__.__name__}); install it again"
        ) from None


def all_installed() -> list[Installed]:
    found = []
    if root().is_dir():
        for path in sorted(root().glob("*.json")):
            record = get(path.stem)
            if record is not None:
                found.append(record)
    return found


def save(record: Installed) -> Path:
    path = _path(record.name)
    ensure_private_dir(path.parent)
    atomic_write(path, json.dumps(record.model_dump(), indent=1).encode())
    return path


def remove(name: str) -> bool:
    """Forget an installed flow; False if there was none."""
    if get(name) is None:
        return False
    _path(name).unlink()
    return True
