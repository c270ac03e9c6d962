"""`flamechase run FLOW TASK`: `exec` with the agents and params of FLOW's profile."""

from __future__ import annotations

import click

from flamechase.cli import EXIT_CODES_HELP


def start(
    flow_ref: str,
    task: str,
    *,
    params: tuple[str, ...] = (),
    resume: bool = False,
    refresh: bool = False,
    as_json: bool = False,
    allow_workspace: bool = False,
    agents: tuple[str, ...] | None = None,
) -> int:
    """Run FLOW toward TASK here, as `exec -f FLOW` with its profile's `-a` and `-p` (and
    `params` after them, so they win), or with `agents` and no profile (the prompt asked for
    them). Returns the run's exit code."""
    from flamechase.cli import exec_cmd, profile
    from flamechase.errors import ProfileError

    if agents is not None:
        saved = profile.Profile(agents=list(agents))
    else:
        try:
            saved = profile.get(flow_ref)
        except ProfileError:
            from flamechase.loader import load_flow

            load_flow(flow_ref)  # a flow that does not exist is said so, not "make a profile"
            raise
    callback = exec_cmd.command.callback
    assert callback is not None
    code: int = callback(
        flow_ref=flow_ref,
        agents=tuple(saved.agents),
        params=(*saved.params, *params),
        config=None,
        resume=resume,
        refresh=refresh,
        as_json=as_json,
        allow_workspace=allow_workspace,
        executor_text="local",
        envs=(),
        task=task,
    )
    return code


@click.command("run", epilog=EXIT_CODES_HELP)
@click.argument("flow_ref", metavar="FLOW")
@click.argument("task", metavar="TASK", nargs=-1, required=True)
@click.option(
    "-p",
    "--param",
    "params",
    multiple=True,
    metavar="KEY=VALUE[,...]",
    help="on top of the profile's: a flow param or budget.*",
)
@click.option("--resume", is_flag=True, help="pick up the newest compatible run; refuse if none")
@click.option(
    "--refresh",
    is_flag=True,
    help="resume even though the flow's code changed; trust a moved git tag",
)
@click.option("--json", "as_json", is_flag=True, help="one JSON object per event on stdout")
@click.option(
    "--allow-workspace",
    is_flag=True,
    help="run even when the current directory is /, a system directory or your home",
)
def command(
    flow_ref: str,
    task: tuple[str, ...],
    params: tuple[str, ...],
    resume: bool,
    refresh: bool,
    as_json: bool,
    allow_workspace: bool,
) -> int:
    """Run FLOW on the current directory toward TASK with the agents and budgets of its profile
    (`flamechase profile set FLOW -a ... -p ...`); the words of TASK are joined by spaces."""
    return start(
        flow_ref,
        " ".join(task),
        params=params,
        resume=resume,
        refresh=refresh,
        as_json=as_json,
        allow_workspace=allow_workspace,
    )
