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


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_all_commands()})

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
