"""`flamechase artifacts`: list frozen artifact packages, rebuild them, verified."""

from __future__ import annotations

import json
from pathlib import Path

import click

from flamechase.text import echo, echo_json


@click.command("artifacts")
@click.argument("run", required=False)
@click.argument("report_id", required=False)
@click.option(
    "--extract",
    "dest",
    type=click.Path(file_okay=False, path_type=Path),
    help="write the package(s) under DIR (DIR/<report_id>/ without REPORT_ID)",
)
@click.option("--json", "as_json", is_flag=True)
def command(run: str | None, report_id: str | None, dest: Path | None, as_json: bool) -> int:
    """List or extract RUN's artifact packages; every hash is checked on the way out."""
    from flamechase.cli.pick import pick
    from flamechase.errors import RunNotFound
    from flamechase.store.blobs import BlobStore
    from flamechase.store.db import Reader

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
