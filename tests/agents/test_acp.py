"""acp:COMMAND: any Agent Client Protocol agent over stdio (initialize, session/new,
session/prompt with session/update notifications), permission requests answered with the
agent's allow option, repairs in the same session, session/load after a crash, and spend that
is self-reported (usage_update cost as a running total, the prompt response's tokens)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from flamechase.agents.acp import AcpBackend, AcpTurn
from flamechase.agents.backend import TurnRequest
from flamechase.agents.usage import RunningTotals
from tests.agents.helpers import Spawns, ask_once, backend, run

pytestmark = pytest.mark.usefixtures("fake_bin")

Log = Callable[[str], list[dict[str, Any]]]


def acp() -> Any:
    return backend(AcpBackend, "acp:fake-acp")


def sent(cli_log: Log) -> list[dict[str, Any]]:
    return [r["stdin"] for r in cli_log("acp") if "stdin" in r]


def test_the_handshake_and_prompt_follow_acp_v1(
    request_for: Callable[..., TurnRequest], spawns: Spawns, cli_log: Log
) -> None:
    request = request_for()
    [answer] = run(ask_once(acp(), request, spawns))
    assert answer.status == "finished", answer.error
    messages = sent(cli_log)
    assert [m["method"] for m in messages] == ["initialize", "session/new", "session/prompt"]
    assert all(m["jsonrpc"] == "2.0" for m in messages)
    assert messages[0]["params"]["protocolVersion"] == 1
    assert messages[0]["params"]["clientCapabilities"] == {
        "fs": {"readTextFile": False, "writeTextFile": False},
        "terminal": False,
    }
    assert messages[1]["params"] == {"cwd": str(request.workspace), "mcpServers": []}
    assert messages[2]["params"]["prompt"] == [{"type": "text", "text": request.prompt}]
    assert answer.text == "Writing the report."


def test_spend_is_self_reported_and_counted_per_prompt(
    request_for: Callable[..., TurnRequest], spawns: Spawns, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_ACP_SCENARIO", "noreport,success")
    first, second = run(ask_once(acp(), request_for(), spawns, repairs=("missing",)))
    assert first.usage == second.usage  # usage_update cost is a running total
    assert first.usage.cost_usd == pytest.approx(0.01)
    assert first.usage.self_reported
    assert (first.usage.input_tokens, first.usage.cache_read_tokens) == (200, 1000)
    assert AcpBackend.self_reported


def test_a_repair_is_another_prompt_in_the_same_session(
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    cli_log: Log,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_ACP_SCENARIO", "noreport,success")
    run(ask_once(acp(), request_for(), spawns, repairs=("missing",)))
    prompts = [m for m in sent(cli_log) if m["method"] == "session/prompt"]
    assert prompts[0]["params"]["sessionId"] == prompts[1]["params"]["sessionId"]
    assert len(spawns.calls) == 1


def test_after_a_crash_the_session_is_loaded_again(
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    cli_log: Log,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_ACP_SCENARIO", "crash,success")
    first, second = run(ask_once(acp(), request_for(), spawns, repairs=("crashed",)))
    assert first.status == "failed" and second.status == "finished", second.error
    methods = [m.get("method") for m in sent(cli_log)]
    assert methods.count("session/new") == 1
    assert "session/load" in methods


def test_a_permission_request_picks_the_allow_option(
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    cli_log: Log,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_ACP_SCENARIO", "permission")
    [answer] = run(ask_once(acp(), request_for(), spawns))
    assert answer.status == "finished", answer.error
    [reply] = [m for m in sent(cli_log) if "result" in m]
    assert reply["result"] == {"outcome": {"outcome": "selected", "optionId": "yes"}}


def test_stop_reasons_decide_the_status() -> None:
    for reason, status in [
        ("end_turn", "finished"),
        ("max_tokens", "finished"),
        ("max_turn_requests", "finished"),
        ("cancelled", "interrupted"),
        ("refusal", "failed"),
        ("", "failed"),
    ]:
        turn = AcpTurn(RunningTotals(), "")
        turn.respond({"stopReason": reason})
        assert turn.verdict().status == status, reason


def test_a_cost_in_another_currency_is_not_counted_as_usd() -> None:
    turn = AcpTurn(RunningTotals(), "")
    turn.update({"sessionUpdate": "usage_update", "cost": {"amount": 5, "currency": "EUR"}})
    turn.respond({"stopReason": "end_turn"})
    assert turn.verdict().usage.cost_usd == 0.0


@pytest.mark.parametrize(
    ("offer", "method", "params"),
    [
        ("config", "session/set_config_option", {"configId": "model", "value": "large"}),
        ("models", "session/set_model", {"modelId": "large"}),
    ],
)
def test_the_model_given_with_m_is_selected_the_way_the_agent_offers(
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    cli_log: Log,
    monkeypatch: pytest.MonkeyPatch,
    offer: str,
    method: str,
    params: dict[str, str],
) -> None:
    monkeypatch.setenv("FAKE_ACP_MODELS", offer)
    agent = backend(AcpBackend, "acp:fake-acp -m large")
    [answer] = run(ask_once(agent, request_for(), spawns))
    assert answer.status == "finished", answer.error
    messages = sent(cli_log)
    assert [m["method"] for m in messages] == [
        "initialize",
        "session/new",
        method,
        "session/prompt",
    ]
    assert messages[2]["params"] == {"sessionId": messages[3]["params"]["sessionId"], **params}
    [start] = [r for r in cli_log("acp") if "argv" in r]
    assert "-m" not in start["argv"] and "large" not in start["argv"]


def test_a_model_the_agent_cannot_select_fails_the_turn_saying_so(
    request_for: Callable[..., TurnRequest], spawns: Spawns
) -> None:
    agent = backend(AcpBackend, "acp:fake-acp -m large")
    [answer] = run(ask_once(agent, request_for(), spawns))
    assert answer.status == "failed"
    assert answer.error is not None and "offers no model selection" in answer.error


def test_gemini_quota_meta_is_counted_and_priced_per_model() -> None:
    turn = AcpTurn(RunningTotals(), "")
    turn.respond(
        {
            "stopReason": "end_turn",
            "_meta": {
                "quota": {
                    "token_count": {"input_tokens": 9200, "output_tokens": 160},
                    "model_usage": [
                        {
                            "model": "gemini-2.5-pro",
                            "token_count": {"input_tokens": 9200, "output_tokens": 160},
                        }
                    ],
                }
            },
        }
    )
    usage = turn.verdict().usage
    assert (usage.input_tokens, usage.output_tokens) == (9200, 160)
    assert usage.cost_usd == pytest.approx((9200 * 1.25 + 160 * 10) / 1e6)
    assert usage.self_reported
