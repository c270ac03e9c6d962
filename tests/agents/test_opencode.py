"""opencode: one `opencode run --format json` per ask with the prompt on stdin, the effort as
`--variant`, a repair continuing `--session`, the cost opencode reports per step summed, and
recorded output replayed to the right outcome."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flamechase.agents import skills
from flamechase.agents.backend import TurnRequest
from flamechase.agents.opencode import OpencodeBackend
from flamechase.flow import Skill
from tests.agents.helpers import Spawns, ask_once, backend, run

pytestmark = pytest.mark.usefixtures("fake_bin")

Log = Callable[[str], list[dict[str, Any]]]


def opencode(text: str = "opencode/anthropic/claude-sonnet-4-5:high") -> Any:
    return backend(OpencodeBackend, text)


def test_argv_is_run_json_with_model_variant_and_prompt_on_stdin(
    request_for: Callable[..., TurnRequest], spawns: Spawns, cli_log: Log
) -> None:
    request = request_for()
    [answer] = run(ask_once(opencode(), request, spawns))
    assert answer.status == "finished", answer.error
    [start] = [r for r in cli_log("opencode") if "argv" in r]
    assert start["argv"] == [
        "run",
        "--format",
        "json",
        "--dangerously-skip-permissions",
        "--model",
        "anthropic/claude-sonnet-4-5",
        "--variant",
        "high",
    ]
    [stdin] = [r["stdin"] for r in cli_log("opencode") if "stdin" in r]
    assert stdin == request.prompt
    assert answer.text == "Done: fake turn."


def test_a_mounted_skill_reaches_opencode_as_its_inline_config(
    request_for: Callable[..., TurnRequest], spawns: Spawns, cli_log: Log, tmp_path: Path
) -> None:
    skill = Skill(name="lane-rules", description="How a lane works.", body="# Rules\n")
    mounted = skills.mount("opencode", skill, tmp_path / "turn", environ={})
    assert mounted is not None
    [answer] = run(ask_once(opencode(), request_for(skill=mounted), spawns))
    assert answer.status == "finished", answer.error
    [start] = [r for r in cli_log("opencode") if "argv" in r]
    config = json.loads(start["env"]["OPENCODE_CONFIG_CONTENT"])
    assert Path(config["instructions"][0]).read_text().startswith("# Skill: lane-rules")


def test_reported_step_costs_are_summed(
    request_for: Callable[..., TurnRequest], spawns: Spawns
) -> None:
    [answer] = run(ask_once(opencode(), request_for(), spawns))
    usage = answer.usage
    assert usage.cost_usd == pytest.approx(0.003)
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (1020, 50, 1000)


def test_a_repair_continues_the_session(
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    cli_log: Log,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_OPENCODE_SCENARIO", "noreport,success")
    first, second = run(ask_once(opencode(), request_for(), spawns, repairs=("missing",)))
    assert first.status == second.status == "finished"
    starts = [r["argv"] for r in cli_log("opencode") if "argv" in r]
    assert "--session" not in starts[0]
    assert starts[1][starts[1].index("--session") + 1].startswith("ses_")


def test_no_effort_sends_no_variant(
    request_for: Callable[..., TurnRequest], spawns: Spawns, cli_log: Log
) -> None:
    run(ask_once(opencode("opencode/openai/gpt-5"), request_for(), spawns))
    [start] = [r for r in cli_log("opencode") if "argv" in r]
    assert "--variant" not in start["argv"]


def test_replaying_a_recorded_run_counts_its_cost(
    request_for: Callable[..., TurnRequest], spawns: Spawns, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_OPENCODE_SCENARIO", "replay:opencode-run-json-tool-and-text.jsonl")
    [answer] = run(ask_once(opencode(), request_for(), spawns))
    assert answer.status == "finished"
    assert answer.usage.cost_usd == pytest.approx(0.001)
    assert answer.usage.cache_read_tokens == 21415
    assert answer.text == "```\nhello\n```"


def test_a_retryable_api_error_is_retried(
    request_for: Callable[..., TurnRequest], spawns: Spawns, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_OPENCODE_SCENARIO", "ratelimit,ratelimit,success")
    [answer] = run(ask_once(opencode(), request_for(), spawns))
    assert answer.status == "finished"
    assert len(spawns.calls) == 3
