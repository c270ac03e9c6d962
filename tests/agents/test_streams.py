"""Every recorded stream in tests/agents/streams (real CLI output from public projects, see
/work/shared/reference/cli-streams/README.md) is read correctly by its CLI's parser: usage and
cost read, usage limits recognised as limits, errors as errors, successes as successes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from flamechase.agents import claude, codex, gemini, opencode
from flamechase.agents.clisession import Verdict
from flamechase.agents.usage import TokenCounts, cost_bound
from tests.agents.fakes import STREAMS_DIR


def lines(name: str) -> list[bytes]:
    data = (STREAMS_DIR / name).read_bytes()
    # The gemini formatter snapshot holds placeholders that are not JSON until substituted.
    data = data.replace(b'"<TIMESTAMP>"', b'"2026-01-01T00:00:00Z"').replace(b"<DURATION>", b"1")
    return data.splitlines()


def test_every_recorded_file_has_a_test() -> None:
    files = {p.name for p in STREAMS_DIR.iterdir() if p.is_file()}
    covered = set(CLAUDE) | set(CODEX) | set(GEMINI) | set(OPENCODE) | set(ELSEWHERE)
    assert files - covered - {"README.md"} == set()
    for name, test in ELSEWHERE.items():
        assert name in (Path(__file__).parent / test).read_text(), (name, test)


# Recorded files that are not one turn's stream, each held by its own test module.
ELSEWHERE = {"codex-app-server-account-rate-limits.jsonl": "test_codex.py"}


# name -> [(status, cost_usd, input, output, cache_read, cache_write), ...] per turn
CLAUDE: dict[str, list[tuple[str, float, int, int, int, int]]] = {
    # Line 1 is not valid JSON as pasted upstream (a missing comma): skipped, never fatal.
    "claude-json-1.0.44-max-turns-and-success.txt": [("finished", 0.421, 4, 350, 13389, 20136)],
    "claude-json-usage-limit-legacy.json": [("limited", 0.0, 0, 0, 0, 0)],
    "claude-stream-json-2.0.27-tooluse-session.jsonl": [
        ("finished", 0.9644163, 1527, 14759, 1794594, 78318)
    ],
    "claude-stream-json-2.0.55-api-error-404-model.jsonl": [("failed", 0.027108, 2237, 979, 0, 0)],
    "claude-stream-json-2.0.x-weekly-limit.jsonl": [
        ("limited", 0.1474618, 8067, 4517, 58446, 19624)
    ],
    "claude-stream-json-2.1.139-rate-limit-event.json": [],  # one "allowed" event, no turn
    "claude-stream-json-2.1.220-partial-messages-sanitized.jsonl": [("finished", 0.0, 0, 0, 0, 0)],
    "claude-stream-json-2.1.226-ask-user-question.jsonl": [
        ("finished", 0.0081955, 18, 238, 66750, 250)
    ],
    "claude-stream-json-2.1.226-permission-allow.jsonl": [
        ("finished", 0.009825, 18, 491, 66670, 548)
    ],
    "claude-stream-json-2.1.226-permission-deny.jsonl": [
        ("finished", 0.02206225, 18, 536, 60280, 6835)
    ],
    # An excerpt that ends after a subagent stopped on the session limit: a limit.
    "claude-stream-json-2.1.268-subagent-session-limit.jsonl": [("limited", 0.0, 0, 0, 0, 0)],
    "claude-stream-json-2.1.277-rate-limit-warning.jsonl": [
        ("finished", 0.0168754, 9, 102, 14704, 7443)
    ],
    # The second result answers a background task, not a prompt; the stream then ends.
    "claude-stream-json-2.1.289-background-tasks-two-results.jsonl": [
        ("finished", 0.0326113, 20, 479, 39003, 13148),
        ("failed", 0.0, 0, 0, 0, 0),
    ],
}


def check(verdicts: list[Verdict], expected: list[tuple[str, float, int, int, int, int]]) -> None:
    got = [
        (
            v.status,
            round(v.usage.cost_usd, 7),
            v.usage.input_tokens,
            v.usage.output_tokens,
            v.usage.cache_read_tokens,
            v.usage.cache_write_tokens,
        )
        for v in verdicts
    ]
    assert got == [(s, round(c, 7), i, o, r, w) for s, c, i, o, r, w in expected]


@pytest.mark.parametrize("name", sorted(CLAUDE))
def test_claude_recorded_stream_is_read_right(name: str) -> None:
    check(claude.parse_stream(lines(name), "claude-sonnet-4-5"), CLAUDE[name])


def test_claude_weekly_limit_resets_at_next_5am_local() -> None:
    [verdict] = claude.parse_stream(lines("claude-stream-json-2.0.x-weekly-limit.jsonl"))
    assert verdict.resets_at is not None
    local = verdict.resets_at.astimezone()
    assert (local.hour, local.minute) == (5, 0)
    assert verdict.resets_at > datetime.now(UTC)
    assert "Weekly limit reached" in (verdict.error or "")


def test_claude_legacy_limit_resets_at_its_epoch() -> None:
    [verdict] = claude.parse_stream(lines("claude-json-usage-limit-legacy.json"))
    assert verdict.resets_at == datetime.fromtimestamp(1755806400, UTC)


def test_claude_subagent_session_limit_names_budapest_time() -> None:
    [verdict] = claude.parse_stream(
        lines("claude-stream-json-2.1.268-subagent-session-limit.jsonl")
    )
    assert verdict.resets_at is not None
    assert verdict.resets_at.utcoffset() is not None
    assert str(verdict.resets_at.tzinfo) == "Europe/Budapest"
    assert (verdict.resets_at.hour, verdict.resets_at.minute) == (11, 30)


def test_claude_api_error_is_an_error_not_a_retry() -> None:
    [verdict] = claude.parse_stream(lines("claude-stream-json-2.0.55-api-error-404-model.jsonl"))
    assert verdict.retry is False
    assert "404" in (verdict.error or "")


def test_claude_answers_text_and_result() -> None:
    [verdict] = claude.parse_stream(lines("claude-stream-json-2.1.226-ask-user-question.jsonl"))
    assert verdict.text == "Red"


def test_claude_control_request_gets_a_control_response() -> None:
    turn = claude.ClaudeTurn()
    replies = []
    for raw in lines("claude-stream-json-2.1.226-permission-allow.jsonl"):
        obj = claude.loads(raw)
        if obj is not None:
            reply = turn.feed(obj)
            if reply is not None:
                replies.append(reply)
    assert len(replies) == 1
    response = replies[0]["response"]
    assert response["request_id"] == "0a796fa8-74c6-4c82-82a7-fb161e77a51b"
    assert response["response"]["behavior"] == "allow"
    assert response["response"]["updatedInput"]["content"] == "hi"


def test_claude_ask_user_question_is_denied_as_unattended() -> None:
    turn = claude.ClaudeTurn()
    replies = [
        turn.feed(obj)
        for raw in lines("claude-stream-json-2.1.226-ask-user-question.jsonl")
        if (obj := claude.loads(raw)) is not None
    ]
    [reply] = [r for r in replies if r is not None]
    assert reply["response"]["response"]["behavior"] == "deny"
    assert "No user" in reply["response"]["response"]["message"]


# codex reports no cost: tokens × gpt-5's bundled price (1.25 in, 10 out, 0.125 cached read),
# input without the cached tokens (codex counts them in its input).
CODEX: dict[str, list[tuple[str, float, int, int, int, int]]] = {
    "codex-exec-json-0.147.0-reasoning.jsonl": [("finished", 0.05557, 17792, 3333, 0, 0)],
    "codex-exec-json-0.150.1-mcp-tool-call.jsonl": [("finished", 0.0286225, 13898, 469, 52480, 0)],
    "codex-exec-json-0.150.1-resume.jsonl": [("finished", 0.00731, 3704, 28, 19200, 0)],
    "codex-exec-json-0.150.1-todo-file-change.jsonl": [
        ("finished", 0.04835, 19792, 937, 113920, 0)
    ],
    "codex-exec-json-0.159.3-basic-run.jsonl": [("finished", 0.0063845, 9, 295, 27386, 13925)],
    "codex-exec-json-2025-11-two-runs.jsonl": [
        ("finished", 0.06546, 13296, 2836, 163840, 0),
        ("finished", 0.04632775, 11083, 2113, 90752, 0),
    ],
    "codex-exec-json-2025-11-usage-limit.jsonl": [("limited", 0.0, 0, 0, 0, 0)],
    "codex-exec-json-2025-12-long-session.jsonl": [("finished", 0.057246, 18568, 2682, 57728, 0)],
    "codex-exec-json-command-pwsh.jsonl": [("finished", 0.0198885, 12730, 196, 16128, 0)],
    "codex-exec-json-model-error-turn-failed.jsonl": [("failed", 0.0, 0, 0, 0, 0)],
    "codex-exec-json-success-hello.jsonl": [("finished", 0.015474, 11880, 32, 2432, 0)],
    # 28 runs that each fail on 401 (the 28th is cut off mid-retry); checked below.
    "codex-exec-json-2025-11-reconnect-401.jsonl": [],
}


@pytest.mark.parametrize("name", sorted(n for n, v in CODEX.items() if v))
def test_codex_recorded_stream_is_read_right(name: str) -> None:
    check(codex.parse_stream(lines(name), "gpt-5"), CODEX[name])


def test_codex_usage_limit_resets_at_next_12_16_local() -> None:
    [verdict] = codex.parse_stream(lines("codex-exec-json-2025-11-usage-limit.jsonl"))
    assert verdict.resets_at is not None
    local = verdict.resets_at.astimezone()
    assert (local.hour, local.minute) == (12, 16)


def test_codex_401_retries_are_failures_not_limits() -> None:
    verdicts = codex.parse_stream(lines("codex-exec-json-2025-11-reconnect-401.jsonl"))
    assert len(verdicts) == 28
    assert {v.status for v in verdicts} == {"failed"}
    assert all(v.retry is False for v in verdicts)
    assert "401 Unauthorized" in (verdicts[0].error or "")


def test_codex_model_error_message_is_kept() -> None:
    [verdict] = codex.parse_stream(lines("codex-exec-json-model-error-turn-failed.jsonl"))
    assert "requires a newer version of Codex" in (verdict.error or "")


def test_codex_turn_text_is_the_last_agent_message() -> None:
    [verdict] = codex.parse_stream(lines("codex-exec-json-success-hello.jsonl"))
    assert verdict.text == "hello"


def test_codex_unknown_model_is_counted_at_the_highest_openai_rates() -> None:
    [verdict] = codex.parse_stream(lines("codex-exec-json-success-hello.jsonl"), "gpt-no-such")
    assert verdict.usage.output_tokens == 32
    tokens = TokenCounts(
        verdict.usage.input_tokens, verdict.usage.output_tokens, verdict.usage.cache_read_tokens
    )
    bound = cost_bound("gpt-no-such")
    assert bound is not None and bound.vendor == "openai"
    assert verdict.usage.cost_usd == pytest.approx(bound.price.cost(tokens))
    assert verdict.usage.cost_usd > 0


GEMINI: dict[str, list[tuple[str, float, int, int, int, int]]] = {
    # gemini-2.5-pro 1.25/10/0.125 and gemini-2.5-flash 0.3/2.5/0.03 per million; output is
    # candidates + thoughts, input is prompt - cached + tool.
    "gemini-json-0.6.1-what-is-2-plus-2.json": [("finished", 0.00913625, 7173, 17, 0, 0)],
    "gemini-json-docs-example.json": [("finished", 0.011790775, 12669, 214, 21263, 0)],
    "gemini-stream-json-assistant-deltas.jsonl": [("failed", 0.0, 0, 0, 0, 0)],  # no result
    "gemini-stream-json-formatter-snapshot.txt": [
        ("finished", 0.0, 0, 0, 0, 0),
        ("finished", 0.0, 0, 0, 0, 0),
        ("finished", 0.0, 0, 0, 0, 0),
    ],
}


@pytest.mark.parametrize("name", sorted(GEMINI))
def test_gemini_recorded_stream_is_read_right(name: str) -> None:
    check(gemini.parse_stream(lines(name), "gemini-2.5-pro"), GEMINI[name])


def test_gemini_deltas_are_joined() -> None:
    run = gemini.GeminiRun()
    for raw in lines("gemini-stream-json-assistant-deltas.jsonl"):
        run.feed_line(raw)
    assert run.text.startswith("` returns early")
    assert "skipped entirely. This means" in run.text


def test_gemini_max_turns_with_exit_53_is_a_failure() -> None:
    streams = b"\n".join(lines("gemini-stream-json-formatter-snapshot.txt")).split(b"\n\n")
    verdicts = [gemini.parse_stream(s.splitlines(), exit_code=53)[0] for s in streams]
    assert verdicts[1].status == "failed"
    assert "Maximum session turns exceeded" in (verdicts[1].error or "")


OPENCODE: dict[str, list[tuple[str, float, int, int, int, int]]] = {
    "opencode-run-json-step-events-pr2810.jsonl": [("finished", 0.0070147, 11087, 145, 0, 0)],
    "opencode-run-json-tool-and-text.jsonl": [("finished", 0.001, 22443, 118, 21415, 0)],
}


@pytest.mark.parametrize("name", sorted(OPENCODE))
def test_opencode_recorded_stream_is_read_right(name: str) -> None:
    check(opencode.parse_stream(lines(name), "anthropic/claude-sonnet-4-5"), OPENCODE[name])


def test_opencode_text_and_session_are_read() -> None:
    run = opencode.OpencodeRun()
    for raw in lines("opencode-run-json-tool-and-text.jsonl"):
        obj = opencode.loads(raw)
        if obj is not None:
            run.feed(obj)
    assert run.session_id == "ses_494719016ffe85dkDMj0FPRbHK"
    assert run.text == "```\nhello\n```"
    assert run.steps == 2


def test_streams_dir_is_a_copy_of_the_reference(tmp_path: Path) -> None:
    reference = Path("/work/shared/reference/cli-streams")
    if not reference.is_dir():
        pytest.skip("the shared reference folder is not here")
    for ref in reference.iterdir():
        if ref.name != "README.md":
            assert (STREAMS_DIR / ref.name).read_bytes() == ref.read_bytes(), ref.name
