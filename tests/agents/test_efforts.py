"""Before a run: an unknown effort is refused with the CLI's ladder, a CLI missing from PATH
with its install hint, an `@account` with what to do instead; whether budget.cost can see a
backend's spend is known up front. Each refusal is one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from flamechase.agents.efforts import LADDERS, check_effort
from flamechase.agents.registry import backend_for
from flamechase.agents.spec import AgentSpec, parse_spec
from flamechase.errors import BackendUnavailable


def refusal(text: str) -> str:
    with pytest.raises(BackendUnavailable) as err:
        backend_for(parse_spec(text)).check()
    message = str(err.value)
    assert "\n" not in message
    return message


def test_unknown_claude_effort_lists_the_ladder(fake_bin: Path) -> None:
    assert refusal("claude/claude-opus-4-5:turbo") == (
        "claude cannot take effort 'turbo'; expected one of ultracode, max, xhigh, high, "
        "medium, low"
    )


def test_unknown_codex_effort_lists_the_ladder(fake_bin: Path) -> None:
    assert refusal("codex/gpt-5:extreme") == (
        "codex cannot take effort 'extreme'; expected one of ultra, max, xhigh, high, medium, low"
    )


def test_gemini_takes_no_effort(fake_bin: Path) -> None:
    message = refusal("gemini/gemini-2.5-pro:high")
    assert message.startswith("gemini cannot take effort 'high'")
    assert "drop ':high'" in message


def test_acp_takes_no_effort() -> None:
    # The acp:COMMAND grammar has no effort; a spec built another way is still refused.
    with pytest.raises(BackendUnavailable, match="acp cannot take effort 'hi'"):
        check_effort(AgentSpec(text="acp:x", cli="acp", path="x", effort="hi"))


@pytest.mark.parametrize(
    "text",
    [
        "claude/claude-opus-4-5:ultracode",
        "claude/opus",
        "claude/opus:auto",
        "codex/gpt-5:ultra",
        "codex/gpt-5:low",
        "opencode/anthropic/claude-sonnet-4-5:minimal",
        "gemini/gemini-2.5-pro",
        "acp:fake-acp",
    ],
)
def test_known_efforts_and_no_effort_pass(fake_bin: Path, text: str) -> None:
    backend_for(parse_spec(text)).check()


def test_every_ladder_is_highest_first_without_repeats() -> None:
    for cli, ladder in LADDERS.items():
        assert len(set(ladder)) == len(ladder), cli


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("claude/opus", "claude is not installed: npm install -g @anthropic-ai/claude-code"),
        ("codex/gpt-5", "codex is not installed: npm install -g @openai/codex"),
        ("gemini/gemini-2.5-pro", "gemini is not installed: npm install -g @google/gemini-cli"),
        ("opencode/x/y", "opencode is not installed: npm install -g opencode-ai"),
    ],
)
def test_missing_cli_is_refused_with_its_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, hint: str
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert refusal(text) == hint


def test_missing_acp_command_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert "'my-agent' is not found on PATH" in refusal("acp:my-agent --stdio")


def test_an_unknown_account_is_refused_with_the_command_that_makes_it(fake_bin: Path) -> None:
    message = refusal("claude@work/opus")
    assert message == (
        "'claude@work/opus': there is no claude account called 'work'; make it with "
        "`flamechase accounts add claude work`"
    )


def test_a_bad_price_file_is_refused_at_check(
    fake_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "p.json"
    bad.write_text("{")
    monkeypatch.setenv("FLAMECHASE_PRICES", str(bad))
    assert refusal("codex/gpt-5").startswith(f"FLAMECHASE_PRICES={bad}: not JSON")


@pytest.mark.parametrize(
    ("text", "bounded"),
    [
        ("claude/anything", True),  # reports total_cost_usd
        ("opencode/some/model", True),  # reports each step's cost
        ("acp:fake-acp", False),  # an ACP agent reports tokens at most: no price, no bound
        ("acp:fake-acp -m gpt-5", True),  # tokens × the price of the model it was given
        ("acp:fake-acp -m gpt-unknown", False),
        ("codex/gpt-5", True),  # priced from the table
        ("codex/gpt-unknown", True),  # tokens counted at the highest openai rates listed
        ("gemini/gemini-2.5-flash", True),
        ("gemini/auto", True),
    ],
)
def test_which_backends_can_bound_cost(fake_bin: Path, text: str, bounded: bool) -> None:
    assert backend_for(parse_spec(text)).can_bound_cost() is bounded


def test_only_an_empty_price_table_leaves_token_counts_unpriced(
    fake_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "prices.json"
    empty.write_text('{"date": "2026-01-01", "models": {}}')
    monkeypatch.setenv("FLAMECHASE_PRICES", str(empty))
    assert backend_for(parse_spec("codex/gpt-5")).can_bound_cost() is False
    assert backend_for(parse_spec("claude/anything")).can_bound_cost() is True


@pytest.mark.parametrize(
    ("text", "noticed"),
    [
        ("codex/gpt-5.6-sol:max", True),
        ("gemini/gemini-9-pro", True),
        ("codex/gpt-5", False),  # listed
        ("claude/claude-opus-5:max", False),  # the CLI reports its cost
        ("opencode/anthropic/claude-opus-5", False),
        ("acp:fake-acp", False),
    ],
)
def test_a_backend_announces_an_unlisted_model_it_prices(
    fake_bin: Path, text: str, noticed: bool
) -> None:
    notice = backend_for(parse_spec(text)).price_notice()
    assert (notice is not None) is noticed
    if notice is not None:
        assert "has no price; counting it at" in notice and "FLAMECHASE_PRICES" in notice


def test_an_acp_agent_whose_spend_cannot_be_seen_says_so_at_start(fake_bin: Path) -> None:
    unseen = backend_for(parse_spec("acp:fake-acp")).spend_notice("lane_2_actor_a")
    assert unseen is not None
    assert unseen.startswith("the spend of lane_2_actor_a (acp:fake-acp) cannot be seen")
    assert backend_for(parse_spec("acp:fake-acp -m gpt-5")).spend_notice("r") is None
    assert backend_for(parse_spec("claude/opus")).spend_notice("r") is None


def test_only_acp_among_the_clis_is_self_reported(fake_bin: Path) -> None:
    flags = {
        t.split("/")[0].split(":")[0]: backend_for(parse_spec(t)).self_reported
        for t in ("claude/m", "codex/m", "gemini/m", "opencode/p/m", "acp:fake-acp")
    }
    assert flags == {
        "claude": False,
        "codex": False,
        "gemini": False,
        "opencode": False,
        "acp": True,
    }
