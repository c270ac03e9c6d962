"""Property: no parser ever raises, whatever bytes or JSON shapes a CLI prints. A CLI may print
anything (a crash half-way through a line, a new event type, a field of the wrong type), and
a parser exception would crash the run instead of failing one turn."""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flamechase.agents import claude, codex, gemini, opencode
from flamechase.agents.acp import AcpTurn
from flamechase.agents.clisession import loads
from flamechase.agents.limits import find_usage_limit, is_transient, parse_reset
from flamechase.agents.usage import RunningTotals

# Few examples by default so the suite stays quick; FLAMECHASE_FUZZ_EXAMPLES=2000 for a soak.
EXAMPLES = int(os.environ.get("FLAMECHASE_FUZZ_EXAMPLES", "12"))
FAST = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# JSON values, biased toward the keys and values the parsers look for.
KEYS = st.sampled_from(
    [
        "type",
        "subtype",
        "result",
        "is_error",
        "message",
        "content",
        "text",
        "usage",
        "modelUsage",
        "total_cost_usd",
        "method",
        "params",
        "item",
        "turn",
        "status",
        "error",
        "tokenUsage",
        "total",
        "stats",
        "models",
        "tokens",
        "part",
        "cost",
        "sessionID",
        "session_id",
        "rate_limit_info",
        "origin",
        "request",
        "update",
        "sessionUpdate",
        "stopReason",
        "inputTokens",
        "input_tokens",
    ]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
    | st.sampled_from(
        [
            "result",
            "assistant",
            "system",
            "init",
            "control_request",
            "rate_limit_event",
            "rejected",
            "turn/completed",
            "item/completed",
            "thread/tokenUsage/updated",
            "error",
            "turn.completed",
            "turn.failed",
            "step_finish",
            "agentMessage",
            "failed",
            "completed",
            "success",
            "task-notification",
            "Weekly limit reached ∙ resets 5am",
            "You've hit your usage limit. Try again in 3 hours.",
            "API Error: 529 overloaded",
        ]
    )
)
JSON = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=8,
)
OBJECTS = st.dictionaries(KEYS, JSON, max_size=5)


def as_line(obj: Any) -> bytes:
    return json.dumps(obj, allow_nan=True).encode()


LINES = st.lists(st.binary(max_size=120) | OBJECTS.map(as_line), max_size=8)


@FAST
@given(LINES)
def test_claude_parser_never_raises(lines: list[bytes]) -> None:
    for verdict in claude.parse_stream(lines, "claude-sonnet-4-5"):
        assert verdict.status in ("finished", "failed", "limited")
        assert verdict.usage.cost_usd >= 0


@FAST
@given(st.lists(OBJECTS, max_size=6))
def test_claude_turn_feed_answers_any_control_request(objs: list[dict[str, Any]]) -> None:
    turn = claude.ClaudeTurn()
    for obj in [*objs, {"type": "control_request", "request": objs[0] if objs else None}]:
        reply = turn.feed(obj)
        if reply is not None:
            json.dumps(reply)  # always writable back to the CLI


@FAST
@given(LINES)
def test_codex_parser_never_raises(lines: list[bytes]) -> None:
    for verdict in codex.parse_stream(lines, "gpt-5"):
        assert verdict.usage.input_tokens >= 0


@FAST
@given(st.lists(OBJECTS, max_size=6))
def test_codex_notifications_of_any_shape_are_survived(params: list[dict[str, Any]]) -> None:
    turn = codex.CodexTurn(RunningTotals(), "gpt-5", want_json=True)
    methods = ["item/completed", "thread/tokenUsage/updated", "error", "turn/completed"]
    for i, p in enumerate(params):
        turn.feed({"method": methods[i % len(methods)], "params": p})
    turn.verdict()


@FAST
@given(LINES, st.sampled_from([0, 1, 53, None, -9]))
def test_gemini_parser_never_raises(lines: list[bytes], code: int | None) -> None:
    gemini.parse_stream(lines, "gemini-2.5-pro", exit_code=code)


@FAST
@given(LINES, st.sampled_from([0, 1, None]))
def test_opencode_parser_never_raises(lines: list[bytes], code: int | None) -> None:
    opencode.parse_stream(lines, "anthropic/claude-sonnet-4-5", exit_code=code)


@FAST
@given(st.lists(OBJECTS, max_size=5), OBJECTS)
def test_acp_turn_never_raises(updates: list[dict[str, Any]], response: dict[str, Any]) -> None:
    turn = AcpTurn(RunningTotals(), "x")
    for update in updates:
        turn.update(update)
    turn.respond(response)
    turn.verdict()


@FAST
@given(st.binary(max_size=300))
def test_loads_takes_any_bytes(data: bytes) -> None:
    result = loads(data)
    assert result is None or isinstance(result, dict)


@FAST
@given(st.text(max_size=300))
def test_limit_recognition_never_raises(text: str) -> None:
    find_usage_limit(text)
    is_transient(text)
    parse_reset(text)


@FAST
@given(
    st.sampled_from(["resets ", "try again at ", "try again in ", "regain access on "]),
    st.text(alphabet="0123456789:apmAPM ,-/()thsdayourmin", max_size=40),
)
def test_reset_times_of_any_digits_never_raise(prefix: str, rest: str) -> None:
    hit = find_usage_limit("usage limit reached. " + prefix + rest)
    assert hit is not None
    assert hit.resets_at.tzinfo is not None
