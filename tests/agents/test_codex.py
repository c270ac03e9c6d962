"""codex: `codex app-server` driven over JSON-RPC (initialize, initialized, thread/start with
approvalPolicy never, turn/start with model, effort and outputSchema), repairs as new turns on
the same thread, thread/resume after a crash, approvals accepted, per-turn usage from running
thread totals, and recorded `exec --json` streams replayed through the fake."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from flamechase.agents.backend import TurnRequest
from flamechase.agents.codex import CodexBackend
from flamechase.jail import JailSpec
from tests.agents.helpers import Spawns, ask_once, backend, run

pytestmark = pytest.mark.usefixtures("fake_bin")

Log = Callable[[str], list[dict[str, Any]]]


def codex(text: str = "codex/gpt-5:high") -> Any:
    return backend(CodexBackend, text)


def sent(cli_log: Log) -> list[dict[str, Any]]:
    return [r["stdin"] for r in cli_log("codex") if "stdin" in r]


def test_the_handshake_thread_and_turn_are_what_the_protocol_says(
    request_for: Callable[..., TurnRequest], spawns: Spawns, cli_log: Log
) -> None:
    request = request_for()
    [answer] = run(ask_once(codex(), request, spawns))
    assert answer.status == "finished", answer.error
    [start] = [r for r in cli_log("codex") if "argv" in r]
    assert start["argv"] == ["app-server"]
    messages = sent(cli_log)
    assert [m.get("method") for m in messages] == [
        "initialize",
        "initialized",
        "thread/start",
        "turn/start",
    ]
    assert all("jsonrpc" not in m for m in messages)  # codex omits the header on the wire
    assert messages[0]["params"]["clientInfo"]["name"] == "flamechase"
    assert "id" not in messages[1]
    assert messages[2]["params"] == {
        "cwd": str(request.workspace),
        "approvalPolicy": "never",
        "sandbox": "workspace-write",
        "model": "gpt-5",
    }
    turn = messages[3]["params"]
    # Unconfined by flamechase: codex's own sandbox, writing the workspace and the turn's files.
    assert turn["sandboxPolicy"] == {
        "type": "workspaceWrite",
        "writableRoots": [str(request.workspace), str(request.io_dir)],
        "networkAccess": True,
    }
    assert turn["input"] == [{"type": "text", "text": request.prompt}]
    assert (turn["model"], turn["effort"], turn["approvalPolicy"]) == ("gpt-5", "high", "never")
    assert "outputSchema" not in turn


def test_no_effort_sends_no_effort_field(
    request_for: Callable[..., TurnRequest], spawns: Spawns, cli_log: Log
) -> None:
    run(ask_once(codex("codex/gpt-5"), request_for(), spawns))
    assert "effort" not in sent(cli_log)[3]["params"]


def test_a_repair_is_a_new_turn_on_the_same_thread(
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    cli_log: Log,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_CODEX_SCENARIO", "noreport,success")
    first, second = run(ask_once(codex(), request_for(), spawns, repairs=("missing",)))
    turns = [m for m in sent(cli_log) if m.get("method") == "turn/start"]
    assert len(turns) == 2
    assert turns[0]["params"]["threadId"] == turns[1]["params"]["threadId"]
    assert len(spawns.calls) == 1
    # tokenUsage.total is a running total per thread: each turn counts its own tokens.
    assert first.usage == second.usage
    assert (first.usage.input_tokens, first.usage.cache_read_tokens) == (200, 800)
    assert first.usage.output_tokens == 50
    assert first.usage.cost_usd == pytest.approx((200 * 1.25 + 50 * 10 + 800 * 0.125) / 1e6)


def test_after_a_crash_the_thread_is_resumed_in_a_new_server(
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    cli_log: Log,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_CODEX_SCENARIO", "crash,success")
    first, second = run(ask_once(codex(), request_for(), spawns, repairs=("crashed",)))
    assert first.status == "failed" and second.status == "finished", second.error
    methods = [m.get("method") for m in sent(cli_log)]
    assert methods.count("initialize") == 2
    assert "thread/resume" in methods
    thread = next(m for m in sent(cli_log) if m.get("method") == "thread/resume")
    started = next(m for m in sent(cli_log) if m.get("method") == "turn/start")
    assert thread["params"]["threadId"] == started["params"]["threadId"]
    assert len(spawns.calls) == 2


def test_an_output_schema_gives_structured_output(
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    cli_log: Log,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_CODEX_SCENARIO", "structured")
    schema = {"type": "object", "properties": {"status": {"type": "string"}}}
    [answer] = run(ask_once(codex(), request_for(result_schema=schema), spawns))
    assert sent(cli_log)[3]["params"]["outputSchema"] == schema
    assert answer.structured == {"status": "progress", "summary": "fake turn"}


def test_a_plain_final_message_is_not_structured_output(
    request_for: Callable[..., TurnRequest], spawns: Spawns
) -> None:
    schema = {"type": "object"}
    [answer] = run(ask_once(codex(), request_for(result_schema=schema), spawns))
    assert answer.structured is None  # the report file decides
    assert answer.text == "Done: fake turn."


def test_a_confined_turn_runs_codex_with_its_own_sandbox_off(
    request_for: Callable[..., TurnRequest], spawns: Spawns, cli_log: Log, tmp_path: Any
) -> None:
    # flamechase's own Landlock wrapper confines the turn; codex's bubblewrap cannot start
    # inside it. The fake's log and state live under tmp_path, so that is the root granted.
    roots = (tmp_path,)
    jail = JailSpec(mode="landlock", place=tmp_path / "ws", tmp=tmp_path, grants=roots)
    [answer] = run(ask_once(codex(), request_for(jail=jail), spawns))
    assert answer.status == "finished", answer.error
    messages = sent(cli_log)
    assert messages[2]["params"]["sandbox"] == "danger-full-access"
    assert messages[3]["params"]["sandboxPolicy"] == {"type": "dangerFullAccess"}


def test_an_approval_request_is_accepted(
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    cli_log: Log,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_CODEX_SCENARIO", "permission")
    [answer] = run(ask_once(codex(), request_for(), spawns))
    assert answer.status == "finished", answer.error
    [reply] = [m for m in sent(cli_log) if "result" in m]
    assert reply == {"id": 1001, "result": {"decision": "accept"}}


def test_replaying_a_recorded_run_counts_its_tokens(
    request_for: Callable[..., TurnRequest], spawns: Spawns, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CODEX_SCENARIO", "replay:codex-exec-json-0.150.1-mcp-tool-call.jsonl")
    [answer] = run(ask_once(codex(), request_for(), spawns))
    assert answer.status == "finished"
    assert (answer.usage.input_tokens, answer.usage.cache_read_tokens) == (13898, 52480)
    assert answer.text.startswith("`health`: OK")


def test_the_accounts_usage_windows_ride_with_the_answer_by_their_length(
    request_for: Callable[..., TurnRequest], spawns: Spawns, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Recorded account/rateLimits/updated lines: the account's own limit at 0 %, another
    # limit id's 5-hour window at 97 % (one model's: not read), then the account's weekly
    # window at 93 % and its 5-hour window at 12 %.
    monkeypatch.setenv("FAKE_CODEX_SCENARIO", "limits:codex-app-server-account-rate-limits.jsonl")
    [answer] = run(ask_once(codex(), request_for(), spawns))
    assert answer.status == "finished", answer.error
    assert answer.usage.shares == {"window_5h": 0.12, "weekly": 0.93}
    assert answer.usage.shares_from == "codex"


def test_a_window_is_named_by_its_length_not_its_slot() -> None:
    from flamechase.agents.account import from_codex

    weekly_first = {
        "limitId": "codex",
        "primary": {"usedPercent": 27, "windowDurationMins": 10080},
        "secondary": {"usedPercent": 50, "windowDurationMins": 1440},  # a day: not judged
    }
    assert from_codex(weekly_first) == {"weekly": 0.27}


def test_replaying_the_recorded_usage_limit_pauses_the_lane(
    request_for: Callable[..., TurnRequest], spawns: Spawns, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CODEX_SCENARIO", "replay:codex-exec-json-2025-11-usage-limit.jsonl")
    [answer] = run(ask_once(codex(), request_for(), spawns))
    assert answer.status == "limited"
    assert answer.resets_at is not None
    local = answer.resets_at.astimezone()
    assert (local.hour, local.minute) == (12, 16)


def test_replaying_the_recorded_model_error_fails(
    request_for: Callable[..., TurnRequest], spawns: Spawns, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "FAKE_CODEX_SCENARIO", "replay:codex-exec-json-model-error-turn-failed.jsonl"
    )
    [answer] = run(ask_once(codex(), request_for(), spawns))
    assert answer.status == "failed"
    assert "invalid_request_error" in (answer.error or "")


def test_usage_limit_error_info_alone_is_a_limit() -> None:
    from flamechase.agents.codex import judge_error

    verdict = judge_error("The usage limit has been reached", json.dumps("usageLimitExceeded"))
    assert verdict.status == "limited"
    verdict = judge_error("Quota!", json.dumps("usageLimitExceeded"), limit_reset=1790000000)
    assert verdict.resets_at is not None and verdict.resets_at.timestamp() == 1790000000
    overloaded = judge_error("boom", json.dumps({"responseStreamFailed": {"httpStatusCode": 529}}))
    assert overloaded.status == "failed" and overloaded.retry
