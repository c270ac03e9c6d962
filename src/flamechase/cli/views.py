"""`show`, `simulate`, `demo`, `serve` and `trace`: looking at runs, and at flows before a run.

Views are imported inside each command, so `flamechase --help` stays fast and `serve`'s web
stack loads only when serving.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from flamechase.cli import EXIT_CODES_HELP
from flamechase.text import echo


def _say(text: str) -> None:
    echo(text, err=True)


@contextlib.contextmanager
def _writing(path: Path) -> Iterator[None]:
    """An output file that cannot be written is a one-line error, not a traceback."""
    from flamechase.fsutil import FileRefused

    try:
        yield
    except FileRefused as exc:
        raise click.ClickException(f"will not write {path}: {exc.reason}") from None
    except OSError as exc:
        raise click.ClickException(f"cannot write {path}: {exc.strerror or exc}") from None


def _progress_observer(prepared: Any) -> Any:
    """The live dashboard on a terminal; elsewhere a line per finished turn on stderr."""
    if sys.stdout.isatty():
        from flamechase.view.live import LiveObserver

        return LiveObserver(prepared)
    return _TurnLines()


class _TurnLines:
    """Progress without a terminal: turn ends, failures, holds, new bests and spent budgets,
    one line each, on stderr (what each event is about is its own `tag`)."""

    TAGS = frozenset({"end", "fail", "best", "warn"})

    def __init__(self) -> None:
        from flamechase.cli.observe import Narrator

        self.narrator = Narrator()

    def event(self, ev: dict[str, Any]) -> None:
        change = self.narrator.change(ev)
        if change.shown.tag in self.TAGS and ev.get("kind") != "notice":
            echo("  " + change.shown.text, err=True)


@click.command("show")
@click.argument("run", required=False)
@click.option(
    "--html",
    "html_out",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="write the run's replay page (one self-contained HTML file)",
)
def show_command(run: str | None, html_out: Path | None) -> int:
    """What RUN amounted to; with --html, its step-by-step replay page."""
    from flamechase.cli.pick import pick
    from flamechase.view.summary import summarize

    run_dir = pick(run)
    if html_out is not None:
        from flamechase.view.replay import write_replay

        t0 = time.monotonic()
        with _writing(html_out):
            doc = write_replay(run_dir, html_out)
        echo(
            f"wrote the replay of run {run_dir.name} ({len(doc['points'])} events) to "
            f"{html_out} in {time.monotonic() - t0:.2f} s"
        )
        return 0
    for line in summarize(run_dir).lines():
        echo(line)
    return 0


# long: one option per line (ruff format); the body is a few calls
@click.command("simulate", epilog=EXIT_CODES_HELP)
@click.argument("flow_ref", metavar="FLOW")
@click.option(
    "-p",
    "--param",
    "params",
    multiple=True,
    metavar="KEY=VALUE[,...]",
    help="flow param or budget.*, as for exec (default budget.turns=12, rest_seconds=0.05)",
)
@click.option(
    "-a",
    "--agent",
    "agents",
    multiple=True,
    metavar="ROLE=sim/PROFILE",
    help="a different sim profile for a role (steady, flaky, blocked, silent)",
)
@click.option(
    "--html",
    "html_out",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="where the replay goes (default ./FLOW-simulation.html)",
)
@click.option(
    "--workspace",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    metavar="DIR",
    help="simulate on a copy of DIR instead of the bundled sample",
)
@click.option("--task", metavar="TEXT", help="the objective (default: the copy's TASK.md)")
@click.option(
    "--keep",
    is_flag=True,
    help="keep the run in your state home and the workspace copy, and say where",
)
def simulate_command(
    *,
    flow_ref: str,
    params: tuple[str, ...],
    agents: tuple[str, ...],
    html_out: Path | None,
    workspace: Path | None,
    task: str | None,
    keep: bool,
) -> int:
    """Run FLOW with simulated agents on a throw-away copy and write its replay.

    Every role gets a `sim/steady` agent, which plays the flow's own simulated actor or, for
    a flow without one, answers each turn's result schema with a valid instance: a real run
    (database, places, reports, artifacts, measurements), with simulated agents and no
    waiting, so you see the whole shape of a flow's run before spending anything on it.
    """
    from flamechase.agents.spec import split_agent_args, split_choices
    from flamechase.cli.simulating import (
        copy_sample,
        copy_workspace,
        run_sim,
        scratch,
        sim_settings,
    )
    from flamechase.config import split_kv
    from flamechase.loader import load_flow
    from flamechase.view.replay import write_replay
    from flamechase.view.summary import summarize

    t0 = time.monotonic()
    items = split_agent_args(list(agents))
    for role, spec in items:
        # A simulation must never spend anything: only simulated actors are accepted.
        # Every alternative (`A|B`) too: any of them may take the role's turns.
        if role is None or not all(alt.startswith("sim/") for alt in split_choices(spec)):
            raise click.UsageError(
                f"-a {role + '=' if role else ''}{spec}: simulate takes "
                "ROLE=sim/PROFILE only (steady, flaky, blocked, silent)"
            )
    flow = load_flow(flow_ref)
    settings = sim_settings(flow, dict(split_kv(list(params))), sample=workspace is None)
    out = html_out or Path(f"{flow.name}-simulation.html")
    with scratch(keep) as tmp:
        ws = tmp / "workspace"
        if workspace is None:
            copy_sample(ws)
        else:
            copy_workspace(workspace, ws)
        outcome = run_sim(
            flow,
            ws,
            settings,
            task=task,
            agents=items,
            state=None if keep else tmp / "home",
            warn=_say,
        )
        with _writing(out):
            doc = write_replay(outcome.run_dir, out)
        summary = summarize(outcome.run_dir)
    if not keep:
        # The run and its copy are thrown away: no command could take its best candidate.
        summary = dataclasses.replace(summary, take=None)
    for line in summary.lines():
        echo(line)
    echo(f"replay: {out} ({len(doc['points'])} events; open it in a browser)")
    if keep:
        echo(f"kept: workspace {ws}, run {outcome.run_id} (flamechase status {outcome.run_id})")
    _say(
        f"flamechase: simulated {flow.name} in {time.monotonic() - t0:.1f} s: "
        f"{outcome.status}: {outcome.message}"
    )
    return outcome.exit_code


@click.command("demo")
@click.option(
    "--dir",
    "dest",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="where the sample goes (default ./flamechase-demo[-N])",
)
@click.option(
    "-p",
    "--param",
    "params",
    multiple=True,
    metavar="KEY=VALUE[,...]",
    help="override a param or the budget (default budget.turns=12)",
)
@click.option(
    "--html",
    "html_out",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="where the replay goes (default DIR.html)",
)
def demo_command(*, dest: Path | None, params: tuple[str, ...], html_out: Path | None) -> int:
    """See flamechase work in seconds: lanes of simulated agents on a sample repository.

    Copies the bundled sample into a fresh directory, runs the built-in demo flow on it with
    `sim` actors under a short budget, and prints what happened: the flow, turns per lane,
    reports exchanged, artifacts integrated, the best candidate, and the replay page.
    """
    from flamechase.cli.simulating import copy_sample, fresh_dir, run_sim, sim_settings
    from flamechase.config import split_kv
    from flamechase.flows import DEMO
    from flamechase.loader import load_flow
    from flamechase.view.replay import write_replay
    from flamechase.view.summary import summarize

    flow = load_flow(DEMO)
    if dest is None:
        dest = fresh_dir(Path.cwd(), "flamechase-demo")
    elif dest.exists() and any(dest.iterdir()):
        raise click.UsageError(f"--dir {dest} is not empty; give a new directory")
    dest = dest.absolute()
    copy_sample(dest)
    echo(f"copied the sample repository to {dest}")
    # A little rest between turns so the progress display can be followed.
    settings = sim_settings(flow, dict(split_kv(list(params))), sample=True, rest=0.2)
    outcome = run_sim(flow, dest, settings, observer=_progress_observer, warn=_say)
    out = html_out or dest.with_name(dest.name + ".html")
    with _writing(out):
        write_replay(outcome.run_dir, out)
    echo("")
    for line in summarize(outcome.run_dir).lines():
        echo(line)
    echo(f"replay: {out} (open it in a browser)")
    echo(f"the sample as the run left it: {dest}")
    run = outcome.run_dir.name
    echo(f"next: flamechase status {run} · flamechase events {run} · flamechase serve")
    return outcome.exit_code


@click.command("serve")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="port on 127.0.0.1 (0: any free port)",
)
def serve_command(port: int) -> int:
    """A local page listing runs and replaying them live (127.0.0.1 only, token in the URL)."""
    try:
        from flamechase.view.serve import serve
    except ImportError as exc:  # the web stack is only needed here
        raise click.ClickException(
            f"flamechase serve needs starlette and uvicorn ({exc}); pip install starlette uvicorn"
        ) from None

    def ready(url: str) -> None:
        echo(f"flamechase serve: open {url}", err=False)
        sys.stdout.flush()

    try:
        serve(port, ready=ready)
    except OSError as exc:
        raise click.ClickException(
            f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}"
            "; pick another --port (0: any free one)"
        ) from None
    return 0


@click.command("trace")
@click.argument("run", required=False)
@click.option(
    "-o",
    "--output",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    metavar="FILE",
    help="where the trace JSON goes",
)
def trace_command(run: str | None, out: Path) -> int:
    """RUN as Chrome trace-event JSON: open FILE in Perfetto (ui.perfetto.dev) or chrome://tracing.

    One track per lane, one slice per turn (actor, status, cost), instant events and flow
    arrows for hand-offs.
    """
    from flamechase.cli.pick import pick
    from flamechase.fsutil import atomic_write
    from flamechase.view.replay import load_run
    from flamechase.view.trace import build_trace

    run_dir = pick(run)
    trace = build_trace(*load_run(run_dir))
    with _writing(out):
        atomic_write(out, json.dumps(trace, ensure_ascii=False).encode(), mode=0o644)
    slices = sum(1 for e in trace["traceEvents"] if e.get("cat") == "turn")
    echo(
        f"wrote {slices} turn slices of run {run_dir.name} to {out}; open it in "
        "Perfetto (ui.perfetto.dev) or chrome://tracing"
    )
    return 0


commands: list[click.Command] = [
    show_command,
    simulate_command,
    demo_command,
    serve_command,
    trace_command,
]
