"""`flamechase flows index list|add|remove`: indexes by name (loader/indexes.py)."""

from __future__ import annotations

import click

from flamechase.errors import FlowIndexError
from flamechase.text import echo


@click.group("index")
def index_group() -> None:
    """Flow indexes by name: `official` ships with flamechase; add others by name."""


@index_group.command("list")
def list_command() -> int:
    """Every index by name and its source."""
    from flamechase.loader import indexes, official

    for name, source in indexes.named().items():
        if name == official.NAME:
            count = len(official.releases())
            echo(f"{name}  shipped with flamechase ({count} flows, installs offline)")
        else:
            echo(f"{name}  {source}")
    return 0


@index_group.command("add")
@click.argument("name")
@click.argument("source", metavar="FILE|DIR|git+URL")
def add_command(name: str, source: str) -> int:
    """Add the index at SOURCE as NAME (read now: one that does not read is refused); then
    `--index NAME` anywhere an index is taken."""
    from flamechase.loader import index, indexes

    indexes.add(name, source)
    count = len({e.name for e in index.read(source)})
    echo(f"added index {name} ({count} flows): flamechase flows list --index {name}")
    return 0


@index_group.command("remove")
@click.argument("name")
def remove_command(name: str) -> int:
    """Forget an added index (flows installed from it stay installed)."""
    from flamechase.loader import indexes

    if not indexes.remove(name):
        raise FlowIndexError(f"no added index called {name!r}; see flamechase flows index list")
    echo(f"removed index {name}")
    return 0
