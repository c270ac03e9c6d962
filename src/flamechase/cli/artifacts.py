"""`flamechase artifacts`: list frozen artifact packages, rebuild them, verified; `artifacts
apply` lays a verified candidate over the user's tree (`cli/apply.py`)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from flamechase.text import echo, echo_json


@click.command("artifacts")
@click.argument("args", nargs=-1, metavar="[RUN] [REPORT_ID] | apply [RUN] ID")
@click.option(
    "--extract",
    "dest",
    type=click.Path(file_okay=False, path_type=Path),
    help="write the package(s) under DIR (DIR/<report_id>/ without REPORT_ID)",
)
@click.option("--json", "as_json", is_flag=True)
@click.option(
    "--force",
    is_flag=True,
    help="apply: lay the candidate over your changes at its paths (set aside in the run's "
    "directory first)",
)
def command(args: tuple[str, ...], dest: Path | None, as_json: bool, force: bool) -> int:
    """List or extract RUN's artifact packages; every hash is checked on the way out.

    `flamechase artifacts apply [RUN] ID` lays candidate ID, as the runtime measured and
    verified it, over the tree the run worked on: refused when the tree has changed there since
    the run ended (unless --force: your changes are set aside in the run's directory first), or
    while a run holds the tree.
    """
    from flamechase.cli.pick import pick
    from flamechase.errors import RunNotFound
    from flamechase.store.blobs import BlobStore
    from flamechase.store.reader import Reader

    if args[:1] == ("apply",):
        return _apply(args[1:], dest, as_json, force)
    if force:
        raise click.UsageError("--force is for `artifacts apply` only")
    if len(args) > 2:
        raise click.UsageError("give at most RUN and REPORT_ID")
    run, report_id = (*args, None, None)[:2]
    run_dir = pick(run)
    with Reader(run_dir / "run.db") as r:
        rows = r.artifacts(report_id)
    if report_id is not None and not rows:
        raise RunNotFound(
            f"run {run_dir.name} has no artifact package {report_id!r}; "
            "`flamechase artifacts RUN` lists them"
        )
    packages: dict[str, list[dict[str, object]]] = {}
    for row in rows:
        packages.setdefault(row["report_id"], []).append(
            {
                "path": row["path"],
                "sha256": row["sha256"],
                "size": row["size"],
                "description": row["description"],
            }
        )
    if dest is None:
        if as_json:
            echo_json(json.dumps(packages, indent=1))
        else:
            for rid, files in packages.items():
                echo(rid)
                for f in files:
                    echo(f"  {f['path']}  {f['size']} bytes  sha256 {str(f['sha256'])[:16]}…")
        return 0
    store = BlobStore(run_dir / "blobs")
    for rid, files in packages.items():
        target = dest if report_id is not None else dest / rid
        store.extract(files, target)
        echo(f"{rid}: {len(files)} file(s) verified and written to {target}")
    return 0


def _apply(args: tuple[str, ...], dest: Path | None, as_json: bool, force: bool) -> int:
    """`artifacts apply [RUN] ID` (`args` after `apply`)."""
    from flamechase.cli.apply import apply_candidate
    from flamechase.cli.pick import pick

    if dest is not None:
        raise click.UsageError("apply writes into the run's tree: leave out --extract")
    if not 1 <= len(args) <= 2:
        raise click.UsageError(
            "apply takes the ID of a verified candidate, after the RUN if you name one: "
            "`flamechase artifacts apply [RUN] ID` (`flamechase status` shows the best)"
        )
    run_dir = pick(args[0] if len(args) == 2 else None)
    return apply_candidate(run_dir, args[-1], as_json, force=force)
