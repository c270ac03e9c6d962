"""`accounts add|list|remove CLI NAME`: saved accounts that `CLI@NAME/MODEL` runs on."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import click

from flamechase.text import echo, echo_json


@click.group("accounts")
def command() -> None:
    """Saved CLI accounts: each a private state directory under the state home.

    A role given `CLI@NAME/MODEL` runs its CLI on that account (CLAUDE_CONFIG_DIR,
    CODEX_HOME, GEMINI_CLI_HOME, XDG_DATA_HOME for opencode). Lanes on different accounts
    draw on different usage windows.
    """


@command.command("add")
@click.argument("cli")
@click.argument("name")
@click.option(
    "--api-key-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="store this API key for the account instead of running the CLI's login",
)
def add(cli: str, name: str, api_key_file: Path | None) -> int:
    """Make account NAME of CLI: its login runs with the account's directory (or a key)."""
    from flamechase.agents import accounts
    from flamechase.errors import UsageError

    key = None
    if api_key_file is not None:
        key = api_key_file.read_text().strip()
        if not key:
            raise UsageError(f"{api_key_file} is empty")
    account = accounts.create(cli, name, key)
    if key is None:
        login = accounts.LOGIN[cli]
        echo(f"running `{' '.join(login)}` for {cli} account {name!r} ({account.path})")
        env = {**_environ(), **accounts.account_env(account)}
        try:
            done = subprocess.run(login, env=env, check=False)
        except OSError as exc:
            accounts.remove(cli, name)
            raise UsageError(f"cannot run {login[0]}: {exc.strerror or exc}") from None
        if done.returncode != 0:
            accounts.remove(cli, name)
            echo(
                f"flamechase accounts: {login[0]} exited with {done.returncode}; nothing kept",
                err=True,
            )
            return 1
    echo(f"{cli} account {name!r}: {account.path} (use {cli}@{name}/MODEL)")
    return 0


def _environ() -> dict[str, str]:
    import os

    return dict(os.environ)


@command.command("list")
@click.option(
    "--json", "as_json", is_flag=True, help='a JSON list of {"cli", "name", "path", "kind"}'
)
def list_(as_json: bool) -> int:
    """The saved accounts."""
    from flamechase.agents import accounts

    rows = [
        {"cli": a.cli, "name": a.name, "path": str(a.path), "kind": a.kind}
        for a in accounts.list_accounts()
    ]
    if as_json:
        echo_json(json.dumps(rows, indent=1))
    elif not rows:
        echo("no accounts; add one with `flamechase accounts add CLI NAME`")
    else:
        for row in rows:
            echo(f"{row['cli']}@{row['name']}  {row['kind']}  {row['path']}")
    return 0


@command.command("remove")
@click.argument("cli")
@click.argument("name")
def remove(cli: str, name: str) -> int:
    """Delete account NAME of CLI and everything in its directory."""
    from flamechase.agents import accounts

    account = accounts.remove(cli, name)
    echo(f"removed {cli} account {name!r} ({account.path})")
    return 0
