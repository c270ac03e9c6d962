"""`flamechase exec`: parse the command line into a RunRequest, run it, map the end to a code."""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

import click

from flamechase.cli import EXIT_CODES_HELP
from flamechase.cli.flowopt import FlowOption
from flamechase.errors import UsageError
from flamechase.text import echo

if TYPE_CHECKING:
    from flamechase.engine.ending import RunEnd
    from flamechase.engine.loop import Engine, Observer
    from flamechase.engine.prepare import Prepared
    from flamechase.flow import Flow

NO_ENVIRONMENTS = (
    "-e {given}: flamechase has no environments to choose: every agent runs in the directory "
    "you start in (lanes 2..N on private copies of it, here or with --executor ray on a Ray "
    "cluster's nodes), so cd to the tree and drop -e"
)


# long: one option per line (ruff format); the body is a few calls
@click.command("exec", epilog=EXIT_CODES_HELP)
@click.option(
    "-f",
    "--flow",
    "flow_ref",
    required=True,
    metavar="FLOW",
    cls=FlowOption,
)
@click.option(
    "-a",
    "--agent",
    "agents",
    multiple=True,
    metavar="[ROLE=]SPEC[|SPEC...][,...]",
    help="agent for a role: CLI[@ACCOUNT]/MODEL[:EFFORT], exec:PATH or sim/PROFILE; "
    "'A|B|C': alternatives in order, the next taking the role's turns while one is in a "
    "usage window (or does not start), back to the first at its reset",
)
@click.option(
    "-p",
    "--param",
    "params",
    multiple=True,
    metavar="KEY=VALUE[,...]",
    help="flow param or budget.duration/cost/turns/output_tokens/graceful",
)
@click.option(
    "-c",
    "--config",
    "config",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="CONFIG.yaml",
    help="the same keys as -p, from YAML; -p wins",
)
@click.option("--resume", is_flag=True, help="pick up the newest compatible run; refuse if none")
@click.option(
    "--refresh",
    is_flag=True,
    help="resume even though the flow's code changed since the run was made",
)
@click.option("--json", "as_json", is_flag=True, help="one JSON object per event on stdout")
@click.option(
    "--executor",
    "executor_text",
    default="local",
    metavar="local|ray[=ADDRESS]",
    help="where lanes in private copies run: here (local), or on a Ray cluster "
    "(pip install 'flamechase[ray]'; -p lane_resources.cpus=N,...; "
    "-p ray.lane_1=node sends lane 1 too, backed by git)",
)
@click.option(
    "--allow-workspace",
    is_flag=True,
    help="run even when the current directory is /, a system directory or your home",
)
# The published runtime's `-e ROLE=ENV` (ssh, docker, ...): taken only to answer it.
@click.option("-e", "--env", "envs", multiple=True, hidden=True)
@click.argument("task", metavar="TASK")
def command(
    flow_ref: str,
    agents: tuple[str, ...],
    params: tuple[str, ...],
    config: Path | None,
    resume: bool,
    refresh: bool,
    as_json: bool,
    allow_workspace: bool,
    executor_text: str,
    envs: tuple[str, ...],
    task: str,
) -> int:
    """Run FLOW on the current directory toward TASK (`continue` reads TASK.md)."""
    if envs:
        raise UsageError(NO_ENVIRONMENTS.format(given=envs[0]))
    with start_up():
        engine, flow = _engine(
            flow_ref,
            agents,
            params,
            config,
            resume,
            refresh,
            as_json,
            allow_workspace,
            executor_text,
            task,
        )
    import asyncio  # imported (with the rest of the engine) under start_up

    end = asyncio.run(engine.run())
    close = getattr(engine.observer, "close", None)
    if close is not None:
        close()
    from flamechase.cli import debugging

    if end.traceback and debugging():
        echo(end.traceback.rstrip("\n"), err=True, lines=True)
    echo(end_line(end, resumable=flow.resumable), err=True)
    _say_take(end.run_id)
    return end.exit_code


