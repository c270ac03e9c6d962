"""Settings: `-p KEY=VALUE`, `-c CONFIG.yaml`, budget values and flow params.

The rule under test: every setting either becomes a typed value (seconds, dollars, tokens, a
validated FlowParams) or is refused with a one-line ParamError that names the key and the accepted
form. Arbitrary input never raises anything else and never hangs.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field

from flamechase import budgets
from flamechase.budgets import NO_BUDGET
from flamechase.config import (
    BUDGET_KEYS,
    Budget,
    load_config,
    parse_bool,
    parse_cost,
    parse_count,
    parse_duration,
    parse_settings,
    parse_tokens,
    split_kv,
)
from flamechase.errors import ParamError
from flamechase.flow import FlowParams

PROPERTY = settings(max_examples=200, deadline=None, database=None)


class BenchParams(FlowParams):
    """A flow with params of its own, including ones a string must be decoded for."""

    evaluator: str = "true"
    lanes: int = Field(default=2, ge=1, le=8)
    direction: Literal["min", "max"] = "max"
    protected: tuple[str, ...] = ()


def _single_line(exc: ParamError) -> str:
    message = str(exc)
    assert "\n" not in message
    assert message
    return message


# --- split_kv -----------------------------------------------------------------------------------


def test_comma_splits_only_before_a_key() -> None:
    got = split_kv(["budget.cost=5,budget.duration=1h", "evaluator=python bench.py --a,b"])
    assert got == [
        ("budget.cost", "5"),
        ("budget.duration", "1h"),
        ("evaluator", "python bench.py --a,b"),
    ]


def test_later_duplicate_key_wins() -> None:
    assert split_kv(["rest_seconds=1", "rest_seconds=2"]) == [("rest_seconds", "2")]


def test_value_may_be_empty_or_hold_equals_signs() -> None:
    assert split_kv(["a=", "b=x=y"]) == [("a", ""), ("b", "x=y")]


@pytest.mark.parametrize("value", ["budget.cost", "", "=5", "9x=1", "a b=1"])
def test_item_without_a_key_is_refused(value: str) -> None:
    with pytest.raises(ParamError, match="expected KEY=VALUE"):
        split_kv([value])


# --- load_config --------------------------------------------------------------------------------


def test_nested_and_flat_budget_keys_both_flatten(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("budget:\n  cost: 5\n  graceful: false\nbudget.duration: 1h\nrest_seconds: 2\n")
    assert load_config(cfg) == {
        "budget.cost": 5,
        "budget.graceful": False,
        "budget.duration": "1h",
        "rest_seconds": 2,
    }


def test_empty_config_file_is_no_settings(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("# nothing yet\n")
    assert load_config(cfg) == {}


def test_dates_stay_text(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("since: 2024-13-45\nuntil: 2024-01-02\n")
    assert load_config(cfg) == {"since": "2024-13-45", "until": "2024-01-02"}


def test_missing_config_is_a_param_error(tmp_path: Path) -> None:
    with pytest.raises(ParamError, match="no such file"):
        load_config(tmp_path / "absent.yaml")


def test_config_that_is_a_directory_is_a_param_error(tmp_path: Path) -> None:
    with pytest.raises(ParamError, match="cannot read"):
        load_config(tmp_path)


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("budget:\n  cost: 5\n  bad: [unclosed\n")
    with pytest.raises(ParamError, match=r"invalid YAML at line \d") as info:
        load_config(cfg)
    _single_line(info.value)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("- a\n- b\n", "expected a mapping"),
        ("just text\n", "expected a mapping"),
        ("1: x\n", "is not text"),
        ("a: [1, 2]\n", "must be text, a number"),
        ("a:\n", "has no value"),
        ("budget.cost: 5\nbudget:\n  cost: 6\n", "given twice"),
        ("bad key: 1\n", "not a valid KEY"),
    ],
)
def test_config_with_wrong_shape_is_refused(tmp_path: Path, text: str, fragment: str) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(text)
    with pytest.raises(ParamError, match=fragment):
        load_config(cfg)


def test_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    lines = ["a0: &a0 {x: 1, y: 1}"]
    lines += [f"a{i}: &a{i} {{x: *a{i - 1}, y: *a{i - 1}}}" for i in range(1, 30)]
    cfg = tmp_path / "c.yaml"
    cfg.write_text("\n".join(lines) + "\n")
    with pytest.raises(ParamError):
        load_config(cfg)


def test_aliases_to_empty_mappings_cannot_make_the_walk_explode(tmp_path: Path) -> None:
    lines = ["e0: &e0 {}"]
    lines += [
        f"e{i}: &e{i} {{" + ", ".join(f"k{j}: *e{i - 1}" for j in range(20)) + "}"
        for i in range(1, 8)
    ]
    cfg = tmp_path / "c.yaml"
    cfg.write_text("\n".join(lines) + "\n")
    with pytest.raises(ParamError, match="more than 1000 keys"):
        load_config(cfg)


@PROPERTY
@given(st.binary(max_size=200) | st.text(alphabet=":-[]{}&*!#'\"\n ab1.", max_size=60))
def test_any_config_bytes_load_or_refuse_in_one_line(
    tmp_path_factory: pytest.TempPathFactory, data: bytes | str
) -> None:
    # One file rewritten per example: a directory per example would cost more than the parse.
    cfg = tmp_path_factory.getbasetemp() / "any-config.yaml"
    if isinstance(data, str):
        cfg.write_text(data)
    else:
        cfg.write_bytes(data)
    try:
        got = load_config(cfg)
    except ParamError as exc:
        _single_line(exc)
    else:
        assert all(isinstance(v, str | int | float) for v in got.values())


# --- budget values ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("90s", 90),
        ("1h30m", 5400),
        ("1h 30m", 5400),
        ("12h", 43200),
        ("2d", 172800),
        ("1 hour 30 mins", 5400),
        ("PT1H30M", 5400),
        ("P1DT2H", 93600),
        ("pt0.5h", 1800),
        ("01:30:00", 5400),
        ("1:30", 90),
        ("90", 90),
        ("2.5", 2.5),
        (90, 90),
        (0.5, 0.5),
    ],
)
def test_duration_forms_give_seconds(value: str | float, seconds: float) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize(
    "value",
    ["", "0", "0s", "-5", "inf", "nan", "1e999", "30m1h", "1h1h", "P", "PT", "P1DT", "P1M1Y",
     "1:60", "1ms", "soon", True, None, 0, -1.0, math.inf],
)  # fmt: skip
def test_bad_duration_is_refused(value: object) -> None:
    with pytest.raises(ParamError, match=r"budget\.duration=") as info:
        parse_duration(value)
    _single_line(info.value)


@pytest.mark.parametrize(("value", "usd"), [("5", 5), ("$5.50", 5.5), ("0.02", 0.02), (3, 3)])
def test_cost_forms_give_dollars(value: str | int, usd: float) -> None:
    assert parse_cost(value) == usd


@pytest.mark.parametrize("value", ["inf", "$inf", "Infinity", math.inf])
def test_infinite_cost_is_refused_because_a_budget_must_bound(value: object) -> None:
    with pytest.raises(ParamError, match="must bound"):
        parse_cost(value)


@pytest.mark.parametrize("value", ["0", "-1", "five", "$", "", False])
def test_bad_cost_is_refused(value: object) -> None:
    with pytest.raises(ParamError, match=r"budget\.cost="):
        parse_cost(value)


@pytest.mark.parametrize(
    ("value", "tokens"),
    [
        ("200k", 200_000),
        ("1.5m", 1_500_000),
        ("2M", 2_000_000),
        ("1G", 10**9),
        ("1e6", 10**6),
        ("200_000", 200_000),
        ("0.1k", 100),
        (5000, 5000),
        (1.5e6, 1_500_000),
    ],
)
def test_token_forms_give_a_whole_count(value: str | float, tokens: int) -> None:
    assert parse_tokens(value) == tokens


@pytest.mark.parametrize("value", ["0", "1.0001k", "0.5", "1e999999999", "2t", "1__0", "k", 0.5])
def test_bad_token_count_is_refused(value: object) -> None:
    with pytest.raises(ParamError, match=r"budget\.output_tokens="):
        parse_tokens(value)


@pytest.mark.parametrize(("value", "count"), [("20", 20), (3, 3), ("1_000", 1000), (4.0, 4)])
def test_turns_are_a_positive_whole_number(value: str | float, count: int) -> None:
    assert parse_count(value) == count


@pytest.mark.parametrize("value", ["0", "-2", "2.5", "two", 2.5, True])
def test_bad_turn_count_is_refused(value: object) -> None:
    with pytest.raises(ParamError, match=r"budget\.turns="):
        parse_count(value)


@pytest.mark.parametrize(
    ("value", "flag"),
    [("true", True), ("No", False), ("on", True), ("0", False), (True, True), (0, False)],
)
def test_graceful_accepts_the_usual_booleans(value: object, flag: bool) -> None:
    assert parse_bool(value) is flag


def test_graceful_refuses_other_words() -> None:
    with pytest.raises(ParamError, match="expected true or false"):
        parse_bool("maybe")


_budget_text = st.one_of(
    st.text(max_size=30),
    st.text(alphabet="0123456789.:_ $PTDHMSkmgeinf+-hds", max_size=20),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
)


@PROPERTY
@given(_budget_text)
def test_budget_parsers_return_or_refuse_in_one_line(value: object) -> None:
    for parse in (parse_duration, parse_cost, parse_tokens, parse_count):
        try:
            got = parse(value)
        except ParamError as exc:
            _single_line(exc)
        else:
            assert math.isfinite(got)
            assert got > 0


# --- Budget -------------------------------------------------------------------------------------


def test_budget_round_trips_through_json() -> None:
    budget = Budget(duration=90.0, cost=5.0, turns=3, output_tokens=1000, graceful=False)
    assert Budget.from_json(budget.to_json()) == budget


def test_graceful_alone_is_an_empty_budget() -> None:
    assert Budget(graceful=False).is_empty()
    assert not Budget(turns=1).is_empty()


def test_merged_replaces_given_keys_and_keeps_the_rest() -> None:
    old = Budget(duration=60.0, cost=1.0)
    assert old.merged({"cost": 2.0, "graceful": False}) == Budget(
        duration=60.0, cost=2.0, graceful=False
    )


def test_the_no_budget_notice_says_how_the_run_ends_and_names_every_bound() -> None:
    assert NO_BUDGET.startswith("no budget: this run goes on until you stop it")
    for key in BUDGET_KEYS[:4]:
        assert key in NO_BUDGET


# --- parse_settings -----------------------------------------------------------------------------


def test_settings_split_into_budget_and_params() -> None:
    budget, params = parse_settings(
        {"budget.duration": "90s", "budget.graceful": "no", "rest_seconds": "1.5"},
        FlowParams,
        "flame_chase",
    )
    assert budget == {"duration": 90.0, "graceful": False}
    assert params.rest_seconds == 1.5


def test_yaml_scalars_reach_params_as_their_natural_type() -> None:
    budget, params = parse_settings(
        {"budget.cost": 5, "evaluator": 123, "lanes": 3, "direction": "min"},
        BenchParams,
        "bench",
    )
    assert budget == {"cost": 5.0}
    assert isinstance(params, BenchParams)
    assert (params.evaluator, params.lanes, params.direction) == ("123", 3, "min")


def test_list_param_may_be_given_as_json() -> None:
    _, params = parse_settings({"protected": '["a", "b"]'}, BenchParams, "bench")
    assert isinstance(params, BenchParams)
    assert params.protected == ("a", "b")


def test_unknown_param_lists_the_valid_ones() -> None:
    with pytest.raises(ParamError) as info:
        parse_settings({"foo": "1"}, FlowParams, "flame_chase")
    assert str(info.value) == (
        "flame_chase has no param 'foo'; valid params are budget.cost, budget.disk, "
        "budget.duration, budget.graceful, budget.output_tokens, budget.turns, kill_grace, "
        "rest_seconds, resume_mode, sandbox, silence_timeout, turn_timeout"
    )


def test_unknown_budget_key_lists_the_five() -> None:
    with pytest.raises(ParamError, match=r"budget keys are budget\.duration, budget\.cost"):
        parse_settings({"budget.graceful.cost": "true"}, FlowParams, "flame_chase")


def test_out_of_range_param_names_the_range() -> None:
    with pytest.raises(ParamError) as info:
        parse_settings({"rest_seconds": "100"}, FlowParams, "flame_chase")
    assert str(info.value) == "param rest_seconds=100: must be <= 60 (range 0.05–60)"


def test_one_sided_range_names_both_bounds() -> None:
    with pytest.raises(ParamError) as info:
        parse_settings({"turn_timeout": "0"}, FlowParams, "flame_chase")
    assert str(info.value) == "param turn_timeout=0: must be > 0 (allowed: > 0 and <= 604800)"


def test_bad_choice_names_the_choices() -> None:
    with pytest.raises(ParamError, match="param resume_mode=later: must be 'auto' or 'fresh'"):
        parse_settings({"resume_mode": "later"}, FlowParams, "flame_chase")


def test_bad_budget_value_in_settings_names_the_key() -> None:
    with pytest.raises(ParamError, match=r"budget\.turns=many"):
        parse_settings({"budget.turns": "many"}, FlowParams, "flame_chase")


@settings(PROPERTY, max_examples=100)
@given(
    st.dictionaries(
        st.sampled_from([*BUDGET_KEYS, "rest_seconds", "resume_mode", "lanes", "protected", "x"]),
        st.text(max_size=12) | st.integers() | st.floats() | st.booleans(),
        max_size=4,
    )
)
def test_any_settings_parse_or_refuse_in_one_line(pairs: dict[str, object]) -> None:
    try:
        parse_settings(pairs, BenchParams, "bench")
    except ParamError as exc:
        _single_line(exc)


@PROPERTY
@given(st.lists(st.text(max_size=30), max_size=3))
def test_any_kv_text_splits_or_refuses_in_one_line(values: list[str]) -> None:
    try:
        pairs = split_kv(values)
    except ParamError as exc:
        _single_line(exc)
    else:
        assert len({k for k, _ in pairs}) == len(pairs)


@pytest.mark.parametrize(
    ("parse", "value"),
    [
        (budgets.parse_cost, "-5"),
        (budgets.parse_cost, "$-5"),
        (budgets.parse_count, "-5"),
        (budgets.parse_duration, "-90s"),
        (budgets.parse_tokens, " -5k"),
    ],
)
def test_a_negative_budget_is_said_to_be_negative(parse: Any, value: str) -> None:
    with pytest.raises(ParamError, match="a budget must not be negative; give ") as info:
        parse(value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "size"), [("1", 1), ("500M", 500 << 20), ("20G", 20 << 30), ("1.5t", 3 << 39)]
)
def test_disk_budget_takes_bytes_or_sizes(text: str, size: int) -> None:
    budget, _ = parse_settings({"budget.disk": text}, FlowParams, "flame_chase")
    assert budget == {"disk": size}


def test_disk_budget_refuses_what_is_not_a_size() -> None:
    with pytest.raises(ParamError, match=r"budget.disk=lots: expected bytes or a size"):
        parse_settings({"budget.disk": "lots"}, FlowParams, "flame_chase")
