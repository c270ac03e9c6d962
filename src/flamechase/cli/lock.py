"""`lock`: the run's exclusive measurement lock, so that performance gates measure alone.

    flamechase lock run --who X [--max 900] [--wait S] -- CMD ARGS...   CMD under the lock
    flamechase lock acquire --who X [--max 900] [--wait S]   hold it until `release` (or --max)
    flamechase lock release                                  let go of this lane's hold
    flamechase lock status [--json]                          free or held, and by whom

Exit 75 when the lock did not come within --wait (nothing ran). The runtime's own gates go
first: while one needs the lock no agent takes it, `run` ends CMD (exit 76) and an `acquire`d
hold is let go (`release` then exits 76: what ran after that did not run alone). See
`flamechase.tools.locks` for where the lock lives and why a dead holder frees it.
"""

from __future__ import annotations

import json
import os

import click

from flamechase.text import echo, echo_json

_DIR = click.option(
    "--dir", "lock_dir", metavar="DIR", help="the directory to lock (default: the run's directory)"
)
_WHO = click.option("--who", required=True, help="who measures (a label in `status`)")
_MAX = click.option(
    "--max",
    "max_seconds",
    type=click.FloatRange(0.1, 900.0),
    default=900.0,
    show_default=True,
    help="hold for at most S seconds",
)
_WAIT = click.option(
    "--wait",
    type=click.FloatRange(0.0),
    default=1800.0,
    show_default=True,
    help="give up after waiting S seconds (exit 75)",
)


@click.group("lock")
def command() -> None:
    """The exclusive measurement lock: run, acquire, release, status.

    Exit codes: 75 the lock was not free within --wait (nothing ran); 76 one of the runtime's
    gates needed the lock (`run`: CMD was ended; `release`: the hold had been let go)."""


@command.command("run", context_settings={"ignore_unknown_options": True})
@_WHO
@_MAX
@_WAIT
@_DIR
@click.argument("argv", nargs=-1, required=True, type=click.UNPROCESSED)
def run_cmd(
    who: str, max_seconds: float, wait: float, lock_dir: str | None, argv: tuple[str, ...]
) -> int:
    """Run CMD holding the lock; exit with its rc."""
    from flamechase.tools import locks

    target = locks.lock_dir(lock_dir, os.environ)
    code = locks.run(
        target, list(argv), who=who, max_seconds=max_seconds, wait=wait, env=os.environ
    )
    if code == locks.EXIT_TIMEOUT:
        echo(f"flamechase lock: not free within {wait:g} s; nothing ran", err=True)
    elif code == locks.EXIT_PREEMPTED:
        echo(
            "flamechase lock: one of the runtime's gates needed the lock; CMD was ended "
            "(run it again: it waits for the gate)",
            err=True,
        )
    return code


@command.command("acquire")
@_WHO
@_MAX
@_WAIT
@_DIR
def acquire_cmd(who: str, max_seconds: float, wait: float, lock_dir: str | None) -> int:
    """Take the lock and keep it (a holder process) until `release` or --max."""
    from flamechase.tools import locks

    target = locks.lock_dir(lock_dir, os.environ)
    try:
        stamp = locks.acquire(target, who=who, max_seconds=max_seconds, wait=wait, env=os.environ)
    except TimeoutError as exc:
        echo(f"flamechase lock: {exc}", err=True)
        return locks.EXIT_TIMEOUT
    echo(f"held by {who} for at most {max_seconds:g} s (pid {stamp['pid']})")
    return 0


@command.command("release")
@_DIR
def release_cmd(lock_dir: str | None) -> int:
    """Let go of the lock this lane holds (exit 76: a runtime gate ended the hold first)."""
    from flamechase.tools import locks

    info = locks.release(locks.lock_dir(lock_dir, os.environ), os.environ)
    if info is None:
        echo("flamechase lock: this lane holds no lock", err=True)
        return 1
    if info.get("preempted_by"):
        echo(
            f"flamechase lock: the hold was ended early for the runtime's gate "
            f"({info['preempted_by']}); what ran after that did not run alone",
            err=True,
        )
        return locks.EXIT_PREEMPTED
    echo("released")
    return 0


@command.command("status")
@click.option("--json", "as_json", is_flag=True, help="a JSON object")
@_DIR
def status_cmd(as_json: bool, lock_dir: str | None) -> int:
    """Whether the lock is held, and by whom."""
    from flamechase.tools import locks

    st = locks.status(locks.lock_dir(lock_dir, os.environ), os.environ)
    if as_json:
        echo_json(json.dumps(st, indent=1))
    elif not st["held"]:
        echo("free")
    else:
        who = ", ".join(f"{h['who']} ({h['lane']})" for h in st["holders"]) or "unknown"
        echo(f"held by {who}")
    return 0
