"""Agent specs: `[ROLE=]CLI[@ACCOUNT]/MODEL[:EFFORT]`, `exec:PATH`, `acp:COMMAND`.

The rule under test: a spec either parses into exactly the fields the published grammar gives
(the effort is what follows the last `:`, commas split only before `ROLE=`), or it is refused with
a one-line SpecError/RoleError naming the bad value. Nothing else ever escapes.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flamechase.agents.spec import AgentSpec, assign_roles, parse_spec, split_agent_args
from flamechase.errors import RoleError, SpecError, UsageError

ROLES = ["first_chaser", "second_chaser"]


@pytest.fixture
def agent_script(tmp_path: Path) -> Path:
    """An executable script to point exec: at."""
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    return script


# --- parse_spec ---------------------------------------------------------------------------------


def test_plain_spec_gives_cli_and_model() -> None:
    assert parse_spec("claude/opus") == AgentSpec(text="claude/opus", cli="claude", model="opus")


def test_effort_is_what_follows_the_last_colon() -> None:
    spec = parse_spec("opencode/openrouter/qwen/qwen3:high")
    assert (spec.cli, spec.model, spec.effort) == ("opencode", "openrouter/qwen/qwen3", "high")


def test_model_keeps_earlier_colons() -> None:
    spec = parse_spec("ollama/qwen3:8b:low")
    assert (spec.model, spec.effort) == ("qwen3:8b", "low")


def test_auto_effort_means_no_effort() -> None:
    assert parse_spec("claude/opus:auto").effort is None
    assert parse_spec("claude/opus").effort is None


def test_provider_follows_the_at_sign() -> None:
    spec = parse_spec("claude@work/opus:max")
    assert (spec.cli, spec.provider, spec.model, spec.effort) == ("claude", "work", "opus", "max")


def test_sim_profile_is_the_model() -> None:
    spec = parse_spec("sim/steady")
    assert (spec.cli, spec.model) == ("sim", "steady")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("claude/", "model is empty"),
        ("claude/:high", "model is empty"),
        ("claude/opus:", "effort"),
        ("claude@/opus", "account"),
        ("claude", "no '/'"),
        ("Claude/opus", "lowercase"),
        ("9x/opus", "lowercase"),
        ("/opus", "lowercase"),
        ("claude/op us", "whitespace"),
        ("claude/opus\n", "whitespace"),
        ("claude/op\x00us", "control"),
        ("claude//opus", "empty '/' segment"),
        ("claude/opus/", "empty '/' segment"),
        ("claude/opus,codex/x", "','"),
        ("exec/x", "exec:PATH"),
        ("acp/x", "acp:COMMAND"),
    ],
)
def test_malformed_spec_is_refused_naming_it(text: str, reason: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(text)
    message = str(info.value)
    assert message.startswith(f"agent spec {text!r}: ")
    assert reason in message
    assert "CLI[@ACCOUNT]/MODEL[:EFFORT] or exec:PATH" in message
    assert "\n" not in message


def test_exec_spec_resolves_an_executable_to_an_absolute_path(
    agent_script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(agent_script.parent)
    spec = parse_spec("exec:./agent.sh")
    assert spec.cli == "exec"
    assert spec.path == str(agent_script.resolve())
    assert spec.text == "exec:./agent.sh"


def test_exec_spec_expands_home(agent_script: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(agent_script.parent))
    assert parse_spec("exec:~/agent.sh").path == str(agent_script.resolve())


def test_exec_path_may_hold_commas_and_spaces(tmp_path: Path) -> None:
    script = tmp_path / "my agent,v2.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o700)
    assert parse_spec(f"exec:{script}").path == str(script)


def test_exec_missing_file_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="does not exist") as info:
        parse_spec(f"exec:{tmp_path}/nope")
    assert "nope" in str(info.value)


def test_exec_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="not a regular file"):
        parse_spec(f"exec:{tmp_path}")


def test_exec_file_without_execute_bit_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "plain.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(stat.S_IRUSR | stat.S_IWUSR)
    with pytest.raises(SpecError, match="not executable"):
        parse_spec(f"exec:{script}")


def test_exec_with_empty_path_is_refused() -> None:
    with pytest.raises(SpecError, match="path after 'exec:' is empty"):
        parse_spec("exec:")


def test_exec_symlink_loop_is_a_spec_error(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(SpecError):
        parse_spec(f"exec:{loop}")


def test_acp_spec_keeps_the_command_line() -> None:
    spec = parse_spec("acp:npx -y gemini-cli --experimental-acp")
    assert (spec.cli, spec.path) == ("acp", "npx -y gemini-cli --experimental-acp")


@pytest.mark.parametrize("command", ["", "   ", "'unclosed"])
def test_acp_without_a_usable_command_is_refused(command: str) -> None:
    with pytest.raises(SpecError):
        parse_spec(f"acp:{command}")


# --- split_agent_args ---------------------------------------------------------------------------


def test_comma_splits_only_before_a_role() -> None:
    assert split_agent_args(["a=claude/m,b=codex/x"]) == [("a", "claude/m"), ("b", "codex/x")]


def test_comma_inside_an_exec_path_does_not_split() -> None:
    assert split_agent_args(["exec:/tmp/a,b.sh"]) == [(None, "exec:/tmp/a,b.sh")]


def test_equals_sign_after_a_slash_is_not_a_role() -> None:
    assert split_agent_args(["exec:/path/with=sign"]) == [(None, "exec:/path/with=sign")]
    assert split_agent_args(["claude/m=x"]) == [(None, "claude/m=x")]


def test_repeated_flags_and_commas_combine_in_order() -> None:
    got = split_agent_args(["a=claude/m:high,b=codex/x", "c=exec:/p,q"])
    assert got == [("a", "claude/m:high"), ("b", "codex/x"), ("c", "exec:/p,q")]


def test_positional_specs_have_no_role() -> None:
    assert split_agent_args(["claude/m", "codex/x"]) == [(None, "claude/m"), (None, "codex/x")]


# --- assign_roles -------------------------------------------------------------------------------


def test_named_specs_go_to_their_roles_in_declared_order() -> None:
    got = assign_roles(
        [("second_chaser", "codex/x"), ("first_chaser", "claude/m")], ROLES, "flame_chase"
    )
    assert list(got) == ROLES
    assert got["first_chaser"].cli == "claude"
    assert got["second_chaser"].cli == "codex"


def test_positional_specs_fill_roles_in_declared_order() -> None:
    got = assign_roles([(None, "claude/m"), (None, "codex/x")], ROLES, "flame_chase")
    assert [s.cli for s in got.values()] == ["claude", "codex"]


def test_roles_shared_by_several_lanes_need_one_agent_each() -> None:
    got = assign_roles([(None, "claude/m"), (None, "codex/x")], [*ROLES, *ROLES], "flame_chase")
    assert list(got) == ROLES


def test_unknown_role_lists_the_available_ones() -> None:
    with pytest.raises(RoleError) as info:
        assign_roles([("foo", "claude/m")], ROLES, "flame_chase")
    assert str(info.value) == (
        "flame_chase has no agent role 'foo'; available roles are 'first_chaser', 'second_chaser'"
    )


def test_role_given_twice_is_refused() -> None:
    with pytest.raises(RoleError, match="role 'first_chaser' is given twice"):
        assign_roles(
            [("first_chaser", "claude/m"), ("first_chaser", "codex/x")], ROLES, "flame_chase"
        )


def test_mixing_named_and_positional_is_refused() -> None:
    with pytest.raises(RoleError, match="mixing ROLE=SPEC and positional"):
        assign_roles([("first_chaser", "claude/m"), (None, "codex/x")], ROLES, "flame_chase")


def test_too_many_positional_specs_names_the_role_count() -> None:
    with pytest.raises(RoleError, match="has 2 agent role") as info:
        assign_roles([(None, "a/m"), (None, "b/m"), (None, "c/m")], ROLES, "flame_chase")
    assert "3 positional" in str(info.value)


def test_role_left_without_an_agent_is_named() -> None:
    with pytest.raises(RoleError) as info:
        assign_roles([("first_chaser", "claude/m")], ROLES, "flame_chase")
    assert str(info.value) == (
        "flame_chase needs an agent for 'second_chaser'; specify each with "
        "-a ROLE=CLI[@ACCOUNT]/MODEL[:EFFORT] or -a exec:PATH"
    )


def test_no_agents_names_every_role() -> None:
    with pytest.raises(RoleError, match="'first_chaser', 'second_chaser'"):
        assign_roles([], ROLES, "flame_chase")


def test_malformed_spec_in_a_role_is_a_spec_error() -> None:
    with pytest.raises(SpecError, match="agent spec 'claude/'"):
        assign_roles([("first_chaser", "claude/"), ("second_chaser", "codex/x")], ROLES, "f")


# --- properties ---------------------------------------------------------------------------------

_spec_text = st.one_of(
    st.text(max_size=60),
    st.text(alphabet="abc/@:=,.~ \n\x00eximpPT", max_size=40),
    st.builds(
        lambda cli, provider, model: f"{cli}{provider}/{model}",
        st.sampled_from(["claude", "codex", "sim", "exec", "x-1"]),
        st.sampled_from(["", "@", "@work", "@a.b"]),
        st.text(alphabet="az09/:.-", max_size=12),
    ),
    st.builds(lambda s: "exec:" + s, st.text(max_size=30)),
    st.builds(lambda s: "acp:" + s, st.text(max_size=30)),
)


@settings(max_examples=200, deadline=None, database=None)
@given(_spec_text)
def test_parse_spec_returns_or_refuses_in_one_line(text: str) -> None:
    try:
        spec = parse_spec(text)
    except SpecError as exc:
        assert "\n" not in str(exc)
    else:
        assert spec.text == text
        if spec.cli not in ("exec", "acp"):
            assert spec.model
            assert spec.effort != "auto"
            assert text.startswith(spec.cli)


@settings(max_examples=100, deadline=None, database=None)
@given(st.lists(_spec_text, max_size=4))
def test_split_agent_args_never_loses_text(values: list[str]) -> None:
    items = split_agent_args(values)
    # Rejoining the items of each value gives back exactly what was typed.
    rebuilt = ",".join(f"{role}={spec}" if role else spec for role, spec in items)
    assert rebuilt == ",".join(values)


@settings(max_examples=100, deadline=None, database=None)
@given(st.lists(st.tuples(st.none() | st.sampled_from([*ROLES, "other"]), _spec_text), max_size=4))
def test_assign_roles_returns_every_role_or_refuses(items: list[tuple[str | None, str]]) -> None:
    try:
        got = assign_roles(items, ROLES, "flame_chase")
    except UsageError as exc:
        assert isinstance(exc, SpecError | RoleError)
        assert "\n" not in str(exc)
    else:
        assert list(got) == ROLES


def test_an_acp_spec_runs_the_program_its_command_names() -> None:
    # the jail grants a program's own state directories: acp:gemini keeps gemini's
    assert parse_spec("acp:/opt/bin/gemini --acp -m gemini-2.5-flash").program == "gemini"
    assert parse_spec("claude/claude-sonnet-4-5").program == "claude"


# --- alternatives (engine/failover) -------------------------------------------------------------


def test_a_role_may_be_given_alternatives_in_order() -> None:
    from flamechase.agents.spec import assign_choices, parse_choices

    got = parse_choices("claude@work/opus|claude@home/opus|codex/gpt-5:high")
    assert [(s.cli, s.provider, s.model, s.effort) for s in got] == [
        ("claude", "work", "opus", None),
        ("claude", "home", "opus", None),
        ("codex", None, "gpt-5", "high"),
    ]
    items = split_agent_args(["first_chaser=claude/m|codex/x,second_chaser=codex/x"])
    choices = assign_choices(items, ROLES, "flame_chase")
    assert [s.text for s in choices["first_chaser"]] == ["claude/m", "codex/x"]
    # assign_roles gives each role its first.
    assert assign_roles(items, ROLES, "flame_chase")["first_chaser"].text == "claude/m"


def test_a_bar_inside_an_exec_path_is_part_of_the_path(tmp_path: Path) -> None:
    from flamechase.agents.spec import parse_choices

    script = tmp_path / "a|b.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    [spec] = parse_choices(f"exec:{script}")
    assert spec.path == str(script)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("claude/opus|", "contains '|'"),
        ("claude/opus|junk", "contains '|'"),
        ("claude/opus|claude/opus", "given twice"),
        ("claude/opus|codex/", "the model is empty"),
    ],
)
def test_malformed_alternatives_are_refused_in_one_line(text: str, message: str) -> None:
    from flamechase.agents.spec import parse_choices

    with pytest.raises(SpecError, match=message):
        parse_choices(text)
