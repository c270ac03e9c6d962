"""`gc` and `runs rm`: give the disk back, keeping any work not recorded elsewhere first."""

from __future__ import annotations

import json
from typing import Any

import click

from flamechase.text import echo, echo_json
from flamechase.workspace.diskuse import size_text

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def _age(text: str | None) -> float | None:
    if text is None:
        return None
    from flamechase.errors import ParamError

    unit = text[-1:].lower()
    try:
        if unit in _UNITS:
            return float(text[:-1]) * _UNITS[unit]
        return float(text) * 86400
    except ValueError:
        raise ParamError(
            f"--older-than {text!r}: give a number and a unit, like 12h, 7d or 2w"
        ) from None


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def _kept_lines(kept: dict[str, dict[str, Any]]) -> list[str]:
    return [
        f"  kept unpublished work of {name}: {k['archive']}"
        + (f" ({k['files']} files, {k['deleted']} deleted)" if "files" in k else "")
        for name, k in sorted(kept.items())
    ]


@click.command("gc")
@click.option("--older-than", "older_than", help="only runs last written this long ago: 12h, 7d")
@click.option("--finished", is_flag=True, help="only runs that finished")
@click.option("--dry-run", is_flag=True, help="say what would be reclaimed, remove nothing")
@click.option("--json", "as_json", is_flag=True, help="a JSON list, one entry per run")
def gc_command(older_than: str | None, finished: bool, dry_run: bool, as_json: bool) -> int:
    """Reclaim the copies and scratch directories of runs no engine is running.

    A copy's changes that no artifact recorded are kept first as an archive in the run's
    `kept/`; the run's database, reports and artifacts stay (its views still work), and it is
    no longer resumed (a new `exec` of its task starts afresh).
    """
    from flamechase.engine import reclaim
    from flamechase.store import catalog, home

    reclaim.finish_removals(home.runs_dir())
    plan = reclaim.plan(catalog.run_dirs(), older_than=_age(older_than), finished=finished)
    if dry_run:
        if as_json:
            echo_json(json.dumps([c.to_json() for c in plan], indent=1))
            return 0
        for c in plan:
            echo(
                f"{c.run_id}  {c.status:<9} {size_text(c.bytes):>9}  {', '.join(sorted(c.copies))}"
            )
        total = sum(c.bytes for c in plan)
        echo(f"reclaimable: {size_text(total)} in {_runs(len(plan))} (nothing removed: --dry-run)")
        return 0
    for run_dir in catalog.run_dirs():  # what a gc killed half-way left, whatever is due
        reclaim.finish_interrupted(run_dir)
    done = [reclaim.reclaim(c) for c in plan]
    if as_json:
        echo_json(json.dumps([d.to_json() for d in done], indent=1))
        return 0
    for d in done:
        echo(f"{d.run_id}  freed {size_text(d.freed)}; it is no longer resumed")
        for line in _kept_lines(d.kept):
            echo(line)
    echo(f"freed {size_text(sum(d.freed for d in done))} in {_runs(len(done))}")
    return 0


@click.command("rm")
@click.argument("run")
@click.option("--json", "as_json", is_flag=True, help="a JSON object")
def rm_command(run: str, as_json: bool) -> int:
    """Remove run RUN (an id, a unique prefix, or last) and all its files; work of its copies
    that no artifact recorded is kept first in `<state home>/kept/RUN/`."""
    from flamechase.engine import reclaim
    from flamechase.store import catalog

    done = reclaim.remove_run(catalog.resolve(run))
    if as_json:
        echo_json(json.dumps(done.to_json(), indent=1))
        return 0
    echo(f"removed run {done.run_id}: freed {size_text(done.freed)}")
    for line in _kept_lines(done.kept):
        echo(line)
    return 0