@contextlib.contextmanager
def start_up() -> Iterator[None]:
    """Start-up without the cyclic garbage collector: importing the flow API, the engine and
    the flow makes tens of thousands of objects that live as long as the process, and each
    collection on the way only walks them again (about 12 ms of a start here). They are then
    frozen (left out of every later collection, a saving for the whole run) and collection
    resumes, before the engine opens the run."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was:
            gc.enable()


def _engine(
    flow_ref: str,
    agents: tuple[str, ...],
    params: tuple[str, ...],
    config: Path | None,
    resume: bool,
    refresh: bool,
    as_json: bool,
    allow_workspace: bool,
    executor_text: str,
    task: str,
) -> tuple[Engine, Flow[Any]]:
    """The engine of the run asked for, once every check that refuses before writing passed."""
    from flamechase.agents.spec import split_agent_args
    from flamechase.cli.observe import JsonObserver
    from flamechase.config import load_config, split_kv
    from flamechase.engine.loop import Engine
    from flamechase.engine.prepare import RunRequest, prepare
    from flamechase.engine.remote import options as executors
    from flamechase.loader import load_flow

    workspace = _preflight(task, [*agents, *params, flow_ref], allow_workspace)
    flow = load_flow(flow_ref, refresh=refresh)
    settings: dict[str, object] = {}
    if config is not None:
        settings.update(load_config(config))
    settings.update(dict(split_kv(list(params))))
    choice = executors.choose(executor_text, executors.take_settings(settings))
    items = split_agent_args(list(agents))

    def warn(text: str) -> None:
        echo(text, err=True)

    confirm = None
    if sys.stdin.isatty() and sys.stderr.isatty():
        confirm = ask_start_or_stop

    request = RunRequest(
        flow=flow,
        agents=items,
        settings=settings,
        task=task,
        workspace=workspace,
        resume=resume,
        confirm=confirm,
        warn=warn,
        flow_ref=flow_ref,
        refresh=refresh,
    )
    prepared = prepare(request)
    executor, prepared = executors.make_executor(choice, prepared)
    observer = JsonObserver() if as_json else _live_or_lines(prepared)
    return Engine(prepared, observer, executor=executor), flow


def end_line(end: RunEnd, *, resumable: bool) -> str:
    """The run's end, said once and always on stderr (with --json, piped or on a terminal
    alike): its id, how it ended, what it spent and what to do next. The log on stdout leaves
    its own end line out (cli/observe.py), the live view keeps it off its recent lines."""
    spent = f". {end.spent}" if end.spent else ""
    hint = f"; {end.hint}" if end.hint and (resumable or not end.hint_resumes) else ""
    return f"flamechase: run {end.run_id} {end.status}: {end.message}{spent}{hint}"


def _say_take(run_id: str) -> None:
    """When a verified candidate beats what the run left in the tree: the command to take it."""
    from flamechase.store.db import DB_NAME
    from flamechase.store.home import runs_dir
    from flamechase.view.summary import fold_run, take_command

    run_dir = runs_dir() / run_id
    if not (run_dir / DB_NAME).is_file():
        return
    try:
        take = take_command(run_dir, fold_run(run_dir))
    except Exception:  # a hint only: the run has ended and said how; never fail after that
        return
    if take:
        echo(
            f"flamechase: a verified candidate is better than your tree; to take it: {take}",
            err=True,
        )


# The two choices the seeds offer, and the answers people give for each, as `start_or_stop`
# normalises them ("A. Start anyway" as the menu shows it becomes "a start anyway").
START = frozenset(
    {
        "a",
        "a start anyway",
        "start anyway",
        "start",
        "1",
        "y",
        "yes",
        "proceed",
        "continue",
        "go",
        "ok",
        "是",
        "继续",
    }
)
STOP = frozenset({"b", "b stop", "stop", "2", "n", "no", "cancel", "quit", "abort", "否", "停止"})
CHOICES = "[A. Start anyway / B. Stop]"


def start_or_stop(answer: str) -> bool | None:
    """True to start, False to stop, None when `answer` is neither (then ask again)."""
    text = " ".join(answer.casefold().replace(".", " ").replace("!", " ").split())
    if text in START:
        return True
    if text in STOP:
        return False
    return None


def ask_start_or_stop(
    question: str,
    *,
    read: Callable[[], str] | None = None,
    say: Callable[[str], None] | None = None,
) -> bool:
    """Ask on the terminal until the answer is start or stop; end of input stops."""
    read = read or sys.stdin.readline
    say = say or (lambda text: echo(text, nl=False, err=True, lines=True))
    say(f"{question} {CHOICES} ")
    while True:
        line = read()
        if not line:
            say("\n")
            return False  # end of input: nobody answers, so nothing is copied
        verdict = start_or_stop(line)
        if verdict is not None:
            return verdict
        say("Please answer A (start anyway) or B (stop): ")


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
