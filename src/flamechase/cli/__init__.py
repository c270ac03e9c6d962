"""CLI: the only place that prints and chooses exit codes.

Each command parses, calls one engine or store entry point and formats the result. Layers
are imported inside commands so `flamechase --help` stays fast.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from flamechase import __version__
from flamechase.errors import EXIT_FAILED, EXIT_SIGNAL, EXIT_USAGE, FlamechaseError

EXIT_CODES_HELP = """\b
Exit codes:
  0    the run finished (a budget was spent) / the command succeeded
  1    the run failed (see `flamechase status RUN`)
  2    refused before anything ran: bad flow, agent, param, budget, task or workspace
  3    every lane is held (two failed turns in a row, or a `blocked` report)
  130  stopped by a signal (Ctrl-C, SIGTERM)
"""


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
             epilog=EXIT_CODES_HELP)
@click.version_option(__version__, prog_name="flamechase")
def cli() -> None:
    """Run teams of AI coding agents on one objective, in parallel, unattended."""


def _register() -> None:
    from flamechase.cli import artifacts, exec_cmd, flows, job, lock, pr, profile, run_cmd, runs

    cli.add_command(exec_cmd.command)
    cli.add_command(flows.group)
    cli.add_command(pr.command)
    cli.add_command(profile.group)
    cli.add_command(run_cmd.command)
    cli.add_command(runs.runs_command)
    cli.add_command(runs.status_command)
    cli.add_command(runs.events_command)
    cli.add_command(artifacts.command)
    cli.add_command(job.command)
    cli.add_command(lock.command)
    for optional in ("flamechase.cli.agents", "flamechase.cli.accounts", "flamechase.cli.views"):
        try:
            module = __import__(optional, fromlist=["command"])
        except ImportError:
            continue
        for name in ("command", "commands"):
            cmd = getattr(module, name, None)
            if isinstance(cmd, click.Command):
                cli.add_command(cmd)
            elif isinstance(cmd, list):
                for c in cmd:
                    cli.add_command(c)


def _prompt_here() -> bool:
    """A bare `flamechase` opens the prompt on a terminal (else it prints the help)."""
    from flamechase.cli.prompt import interactive

    return interactive(sys.stdin, sys.stdout)


def _error(prog: str, message: str) -> None:
    first = message.strip().splitlines()[0] if message.strip() else "error"
    click.echo(f"{prog}: error: {first}", err=True)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the `flamechase` console script."""
    _register()
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
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
        _error(prog, exc.format_message() + (" (see --help)" if "--help" not in
                                             exc.format_message() else ""))
        code = EXIT_USAGE
    except click.Abort:
        code = EXIT_SIGNAL
    except FlamechaseError as exc:
        if debug:
            raise
        _error(prog, str(exc))
        code = exc.exit_code
    except KeyboardInterrupt:
        click.echo(f"{prog}: stopped", err=True)
        code = EXIT_SIGNAL
    except click.ClickException as exc:
        _error(prog, exc.format_message())
        code = exc.exit_code
    except BrokenPipeError:
        code = EXIT_FAILED
    sys.exit(code if isinstance(code, int) else 0)
