"""Indexes by name: `official` (shipped, loader/official.py) and those the user added with
`flamechase flows index add NAME SOURCE`, kept in `<state home>/flows/indexes.json`.

Wherever an index is given (`--index`, $FLAMECHASE_FLOW_INDEX) a name stands for its source;
with none given, `official` is the index.
"""

from __future__ import annotations

import json
from pathlib import Path

from flamechase.errors import FlowIndexError
from flamechase.fsutil import atomic_write
from flamechase.loader import installed, official
from flamechase.store.home import ensure_private_dir, state_home


def _path() -> Path:
    return state_home() / "flows" / "indexes.json"


def saved() -> dict[str, str]:
    """The indexes the user added: name -> source."""
    try:
        data = json.loads(_path().read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise FlowIndexError(
            f"{_path()} is unreadable ({exc.__class__.__name__}); remove it and add the "
            "indexes again"
        ) from None
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items()}


def named() -> dict[str, str]:
    """Every index by name, official first."""
    return {official.NAME: official.NAME, **saved()}


def source_of(given: str | None) -> str:
    """The source an index argument names: an added index's name stands for its source,
    `official` (and nothing given) for the shipped index; anything else is a source."""
    if not given:
        return official.NAME
    return saved().get(given, given)


def add(name: str, source: str) -> None:
    """Remember `source` as the index `name` (read first: an index that does not read is
    refused now, not at the next install)."""
    from flamechase.loader import index

    if not installed.NAME.fullmatch(name):
        raise FlowIndexError(f"{name!r} is not an index name (letters, digits, _ and -)")
    if name == official.NAME:
        raise FlowIndexError(f"{official.NAME} is the index flamechase ships; pick another name")
    index.read(source)
    found = saved()
    found[name] = source
    _write(found)


def remove(name: str) -> bool:
    found = saved()
    if name not in found:
        return False
    del found[name]
    _write(found)
    return True


def _write(found: dict[str, str]) -> None:
    ensure_private_dir(_path().parent)
    atomic_write(_path(), json.dumps(found, indent=1, sort_keys=True).encode())
