"""`flamechase exec`: parse the command line into a RunRequest, run it, map the end to a code."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

import click

from flamechase.cli import EXIT_CODES_HELP

if TYPE_CHECKING:
    from flamechase.engine.loop import Observer
    from flamechase.engine.prepare import Prepared


@click.command("exec", epilog=EXIT_CODES_HELP)
@click.option("-f", "--flow", "flow_ref", required=True, metavar="FLOW",
              help="flow name (flame_chase, parallel_flame_chase) or path to a flow")
@click.option("-a", "--agent", "agents", multiple=True, metavar="[ROLE=]SPEC[,...]",
              help="agent for a role: CLI[@PROVIDER]/MODEL[:EFFORT], exec:PATH or sim/PROFILE")
@click.option("-p", "--param", "params", multiple=True, metavar="KEY=VALUE[,...]",
              help="flow param or budget.duration/cost/turns/output_tokens/graceful")
@click.option("-c", "--config", "config", type=click.Path(dir_okay=False, path_type=Path),
              metavar="CONFIG.yaml", help="the same keys as -p, from YAML; -p wins")
@click.option("--resume", is_flag=True, help="pick up the newest compatible run; refuse if none")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per event on stdout")
@click.option("--allow-workspace", is_flag=True,
              help="run even when the current directory is /, a system directory or your home")
@click.argument("task", metavar="TASK")
def command(flow_ref: str, agents: tuple[str, ...], params: tuple[str, ...],
            config: Path | None, resume: bool, as_json: bool, allow_workspace: bool,
            task: str) -> int:
    """Run FLOW on the current directory toward TASK (`continue` reads TASK.md)."""
    from flamechase.agents.spec import split_agent_args
    from flamechase.cli.observe import JsonObserver
    from flamechase.config import load_config, split_kv
    from flamechase.engine.loop import Engine
    from flamechase.engine.prepare import RunRequest, prepare
    from flamechase.flows import load_flow

    workspace = _preflight(task, [*agents, *params, flow_ref], allow_workspace)
    flow = load_flow(flow_ref)
    settings: dict[str, object] = {}
    if config is not None:
        settings.update(load_config(config))
    settings.update(dict(split_kv(list(params))))
    items = split_agent_args(list(agents))

    def warn(text: str) -> None:
        click.echo(text, err=True)

    confirm = None
    if sys.stdin.isatty() and sys.stderr.isatty():
        def confirm(question: str) -> bool:
            return click.confirm(question, default=False, err=True)

    request = RunRequest(flow=flow, agents=items, settings=settings, task=task,
                         workspace=workspace, resume=resume, confirm=confirm, warn=warn)
    prepared = prepare(request)
    observer = JsonObserver() if as_json else _live_or_lines(prepared)
    engine = Engine(prepared, observer)
    end = asyncio.run(engine.run())
    close = getattr(observer, "close", None)
    if close is not None:
        close()
    click.echo(f"flamechase: run {end.run_id} {end.status}: {end.message}", err=True)
    return end.exit_code


def _preflight(task: str, args: list[str], allow_workspace: bool) -> Path:
    """The workspace, once the inputs a run must not start from are refused (exit 2)."""
    import os

    from flamechase.store.home import HOME_VAR, state_home
    from flamechase.workspace import checks

    workspace = checks.current_directory()
    checks.check_utf8("TASK", task)
    for arg in args:
        checks.check_utf8(f"the argument {arg.encode('utf-8', 'replace').decode()!r}", arg)
    checks.check_workspace(workspace, allow=allow_workspace)
    checks.check_state_home(state_home(), workspace, from_env=bool(os.environ.get(HOME_VAR)))
    return workspace


def _live_or_lines(prepared: Prepared) -> Observer:
    from flamechase.cli.observe import LineObserver, QuietWhenGone

    if sys.stdout.isatty():
        try:
            from rich.console import Console

            from flamechase.view.live import LiveObserver
        except ImportError:
            return LineObserver()
        # A closed terminal stops the dashboard, not the run. (The wrapper is the stream in
        # all but its write and flush, which is all rich uses.)
        out = cast(IO[str], QuietWhenGone(sys.stdout))
        return LiveObserver(prepared, console=Console(file=out))
    return LineObserver()
