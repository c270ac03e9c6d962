"""Prices: the bundled table is dated and well formed, a model is found under the names CLIs
report for it, a model the table does not list is counted at its vendor's highest listed rates
(an upper bound, announced in one line), FLAMECHASE_PRICES replaces the table and a bad file is
refused in one line; running totals become per-turn differences."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flamechase.agents.usage import (
    Price,
    RunningTotals,
    TokenCounts,
    cost_bound,
    load_prices,
    price_for,
    priced,
    unpriced_notice,
)
from flamechase.errors import BackendUnavailable


@pytest.fixture(autouse=True)
def bundled_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FLAMECHASE_PRICES", raising=False)


def test_bundled_table_is_dated_and_complete() -> None:
    table = load_prices()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", table.date)
    assert table.source == "bundled"
    for name in ("claude-opus-4-5", "claude-sonnet-4-5", "gpt-5", "gemini-2.5-pro"):
        assert name in table.models


def test_reference_example_turn_costs_what_hmz_showed() -> None:
    # 100 input, 20 output, 1000 cache-read tokens of claude-opus-4-5 were shown as $0.0015.
    tokens = TokenCounts(input=100, output=20, cache_read=1000)
    assert priced("claude-opus-4-5", tokens) == pytest.approx(0.0015)


@pytest.mark.parametrize(
    "reported",
    [
        "claude-sonnet-4-5-20250929",
        "anthropic/claude-sonnet-4-5",
        "claude-sonnet-4-5@20250929",
        "Claude-Sonnet-4-5",
        "claude-sonnet-4-5[1m]",
    ],
)
def test_a_model_is_found_under_the_names_clis_report(reported: str) -> None:
    assert price_for(reported) == price_for("claude-sonnet-4-5")


def test_unknown_and_empty_models_have_no_price_of_their_own() -> None:
    assert price_for("no-such-model") is None
    assert price_for("") is None
    assert priced("", TokenCounts(input=10)) is None
    assert cost_bound("") is None


MILLION = TokenCounts(input=1_000_000, output=1_000_000, cache_read=1_000_000)


def _highest(names: list[str]) -> float:
    """The most any of `names` would charge for MILLION, field by field."""
    prices = [price_for(n) for n in names]
    return sum(max(getattr(p, f) for p in prices if p) for f in ("input", "output", "cache_read"))


@pytest.mark.parametrize(
    ("model", "listed"),
    [
        ("gpt-5.6-sol", ["gpt-5.1", "gpt-5", "gpt-4.1", "o3", "o4-mini", "gpt-5-nano"]),
        ("o3-pro", ["gpt-5.1", "gpt-4.1", "o3"]),
        ("claude-opus-5", ["claude-opus-4-1", "claude-opus-4-5", "claude-sonnet-4-5"]),
        ("anthropic/claude-opus-5-20260101", ["claude-opus-4-1", "claude-haiku-4-5"]),
        ("gemini-4-ultra", ["gemini-3-pro-preview", "gemini-2.5-pro", "gemini-2.5-flash"]),
    ],
)
def test_an_unlisted_model_costs_its_vendors_highest_listed_rates(
    model: str, listed: list[str]
) -> None:
    cost = priced(model, MILLION)
    assert cost == pytest.approx(_highest(listed))
    # An upper bound: no listed model of that vendor costs more.
    assert all(cost >= (priced(n, MILLION) or 0.0) for n in listed)


def test_a_name_that_names_no_vendor_costs_the_highest_rates_listed() -> None:
    everything = sorted(load_prices().models)
    assert priced("sol-1", MILLION) == pytest.approx(_highest(everything))
    bound = cost_bound("sol-1")
    assert bound is not None and bound.vendor == ""


def test_a_listed_model_keeps_its_own_price() -> None:
    assert cost_bound("gpt-5") is None
    assert unpriced_notice("gpt-5") is None
    assert priced("gpt-5", MILLION) == pytest.approx(1.25 + 10.0 + 0.125)


def test_the_notice_says_what_an_unlisted_model_is_counted_at_in_one_line() -> None:
    notice = unpriced_notice("gpt-5.6-sol")
    assert notice is not None and "\n" not in notice
    date = load_prices().date
    assert notice == (
        "gpt-5.6-sol has no price; counting it at gpt-4.1/gpt-5.1 rates ($2/M tokens in, "
        f"$10/M out: the highest openai rates in the price table of {date}), an upper bound: "
        "set FLAMECHASE_PRICES to correct"
    )


def test_an_override_without_vendors_borrows_the_bundled_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = {"gpt-x": {"input": 1, "output": 4}, "claude-y": {"input": 3, "output": 30}}
    path = write(tmp_path, {"date": "2026-02-03", "models": models})
    monkeypatch.setenv("FLAMECHASE_PRICES", str(path))
    bound = cost_bound("gpt-9")
    assert bound is not None
    assert (bound.vendor, bound.models, bound.date) == ("openai", ("gpt-x",), "2026-02-03")
    assert bound.price == Price(1.0, 4.0)
    # A vendor the file lists nothing of: the highest rates the file lists at all.
    google = cost_bound("gemini-9")
    assert google is not None and google.vendor == "" and google.price == Price(3.0, 30.0)


def test_an_empty_table_bounds_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "FLAMECHASE_PRICES", str(write(tmp_path, {"date": "2026-01-01", "models": {}}))
    )
    assert cost_bound("gpt-9") is None
    assert priced("gpt-9", MILLION) is None


def test_dated_ids_do_not_collapse_into_other_models() -> None:
    assert price_for("claude-opus-4-1-20250805") == Price(15.0, 75.0, 1.5, 18.75)
    assert price_for("claude-opus-4-5-20251101") == Price(5.0, 25.0, 0.5, 6.25)


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_override_file_replaces_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(
        tmp_path, {"date": "2026-01-02", "models": {"my-model": {"input": 1, "output": 2}}}
    )
    monkeypatch.setenv("FLAMECHASE_PRICES", str(path))
    assert load_prices().date == "2026-01-02"
    assert price_for("my-model") == Price(1.0, 2.0, 0.0, 0.0)
    assert price_for("claude-opus-4-5") is None  # replaced, not merged
    assert priced("my-model", TokenCounts(input=1_000_000, output=500_000)) == pytest.approx(2.0)


def test_override_is_reread_when_the_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, {"date": "2026-01-02", "models": {"m": {"input": 1, "output": 2}}})
    monkeypatch.setenv("FLAMECHASE_PRICES", str(path))
    assert price_for("m") == Price(1.0, 2.0)
    write(tmp_path, {"date": "2026-01-03", "models": {"m": {"input": 3, "output": 4.5}}})
    assert price_for("m") == Price(3.0, 4.5)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("{not json", "not JSON"),
        ("[]", "top level is not an object"),
        ({"models": {}}, "'date' is missing"),
        ({"date": "yesterday", "models": {}}, "is not YYYY-MM-DD"),
        ({"date": "2026-01-01"}, "'models' is missing"),
        ({"date": "2026-01-01", "models": {"m": 3}}, "is not an object"),
        ({"date": "2026-01-01", "models": {"m": {"input": -1, "output": 1}}}, "price >= 0"),
        ({"date": "2026-01-01", "models": {"m": {"input": "1", "output": 1}}}, "price >= 0"),
        ({"date": "2026-01-01", "models": {"m": {"input": 1}}}, "at least 'input' and 'output'"),
        ({"date": "2026-01-01", "models": {}, "vendors": []}, "'vendors' is not an object"),
        ({"date": "2026-01-01", "models": {}, "vendors": {"v": "gpt"}}, "model-name starts"),
    ],
)
def test_a_bad_override_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: object, why: str
) -> None:
    monkeypatch.setenv("FLAMECHASE_PRICES", str(write(tmp_path, content)))
    with pytest.raises(BackendUnavailable) as err:
        load_prices()
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("FLAMECHASE_PRICES=")
    assert why in message
    assert '"date": "YYYY-MM-DD"' in message


def test_a_missing_override_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLAMECHASE_PRICES", str(tmp_path / "nope.json"))
    with pytest.raises(BackendUnavailable, match="no such file"):
        load_prices()
    # priced() never raises mid-run: no price instead.
    assert priced("gpt-5", TokenCounts(input=1)) is None


def test_running_totals_become_differences() -> None:
    totals = RunningTotals()
    assert totals.step("cost", 0.5) == 0.5
    assert totals.step("cost", 0.75) == 0.25
    assert totals.step("cost", 0.75) == 0.0
    assert totals.step_int("in", 100) == 100
    assert totals.step_int("in", 130) == 30


def test_a_shrinking_total_means_a_new_count() -> None:
    totals = RunningTotals()
    totals.step("cost", 2.0)
    assert totals.step("cost", 0.25) == 0.25
    totals.reset()
    assert totals.step("cost", 1.0) == 1.0


def test_nonsense_totals_count_as_nothing() -> None:
    totals = RunningTotals()
    assert totals.step("cost", float("nan")) == 0.0
    assert totals.step("cost", -3.0) == 0.0
