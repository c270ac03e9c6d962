"""CLI: the only place that prints and chooses exit codes.

Each command parses, calls one engine or store entry point and formats the result. Layers
are imported inside commands so `flamechase --help` stays fast.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

import click

from flamechase import __version__
from flamechase.errors import EXIT_FAILED, EXIT_SIGNAL, EXIT_USAGE, FlamechaseError
from flamechase.text import echo

EXIT_CODES_HELP = """\b
Exit codes:
  0    the run finished (a budget was spent) / the command succeeded
  1    the run failed (see `flamechase status RUN`)
  2    refused before anything ran: bad flow, agent, param, budget, task or workspace
  3    every lane is held (two failed turns in a row, or a `blocked` report)
  130  stopped by a signal (Ctrl-C, SIGTERM)
"""


# Each command's module, imported only when that command runs (or help lists them all): a
# CLI call pays for its own imports only. `flamechase pr`, `job` and `lock` run inside agents'
# turns, and tests call `status` and `events` thousands of times.
COMMANDS: dict[str, tuple[str, str]] = {
    "exec": ("exec_cmd", "command"),
    "run": ("run_cmd", "command"),
    "runs": ("runs", "runs_command"),
    "status": ("runs", "status_command"),
    "events": ("runs", "events_command"),
    "gc": ("gc", "gc_command"),
    "artifacts": ("artifacts", "command"),
    "flows": ("flows", "group"),
    "profile": ("profile", "group"),
    "job": ("job", "command"),
    "lock": ("lock", "command"),
    "agents": ("agents", "command"),
    "accounts": ("accounts", "command"),
    "show": ("views", "show_command"),
    "simulate": ("views", "simulate_command"),
    "demo": ("views", "demo_command"),
    "serve": ("views", "serve_command"),
    "trace": ("views", "trace_command"),
}


def _all_commands() -> dict[str, tuple[str, str]]:
    """The CLI's own commands and those the built-in flows add: name -> (module, attribute)."""
    from flamechase.flows import COMMANDS as FLOW_COMMANDS

    own = {name: (f"flamechase.cli.{module}", attr) for name, (module, attr) in COMMANDS.items()}
    return {**FLOW_COMMANDS, **own}


# Each command's one-line help, as `--help` lists it without importing the command (importing
# them all cost 0.3 s: flows, pydantic, yaml). The first paragraph of the command's docstring;
# tests/cli/test_startup.py checks each against the command it stands for.
SHORT_HELP: dict[str, str] = {
    "accounts": "Saved CLI accounts: each a private state directory under the state home.",
    "agents": "List the supported agent CLIs: installed or not, version, effort ladder.",
    "artifacts": "List or extract RUN's artifact packages; every hash is checked on the way out.",
    "demo": "See flamechase work in seconds: lanes of simulated agents on a sample repository.",
    "events": "The event log of RUN.",
    "exec": "Run FLOW on the current directory toward TASK (`continue` reads TASK.md).",
    "flows": "Flows you can run: built-in, installed from an index, or from installed packages.",
    "gc": "Reclaim the copies and scratch directories of runs no engine is running.",
    "job": "Background jobs: start, wait, list, logs, kill, reap.",
    "lock": "The exclusive measurement lock: run, acquire, release, status.",
    "pr": "Pull requests of a lane whose flow has them, from inside the lane's clone.",
    "profile": "Agents and budgets per flow, for `flamechase run FLOW TASK` and the prompt.",
    "run": "Run FLOW on the current directory toward TASK with the agents and budgets of its "
    "profile (`flamechase profile set FLOW -a ... -p ...`); the words of TASK are joined by "
    "spaces.",
    "runs": "List runs, oldest first, with the disk each takes (`runs rm RUN` removes one).",
    "serve": "A local page listing runs and replaying them live (127.0.0.1 only, token in the "
    "URL).",
    "show": "What RUN amounted to; with --html, its step-by-step replay page.",
    "simulate": "Run FLOW with simulated agents on a throw-away copy and write its replay.",
    "status": "Where RUN stands (an id, a unique prefix, or `last`).",
    "trace": "RUN as Chrome trace-event JSON: open FILE in Perfetto (ui.perfetto.dev) or "
    "chrome://tracing.",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_all_commands()})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The listing from SHORT_HELP: a command is imported only to run it (or when its
        help is not listed there, which a test forbids)."""
        rows: list[tuple[str, click.Command]] = []
        for name in self.list_commands(ctx):
            help_text = SHORT_HELP.get(name) if name not in self.commands else None
            cmd = click.Command(name, help=help_text) if help_text else self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd))
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(name, cmd.get_short_help_str(limit)) for name, cmd in rows])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        known = _all_commands()
        if cmd_name not in self.commands and cmd_name in known:
            module, attr = known[cmd_name]
            try:
                found = getattr(importlib.import_module(module), attr)
            except ImportError:  # an optional extra's command (its library is missing)
                return None
            self.add_command(found, cmd_name)
        return self.commands.get(cmd_name)


@click.group(
    cls=_LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=EXIT_CODES_HELP,
)
@click.version_option(__version__, prog_name="flamechase")
def cli() -> None:
    """Run teams of AI coding agents on one objective, in parallel, unattended."""


def _register() -> None:
    """Every command loaded now (for tests and docs that walk them all)."""
    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):
        cli.get_command(ctx, name)


def _prompt_here() -> bool:
    """A bare `flamechase` opens the prompt on a terminal (else it prints the help)."""
    from flamechase.cli.prompt import interactive

    return interactive(sys.stdin, sys.stdout)


# `--debug` was given: errors raise with their tracebacks, and a run the flow's code broke
# prints the flow's own traceback (commands ask `debugging()`).
_DEBUG: list[bool] = [False]


def debugging() -> bool:
    return _DEBUG[0]


def _error(prog: str, message: str) -> None:
    first = message.strip().splitlines()[0] if message.strip() else "error"
    echo(f"{prog}: error: {first}", err=True)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the `flamechase` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = _DEBUG[0] = "--debug" in args
    if debug:
        args.remove("--debug")
    prog = "flamechase" + (f" {args[0]}" if args and not args[0].startswith("-") else "")
    try:
        if not args and _prompt_here():
            from flamechase.cli.prompt import repl

            code = repl()
        else:
            # Off a terminal a bare `flamechase` says what it can do rather than refuse.
            args = args or ["--help"]
            code = cli.main(args=args, prog_name="flamechase", standalone_mode=False)
    except click.UsageError as exc:
        _error(
            prog,
            exc.format_message()
            + (" (see --help)" if "--help" not in exc.format_message() else ""),
        )
        code = EXIT_USAGE
    except click.Abort:
        code = EXIT_SIGNAL
    except FlamechaseError as exc:
        flow_tb = str(getattr(exc, "traceback", "") or "")
        if debug:
            if flow_tb:
                echo(flow_tb.rstrip("\n"), err=True, lines=True)
            raise
        _error(prog, str(exc) + ("; --debug shows the flow's traceback" if flow_tb else ""))
        code = exc.exit_code
    except KeyboardInterrupt:
        echo(f"{prog}: stopped", err=True)
        code = EXIT_SIGNAL
    except click.ClickException as exc:
        _error(prog, exc.format_message())
        code = exc.exit_code
    except BrokenPipeError:
        code = EXIT_FAILED
    sys.exit(code if isinstance(code, int) else 0)
