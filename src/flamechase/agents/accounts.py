"""Saved accounts: `CLI@NAME/MODEL` runs the CLI with its own private state directory.

Owns where an account lives (`<state home>/accounts/<cli>/<name>/`, mode 0700, an API key in
`api-key` mode 0600 when given one), the environment that points each CLI at it, the login
command that fills it, and the refusal of an unknown account. Lanes on different accounts
draw on different usage windows. Must not start processes (the `accounts add` command runs
the login) nor touch run state.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from pathlib import Path

from flamechase.agents.efforts import SpecLike
from flamechase.errors import BackendUnavailable, UsageError

__all__ = [
    "ACCOUNT_CLIS",
    "LOGIN",
    "Account",
    "account_env",
    "accounts_root",
    "check_account",
    "create",
    "find",
    "list_accounts",
    "remove",
]

# The variable that moves each CLI's whole state (login included) to another directory.
_DIR_VAR = {
    "claude": "CLAUDE_CONFIG_DIR",
    "codex": "CODEX_HOME",
    "gemini": "GEMINI_CLI_HOME",
    "opencode": "XDG_DATA_HOME",
}
# Where an API key from `accounts add --api-key-file` goes; opencode keeps keys per provider
# (its own `opencode auth login` stores them), so it takes no key file.
_KEY_VARS = {
    "claude": ("ANTHROPIC_API_KEY",),
    "codex": ("OPENAI_API_KEY", "CODEX_API_KEY"),
    "gemini": ("GEMINI_API_KEY",),
}
# Each CLI's own login, run with the account's directory in its environment.
LOGIN = {
    "claude": ["claude", "auth", "login"],
    "codex": ["codex", "login"],
    "gemini": ["gemini"],
    "opencode": ["opencode", "auth", "login"],
}
ACCOUNT_CLIS = tuple(_DIR_VAR)
KEY_FILE = "api-key"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclasses.dataclass(frozen=True, slots=True)
class Account:
    cli: str
    name: str
    path: Path

    @property
    def kind(self) -> str:
        return "api-key" if (self.path / KEY_FILE).exists() else "login"


def accounts_root() -> Path:
    """`<state home>/accounts`. The state home rule is store.home's (FLAMECHASE_HOME, else the
    platform's state directory), repeated here because agents may not import store; a test
    keeps the two equal."""
    explicit = os.environ.get("FLAMECHASE_HOME")
    if explicit:
        return Path(explicit).expanduser().absolute() / "accounts"
    import platformdirs

    return Path(platformdirs.user_state_path("flamechase")) / "accounts"


def _validate(cli: str, name: str) -> None:
    if cli not in _DIR_VAR:
        raise UsageError(f"accounts are for {', '.join(ACCOUNT_CLIS)}; not {cli!r}")
    if not _NAME.fullmatch(name):
        raise UsageError(f"account name {name!r}: use letters, digits, '.', '_' or '-'")


def find(cli: str, name: str) -> Account | None:
    _validate(cli, name)
    path = accounts_root() / cli / name
    return Account(cli, name, path) if path.is_dir() else None


def create(cli: str, name: str, api_key: str | None = None) -> Account:
    """Make the account's directory (0700), with the API key (0600) when one is given."""
    _validate(cli, name)
    if api_key is not None and cli not in _KEY_VARS:
        raise UsageError(
            f"{cli} takes no API-key file; `flamechase accounts add {cli} {name}` "
            f"runs `{' '.join(LOGIN[cli])}` with the account's directory"
        )
    path = accounts_root() / cli / name
    if path.exists():
        raise UsageError(
            f"{cli} account {name!r} already exists ({path}); remove it first "
            f"with `flamechase accounts remove {cli} {name}`"
        )
    home = accounts_root().parent
    fresh_home = not home.exists()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    for parent in ((home,) if fresh_home else ()) + (accounts_root(), path.parent):
        parent.chmod(0o700)
    path.mkdir(mode=0o700)
    if api_key is not None:
        fd = os.open(path / KEY_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(api_key.strip() + "\n")
    return Account(cli, name, path)


def remove(cli: str, name: str) -> Account:
    account = find(cli, name)
    if account is None:
        raise UsageError(f"there is no {cli} account called {name!r}")
    shutil.rmtree(account.path)
    return account


def list_accounts() -> list[Account]:
    root = accounts_root()
    out = []
    for cli in ACCOUNT_CLIS:
        base = root / cli
        if base.is_dir():
            out += [Account(cli, p.name, p) for p in sorted(base.iterdir()) if p.is_dir()]
    return out


def account_env(account: Account) -> dict[str, str]:
    """The environment that makes the account's CLI use the account's directory (and key)."""
    env = {_DIR_VAR[account.cli]: str(account.path)}
    key_file = account.path / KEY_FILE
    if key_file.is_file():
        key = key_file.read_text().strip()
        env.update(dict.fromkeys(_KEY_VARS.get(account.cli, ()), key))
    return env


def check_account(spec: SpecLike) -> Account | None:
    """The account `spec` names (`CLI@NAME/...`), None without one; BackendUnavailable with the
    command that makes it when there is no such account."""
    if not spec.provider:
        return None
    if spec.cli not in _DIR_VAR:
        raise BackendUnavailable(f"{spec.text!r}: {spec.cli} takes no '@ACCOUNT'")
    try:
        account = find(spec.cli, spec.provider)
    except UsageError as exc:
        raise BackendUnavailable(f"{spec.text!r}: {exc}") from None
    if account is None:
        raise BackendUnavailable(
            f"{spec.text!r}: there is no {spec.cli} account called {spec.provider!r}; make it "
            f"with `flamechase accounts add {spec.cli} {spec.provider}`"
        )
    return account
