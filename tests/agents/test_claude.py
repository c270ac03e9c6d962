"""claude: the argv and stdin framing flamechase uses, one process per session with a fresh
session id, per-ask usage from running totals, structured output with --json-schema,
permission prompts answered on stdin, `--resume` after a crash, and replays of recorded
streams driving the session to the right outcome."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from flamechase.agents.backend import TurnRequest
from flamechase.agents.claude import ClaudeBackend
from tests.agents.helpers import Spawns, ask_once, backend, report_of, run

pytestmark = pytest.mark.usefixtures("fake_bin")

Log = Callable[[str], list[dict[str, Any]]]


def claude(text: str = "claude/claude-sonnet-4-5:high") -> Any:
    return backend(ClaudeBackend, text)


def test_argv_is_print_mode_stream_json_with_a_fresh_session(
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    cli_log: Log,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("IS_SANDBOX", "1")
    run(ask_once(claude(), request_for(), spawns))
    [start] = [r for r in cli_log("claude") if "argv" in r]
    argv = start["argv"]
    mode = "bypassPermissions"
    sid = argv[argv.index("--session-id") + 1]
    uuid.UUID(sid)
    assert argv == [
        "--print",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--session-id",
        sid,
        "--permission-mode",
        mode,
        "--permission-prompt-tool",
        "stdio",
        "--model",
        "claude-sonnet-4-5",
        "--effort",
        "high",
    ]
    assert start["env"]["CLAUDE_CODE_DISABLE_BACKGROUND_TASKS"] == "1"


def test_as_root_without_is_sandbox_edits_are_accepted_and_prompts_allowed(
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    cli_log: Log,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # claude refuses bypassPermissions as root unless IS_SANDBOX is set.
    monkeypatch.delenv("IS_SANDBOX", raising=False)
    run(ask_once(claude(), request_for(), spawns))
    [start] = [r for r in cli_log("claude") if "argv" in r]
    mode = start["argv"][start["argv"].index("--permission-mode") + 1]
    assert mode == ("acceptEdits" if os.geteuid() == 0 else "bypassPermissions")


def test_no_effort_sends_no_effort_flag(
    request_for: Callable[..., TurnRequest], spawns: Spawns, cli_log: Log
) -> None:
    run(ask_once(claude("claude/opus:auto"), request_for(), spawns))
    [start] = [r for r in cli_log("claude") if "argv" in r]
    assert "--effort" not in start["argv"]
    assert start["argv"][start["argv"].index("--model") + 1] == "opus"


def test_each_session_gets_its_own_session_id(
    request_for: Callable[..., TurnRequest], spawns: Spawns, cli_log: Log
) -> None:
    b = claude()
    run(ask_once(b, request_for(), spawns))
    run(ask_once(b, request_for(), spawns))
    ids = [r["argv"][r["argv"].index("--session-id") + 1] for r in cli_log("claude") if "argv" in r]
    assert len(set(ids)) == 2


def test_the_prompt_is_one_user_line_and_repairs_reuse_the_process(
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    cli_log: Log,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_SCENARIO", "noreport,success")
    request = request_for()
    first, second = run(ask_once(claude(), request, spawns, repairs=("no report",)))
    stdin = [r["stdin"] for r in cli_log("claude") if "stdin" in r]
    assert stdin == [
        {
            "type": "user",
            "message": {"role": "user", "content": [{"type": "text", "text": request.prompt}]},
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": "Fix your report: no report"}],
            },
        },
    ]
    assert len(spawns.calls) == 1  # one process for the whole session
    # total_cost_usd and modelUsage are running totals: each ask is charged its own part.
    assert first.usage == second.usage
    assert first.usage.input_tokens == 100 and first.usage.output_tokens == 20
    assert first.usage.cost_usd == pytest.approx(0.0009)


def test_a_crashed_session_is_resumed_for_the_repair(
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    cli_log: Log,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_SCENARIO", "crash,success")
    request = request_for()
    first, second = run(ask_once(claude(), request, spawns, repairs=("crashed",)))
    assert first.status == "failed" and second.status == "finished"
    starts = [r["argv"] for r in cli_log("claude") if "argv" in r]
    sid = starts[0][starts[0].index("--session-id") + 1]
    assert starts[1][starts[1].index("--resume") + 1] == sid
    assert "--session-id" not in starts[1]
    assert second.usage.cost_usd == pytest.approx(0.0009)  # a new process counts from zero


def test_a_schema_asks_for_structured_output(
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    cli_log: Log,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_SCENARIO", "structured")
    schema = {"type": "object", "properties": {"status": {"type": "string"}}}
    request = request_for(result_schema=schema)
    [answer] = run(ask_once(claude(), request, spawns))
    [start] = [r for r in cli_log("claude") if "argv" in r]
    assert json.loads(start["argv"][start["argv"].index("--json-schema") + 1]) == schema
    assert answer.structured == {"status": "progress", "summary": "fake turn"}
    assert not request.report_path.exists()


def test_a_permission_prompt_is_allowed_on_stdin(
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    cli_log: Log,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_SCENARIO", "permission")
    request = request_for()
    [answer] = run(ask_once(claude(), request, spawns))
    assert answer.status == "finished", answer.error
    responses = [
        r["stdin"]
        for r in cli_log("claude")
        if r.get("stdin", {}).get("type") == "control_response"
    ]
    assert responses[0]["response"]["response"] == {
        "behavior": "allow",
        "updatedInput": {"command": "true"},
    }


def test_replaying_a_weekly_limit_pauses_the_lane(
    request_for: Callable[..., TurnRequest], spawns: Spawns, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_SCENARIO", "replay:claude-stream-json-2.0.x-weekly-limit.jsonl")
    [answer] = run(ask_once(claude(), request_for(), spawns))
    assert answer.status == "limited"
    assert answer.resets_at is not None
    assert answer.resets_at.astimezone().hour == 5
    assert answer.usage.cost_usd == pytest.approx(0.1474618)


@pytest.mark.parametrize(
    ("stream", "shares"),
    [
        # seven_day is the event's window (0.88); unifiedWindows gives the 5-hour one too.
        (
            "claude-stream-json-2.1.277-rate-limit-warning.jsonl",
            {"weekly": 0.88, "window_5h": 0.34},
        ),
        (
            "claude-stream-json-2.1.289-background-tasks-two-results.jsonl",
            {"weekly": 0.19, "window_5h": 0.06},
        ),
        ("claude-stream-json-2.1.220-partial-messages-sanitized.jsonl", {}),  # no utilization
    ],
)
def test_the_accounts_usage_shares_of_a_rate_limit_event_ride_with_the_answer(
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    monkeypatch: pytest.MonkeyPatch,
    stream: str,
    shares: dict[str, float],
) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_SCENARIO", f"replay:{stream}")
    [answer] = run(ask_once(claude(), request_for(), spawns))
    assert answer.usage.shares == shares
    assert answer.usage.shares_from == ("claude" if shares else "")


def test_replaying_a_real_session_counts_its_cost(
    request_for: Callable[..., TurnRequest], spawns: Spawns, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "FAKE_CLAUDE_SCENARIO", "replay:claude-stream-json-2.0.27-tooluse-session.jsonl"
    )
    [answer] = run(ask_once(claude(), request_for(), spawns))
    assert answer.status == "finished"
    assert answer.usage.cost_usd == pytest.approx(0.9644163)
    assert answer.usage.output_tokens == 14759


def test_replaying_an_api_error_fails_the_turn(
    request_for: Callable[..., TurnRequest], spawns: Spawns, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "FAKE_CLAUDE_SCENARIO", "replay:claude-stream-json-2.0.55-api-error-404-model.jsonl"
    )
    [answer] = run(ask_once(claude(), request_for(), spawns))
    assert answer.status == "failed"
    assert "not_found_error" in (answer.error or "")


def test_the_report_path_reaches_the_agent(
    request_for: Callable[..., TurnRequest], spawns: Spawns
) -> None:
    request = request_for()
    run(ask_once(claude(), request, spawns))
    assert report_of(request)["status"] == "progress"
