"""The `-f FLOW` option whose help names the flows `-f` can run now: the built-in ones and
those installed in this state home, read when the help is shown (never a list kept by hand)."""

from __future__ import annotations

from typing import Any

import click

__all__ = ["FlowOption", "flow_names_help"]

BASE = "a flow's name or a path to a flow (`flamechase flows list`)"


def flow_names_help() -> str:
    """The help of `-f`: every name it takes now, installed ones marked (they run instead of
    a built-in of the same name)."""
    from flamechase.errors import FlamechaseError
    from flamechase.flows import builtin_names

    names = builtin_names()
    try:
        from flamechase.loader import installed

        mine = [r.name for r in installed.all_installed()]
    except (FlamechaseError, OSError):  # an unreadable record: `flows list` says which
        mine = []
    shown = [f"{n} (installed)" if n in mine else n for n in names]
    shown += [f"{n} (installed)" for n in mine if n not in names]
    return f"{BASE}: {', '.join(shown)}"


class FlowOption(click.Option):
    """An option whose help is made when it is shown."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        self.help = flow_names_help()
        return super().get_help_record(ctx)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("help", BASE)
        super().__init__(*args, **kwargs)
