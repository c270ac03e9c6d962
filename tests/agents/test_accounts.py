"""Saved accounts: where they live (private), what environment points each CLI at one, and
the refusal of an account that does not exist."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from flamechase.agents import accounts
from flamechase.agents.spec import parse_spec
from flamechase.errors import BackendUnavailable, UsageError
from flamechase.store.home import state_home


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_accounts_live_under_the_state_home() -> None:
    assert accounts.accounts_root() == state_home() / "accounts"


def test_an_account_directory_and_its_key_are_private(state_home: Path) -> None:
    account = accounts.create("claude", "work", api_key="sk-ant-secret\n")
    assert account.path == state_home / "accounts" / "claude" / "work"
    for path in (state_home, state_home / "accounts", account.path.parent, account.path):
        assert mode(path) == 0o700, path
    assert mode(account.path / "api-key") == 0o600
    assert account.kind == "api-key"


@pytest.mark.parametrize(
    ("cli", "variables"),
    [
        ("claude", {"CLAUDE_CONFIG_DIR", "ANTHROPIC_API_KEY"}),
        ("codex", {"CODEX_HOME", "OPENAI_API_KEY", "CODEX_API_KEY"}),
        ("gemini", {"GEMINI_CLI_HOME", "GEMINI_API_KEY"}),
    ],
)
def test_the_environment_points_the_cli_at_the_account(cli: str, variables: set[str]) -> None:
    account = accounts.create(cli, "team", api_key="k-123")
    env = accounts.account_env(account)
    assert set(env) == variables
    assert {v for k, v in env.items() if "KEY" in k} == {"k-123"}
    assert {v for k, v in env.items() if "KEY" not in k} == {str(account.path)}


def test_a_login_account_moves_only_the_state_directory() -> None:
    account = accounts.create("opencode", "team")
    assert account.kind == "login"
    assert accounts.account_env(account) == {"XDG_DATA_HOME": str(account.path)}


def test_opencode_takes_no_key_file() -> None:
    with pytest.raises(UsageError, match="opencode takes no API-key file"):
        accounts.create("opencode", "team", api_key="k")


def test_an_existing_account_is_not_overwritten() -> None:
    accounts.create("codex", "a")
    with pytest.raises(UsageError, match="already exists"):
        accounts.create("codex", "a")


@pytest.mark.parametrize("name", ["../x", "", "a/b", ".hidden", "x" * 65])
def test_an_account_name_is_one_safe_path_component(name: str) -> None:
    with pytest.raises(UsageError):
        accounts.create("claude", name)


def test_list_and_remove() -> None:
    accounts.create("gemini", "b")
    accounts.create("claude", "a")
    assert [(a.cli, a.name) for a in accounts.list_accounts()] == [("claude", "a"), ("gemini", "b")]
    accounts.remove("claude", "a")
    assert [(a.cli, a.name) for a in accounts.list_accounts()] == [("gemini", "b")]
    with pytest.raises(UsageError, match="no claude account called 'a'"):
        accounts.remove("claude", "a")


def test_a_spec_on_an_unknown_account_names_the_command_that_makes_it() -> None:
    with pytest.raises(BackendUnavailable) as exc:
        accounts.check_account(parse_spec("codex@night/gpt-5"))
    assert str(exc.value).endswith("make it with `flamechase accounts add codex night`")
    accounts.create("codex", "night")
    found = accounts.check_account(parse_spec("codex@night/gpt-5"))
    assert found is not None and found.name == "night"
    assert accounts.check_account(parse_spec("codex/gpt-5")) is None
