"""The run a view command means: RUN as given, or, with none named, this directory's latest
(said on stderr when it is not the newest anywhere, so `--json` output stays clean)."""

from __future__ import annotations

from pathlib import Path

from flamechase.text import echo

# What a view command's RUN argument says in --help when it is left out.
RUN_HELP = "RUN: an id, a unique prefix or `last`; default: this directory's latest run"


def pick(run: str | None) -> Path:
    from flamechase.store.catalog import resolve_here

    return resolve_here(run, note=lambda text: echo(f"flamechase: {text}", err=True))
