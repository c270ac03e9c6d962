"""`job`: background work an agent starts from its turn and waits for at no token cost.

    flamechase job start [--name N] [--timeout S] -- CMD ARGS...   prints the job id
    flamechase job wait ID --max S       exits with the job's rc; 124 if still running after S
    flamechase job list [--json]         id, state (running/done/failed/killed/timeout/lost/
                                         reaped), rc, log
    flamechase job logs ID [-n N]        the last N lines of its log (stdout and stderr)
    flamechase job kill ID               SIGTERM to its group, SIGKILL after 5 s
    flamechase job reap                  end what still runs; record jobs their turn took along

Jobs live in the lane's own directory of the run (see `flamechase.tools.jobs`); `--dir`
overrides. A job ends with the turn that started it when that turn is jailed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from flamechase.text import echo, echo_json

_DIR = click.option(
    "--dir",
    "jobs_dir",
    metavar="DIR",
    help="where jobs are kept (default: the turn's lane directory)",
)


def _root(given: str | None) -> Path:
    from flamechase.tools.jobs import jobs_dir

    return jobs_dir(given, os.environ)


@click.group("job")
def command() -> None:
    """Background jobs: start, wait, list, logs, kill, reap."""


@command.command("start", context_settings={"ignore_unknown_options": True})
@click.option("--name", default="job", help="a word for the id")
@click.option("--timeout", type=float, default=0.0, help="end the job after S seconds")
@_DIR
@click.argument("argv", nargs=-1, required=True, type=click.UNPROCESSED)
def start_cmd(name: str, timeout: float, jobs_dir: str | None, argv: tuple[str, ...]) -> int:
    """Start CMD in the background and print its id."""
    from flamechase.tools.jobs import start

    echo(start(_root(jobs_dir), list(argv), name=name, timeout=timeout))
    return 0


@command.command("wait")
@click.argument("job_id")
@click.option(
    "--max",
    "max_seconds",
    type=float,
    default=540.0,
    show_default=True,
    help="give up waiting after S seconds (the job goes on)",
)
@_DIR
def wait_cmd(job_id: str, max_seconds: float, jobs_dir: str | None) -> int:
    """Wait for a job; exit with its rc (124 when it still runs after --max)."""
    from flamechase.tools.jobs import WAIT_TIMEOUT, wait

    row = wait(_root(jobs_dir), job_id, max_seconds)
    echo(
        f"{row['id']}: {row['state']}"
        + (f" rc={row['rc']}" if row["rc"] is not None else "")
        + f" · log {row['log']}"
    )
    if row["state"] == "running":
        return WAIT_TIMEOUT
    return int(row["rc"]) if isinstance(row["rc"], int) else 1


@command.command("list")
@click.option("--json", "as_json", is_flag=True, help="a JSON list")
@_DIR
def list_cmd(as_json: bool, jobs_dir: str | None) -> int:
    """Every job of this lane, oldest first."""
    from flamechase.tools.jobs import listing

    rows = listing(_root(jobs_dir))
    if as_json:
        echo_json(json.dumps(rows, indent=1))
        return 0
    for r in rows:
        rc = "" if r["rc"] is None else f" rc={r['rc']}"
        echo(f"{r['id']}  {r['state']}{rc}  {' '.join(r['argv'] or [])[:80]}")
    return 0


@command.command("logs")
@click.argument("job_id")
@click.option("-n", "lines", type=int, default=15, show_default=True)
@_DIR
def logs_cmd(job_id: str, lines: int, jobs_dir: str | None) -> int:
    """The end of a job's log."""
    from flamechase.tools.jobs import logs

    echo(logs(_root(jobs_dir), job_id, lines), lines=True)
    return 0


@command.command("kill")
@click.argument("job_id")
@_DIR
def kill_cmd(job_id: str, jobs_dir: str | None) -> int:
    """End a job (its whole process group)."""
    from flamechase.tools.jobs import kill

    row = kill(_root(jobs_dir), job_id)
    echo(f"{row['id']}: {row['state']}")
    return 0


@command.command("reap")
@_DIR
def reap_cmd(jobs_dir: str | None) -> int:
    """End every job still running and record the ones their turn took along (JSON)."""
    from flamechase.tools.jobs import reap

    echo_json("JOBS " + json.dumps(reap(_root(jobs_dir)), sort_keys=True))
    return 0
