"""The prompt `flamechase` opens on a terminal: `$FLOW TASK` starts a run with FLOW's profile.

    ❯ $my_flow get the solver under 10 s on every benchmark in bench/

The run shows its live view in the terminal and the prompt comes back when it ends or is
stopped (Ctrl-C stops it as it stops `exec`). A flow with no profile has its agents asked
for by name first (cli/asking.py); `/flow` walks the flowverses to install a flow
(cli/flow_menu.py). Lines are kept in a history file in the state home (Up/Down, Ctrl-R);
Tab completes flow names after `$`. `exit`, `quit` or Ctrl-D leave.
Uses prompt_toolkit (history, completion, and a test input that needs no terminal).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click
from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory

from flamechase.cli import asking, flow_menu
from flamechase.errors import FlamechaseError
from flamechase.text import echo

PROMPT = "❯ "
HELP = (
    "$FLOW TASK starts a run of FLOW with its profile (flamechase profile set FLOW -a ... "
    "-p ...; with none, its agents are asked for); /flow installs flows from a flowverse; "
    "Tab completes flow names; exit or Ctrl-D leaves"
)


def flow_names() -> list[str]:
    """Names `$` completes: built-in flows and variants, installed flows, flows of installed
    packages, and every flow that has a profile."""
    from flamechase.cli import profile
    from flamechase.flows import BUILTIN, VARIANTS
    from flamechase.loader import installed
    from flamechase.loader.resolve import entry_points

    names = {
        *BUILTIN,
        *VARIANTS,
        *(r.name for r in installed.all_installed()),
        *(p.name for p in entry_points()),
    }
    # A broken profiles file is reported when a run needs it, not on each key.
    with contextlib.suppress(FlamechaseError):
        names |= set(profile.load_all())
    return sorted(names)


class FlowCompleter(Completer):
    """Completes the flow after a leading `$`; nothing else (the task is free text)."""

    def __init__(self, names: Callable[[], list[str]] = flow_names) -> None:
        self.names = names

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith("$") or any(c.isspace() for c in text):
            return
        typed = text[1:]
        for name in self.names():
            if name.startswith(typed):
                yield Completion(name, start_position=-len(typed))


def parse(line: str) -> tuple[str, str] | None:
    """(flow, task) of `$FLOW TASK`, or None if the line is not one."""
    text = line.strip()
    if not text.startswith("$"):
        return None
    flow, _, task = text[1:].partition(" ")
    return (flow, task.strip()) if flow else None


def history_file() -> Path:
    from flamechase.store.home import ensure_private_dir, state_home

    return ensure_private_dir(state_home()) / "prompt-history"


# runner(flow, task) runs with FLOW's profile; runner(flow, task, agents=...) with the
# agents the prompt asked for.
Runner = Callable[..., int]


def repl(
    *,
    runner: Runner | None = None,
    session: PromptSession[str] | None = None,
    say: Callable[[str], None] = echo,
) -> int:
    """Read lines until exit; run each `$FLOW TASK`. Returns 0."""
    if runner is None:
        from flamechase.cli.run_cmd import start

        runner = start
    if session is None:
        session = PromptSession(
            history=FileHistory(str(history_file())),
            completer=FlowCompleter(),
            complete_while_typing=False,
        )
    say(f"flamechase: {HELP}")
    # Questions are asked on the same terminal, kept out of the prompt's history.
    questions: PromptSession[str] = PromptSession(input=session.input, output=session.output)
    while True:
        try:
            line = session.prompt(PROMPT)
        except KeyboardInterrupt:
            continue
        except EOFError:
            return 0
        if not _one(line, runner, say, questions.prompt):
            return 0


def _one(line: str, runner: Runner, say: Callable[[str], None], ask: asking.Ask) -> bool:
    """Handle one line; False to leave."""
    text = line.strip()
    if text in ("exit", "quit"):
        return False
    if not text:
        return True
    if text in ("help", "?"):
        say(HELP)
        return True
    if text == "/flow":
        with contextlib.suppress(asking.Cancelled):  # Ctrl-C: back to the prompt
            flow_menu.walk(ask, say, flow_names())
        return True
    if text.startswith("/"):
        say(f"no command {text.split()[0]}; /flow installs a flow, $FLOW TASK starts a run, help")
        return True
    parsed = parse(text)
    if parsed is None or not parsed[1]:
        say(
            f"start a run with $FLOW TASK (flows: {', '.join(flow_names())})"
            if parsed is None
            else f"${parsed[0]}: say what the agents should achieve"
        )
        return True
    flow, task = parsed
    agents: tuple[str, ...] | None = None
    if asking.needs_asking(flow):
        try:
            answers, saved = asking.ask_agents(flow, ask, say)
        except asking.Cancelled:
            say(f"flamechase: ${flow}: nothing started")
            return True
        except FlamechaseError as exc:
            say(f"flamechase: error: {_first(str(exc))}")
            say(f"flamechase: ${flow} ended with exit code {exc.exit_code}")
            return True
        agents = None if saved else tuple(answers)
    code = _run(runner, flow, task, agents, say=say)
    if code is not None:
        say(f"flamechase: ${flow} ended with exit code {code}")
    return True


def _run(
    runner: Runner,
    flow: str,
    task: str,
    agents: tuple[str, ...] | None,
    *,
    say: Callable[[str], None],
) -> int | None:
    """One run; a refusal or a stop comes back to the prompt as one line and its exit code.
    None when the run ran to its end: it said that end itself, once (exec_cmd.end_line)."""
    try:
        if agents is None:
            runner(flow, task)
        else:
            runner(flow, task, agents=agents)
        return None
    except FlamechaseError as exc:
        say(f"flamechase: error: {_first(str(exc))}")
        return exc.exit_code
    except click.ClickException as exc:
        say(f"flamechase: error: {_first(exc.format_message())}")
        return exc.exit_code
    except KeyboardInterrupt:
        say("flamechase: stopped")
        return 130


def _first(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else "error"


def interactive(stdin: Any, stdout: Any) -> bool:
    """Whether a bare `flamechase` should open the prompt: both ends are a terminal."""
    return bool(stdin.isatty() and stdout.isatty())
