"""Usage-limit messages are recognised with their reset time (a time without a date is its next
occurrence, in the named zone or else local time); rate limits and overloads are transient;
ordinary errors are neither; the back-off policy can be shortened from the environment."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from flamechase.agents.limits import (
    DEFAULT_WAIT,
    RetryPolicy,
    find_usage_limit,
    from_epoch,
    is_transient,
    parse_reset,
)

# A fixed "now": Sunday 2026-11-29 14:00 UTC.
NOW = datetime(2026, 11, 29, 14, 0, tzinfo=UTC)


def at(text: str) -> datetime:
    hit = find_usage_limit(text, now=NOW)
    assert hit is not None, text
    assert hit.reset_known, text
    return hit.resets_at


def local_next(hour: int, minute: int) -> datetime:
    """The next hour:minute after NOW on this machine's local clock."""
    local_now = NOW.astimezone()
    candidate = local_now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    return candidate if candidate > local_now else candidate + timedelta(days=1)


def test_claude_weekly_limit_resets_at_next_local_5am() -> None:
    assert at("Weekly limit reached ∙ resets 5am") == local_next(5, 0)


def test_claude_five_hour_limit_resets_at_next_local_2am() -> None:
    assert at("5-hour limit reached ∙ resets 2am") == local_next(2, 0)


def test_claude_session_limit_in_a_named_zone() -> None:
    when = at("You've hit your session limit · resets 11:30am (Europe/Budapest)")
    budapest = ZoneInfo("Europe/Budapest")
    assert when == datetime(2026, 11, 30, 11, 30, tzinfo=budapest)  # 11:30 today has passed


def test_claude_limit_later_today_in_zone_is_today() -> None:
    when = at("You've hit your limit · resets 6:20pm (Europe/Berlin)")
    assert when == datetime(2026, 11, 29, 18, 20, tzinfo=ZoneInfo("Europe/Berlin"))


def test_claude_interactive_wording_with_reset_at() -> None:
    when = at("Claude usage limit reached. Your limit will reset at 5pm (Europe/Warsaw).")
    assert when == datetime(2026, 11, 29, 17, 0, tzinfo=ZoneInfo("Europe/Warsaw"))


def test_claude_legacy_pipe_epoch() -> None:
    assert at("Claude AI usage limit reached|1755806400") == datetime.fromtimestamp(1755806400, UTC)


def test_api_usage_limit_with_a_date_and_utc() -> None:
    text = (
        "You have reached your specified API usage limits. You will regain access on "
        "2026-04-01 at 00:00 UTC."
    )
    assert at(text) == datetime(2026, 4, 1, tzinfo=UTC)


def test_codex_try_again_at_a_clock_time() -> None:
    text = (
        "You've hit your usage limit. To get more access now, send a request to your admin "
        "or try again at 12:16 PM."
    )
    assert at(text) == local_next(12, 16)


def test_codex_try_again_in_a_duration() -> None:
    text = (
        "You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) "
        "or try again in 3 hours 2 minutes."
    )
    assert at(text) == NOW + timedelta(hours=3, minutes=2)
    assert at("You've hit your usage limit. Try again in 4 days 20 hours 9 minutes.") == (
        NOW + timedelta(days=4, hours=20, minutes=9)
    )


def test_codex_try_again_on_a_date_with_ordinal() -> None:
    text = (
        "You've hit your usage limit. Upgrade to Plus to continue using Codex "
        "(https://chatgpt.com/explore/plus), or try again at May 11th, 2026 1:36 PM."
    )
    assert at(text).astimezone().replace(tzinfo=None) == datetime(2026, 5, 11, 13, 36)


def test_usage_limit_json_body_with_resets_at() -> None:
    body = (
        '{"type":"error","error":{"type":"usage_limit_reached","message":"The usage limit '
        'has been reached","plan_type":"plus","resets_at":1790000000,"resets_in_seconds":60}}'
    )
    assert at(body) == datetime.fromtimestamp(1790000000, UTC)


def test_gemini_daily_quota_resets_at_pacific_midnight() -> None:
    text = (
        "Quota exceeded for quota metric 'Gemini 2.5 Pro Requests' and limit 'Gemini 2.5 "
        "Pro Requests per day per user per tier' of service 'cloudcode-pa.googleapis.com'"
    )
    hit = find_usage_limit(text, now=NOW)
    assert hit is not None
    pacific = hit.resets_at.astimezone(ZoneInfo("America/Los_Angeles"))
    assert (pacific.hour, pacific.minute) == (0, 0)
    assert NOW < hit.resets_at <= NOW + timedelta(days=1)


def test_limit_without_a_reset_waits_the_default() -> None:
    hit = find_usage_limit("Claude usage limit reached.", now=NOW)
    assert hit is not None
    assert not hit.reset_known
    assert hit.resets_at == NOW + DEFAULT_WAIT


@pytest.mark.parametrize(
    "text",
    [
        'API Error: 529 {"type":"error","error":{"type":"overloaded_error"}}',
        "exceeded retry limit, last status: 429 Too Many Requests, request id: 9c84b52c-SJC",
        '[API Error: got status: 429 Too Many Requests. {"status":"RESOURCE_EXHAUSTED"}]',
        "Server overloaded; retry later.",
        "API Error: 500 Internal server error",
        "unexpected status 503 Service Unavailable",
        "Rate limited, please slow down",
    ],
)
def test_rate_limits_and_overloads_are_transient(text: str) -> None:
    assert is_transient(text)
    assert find_usage_limit(text, now=NOW) is None


@pytest.mark.parametrize(
    "text",
    [
        "exceeded retry limit, last status: 401 Unauthorized, request id: 99cdbe04acfb0b34-AMS",
        'API Error: 404 {"type":"error","error":{"type":"not_found_error"}}',
        "Reconnecting... 1/5",
        "Maximum session turns exceeded",
        "prompt is too long: 250000 tokens > 200000 maximum (tried 500 times)",
        "",
    ],
)
def test_ordinary_errors_are_neither_limits_nor_transient(text: str) -> None:
    assert not is_transient(text)
    assert find_usage_limit(text, now=NOW) is None


def test_a_daily_quota_429_is_a_limit_not_a_retry() -> None:
    text = "code 429: Quota exceeded for quota metric 'Requests' and limit 'Requests per day'"
    assert find_usage_limit(text, now=NOW) is not None
    assert not is_transient(text)


def test_parse_reset_finds_nothing_in_prose() -> None:
    assert parse_reset("the tests pass now", now=NOW) is None


def test_from_epoch_takes_milliseconds_and_refuses_absurd_values() -> None:
    assert from_epoch(1755806400000) == datetime.fromtimestamp(1755806400, UTC)
    assert from_epoch(1e30) is None
    assert from_epoch(None) is None


def test_retry_policy_defaults_to_three_retries_2_4_8() -> None:
    assert RetryPolicy().delays == (2.0, 4.0, 8.0)


def test_retry_policy_delays_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLAMECHASE_RETRY_DELAYS", "0, 0.5")
    assert RetryPolicy.from_env().delays == (0.0, 0.5)
    monkeypatch.setenv("FLAMECHASE_RETRY_DELAYS", "soon")
    assert RetryPolicy.from_env().delays == (2.0, 4.0, 8.0)
