"""gemini: one headless run per ask with stream-JSON out and the prompt on stdin; a repair
resumes the session named by `init`; usage priced per model; a daily quota pauses the lane
until midnight Pacific; recorded output replays to the right outcome."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from flamechase.agents import skills
from flamechase.agents.backend import TurnRequest
from flamechase.agents.gemini import GeminiBackend
from flamechase.flow import Skill
from tests.agents.helpers import Spawns, ask_once, backend, run

pytestmark = pytest.mark.usefixtures("fake_bin")

Log = Callable[[str], list[dict[str, Any]]]


def gemini(text: str = "gemini/gemini-2.5-pro") -> Any:
    return backend(GeminiBackend, text)


def test_argv_is_headless_stream_json_yolo_and_the_prompt_is_on_stdin(
    request_for: Callable[..., TurnRequest], spawns: Spawns, cli_log: Log
) -> None:
    request = request_for()
    [answer] = run(ask_once(gemini(), request, spawns))
    assert answer.status == "finished", answer.error
    [start] = [r for r in cli_log("gemini") if "argv" in r]
    assert start["argv"] == [
        "--output-format",
        "stream-json",
        "--approval-mode",
        "yolo",
        "--model",
        "gemini-2.5-pro",
        # Its file tools may write the turn's own files (outside the workspace).
        "--include-directories",
        str(request.io_dir),
    ]
    [stdin] = [r["stdin"] for r in cli_log("gemini") if "stdin" in r]
    assert stdin == request.prompt
    assert answer.text == "Writing the report."


def test_a_mounted_skill_adds_its_context_directory(
    request_for: Callable[..., TurnRequest], spawns: Spawns, cli_log: Log, tmp_path: Path
) -> None:
    skill = Skill(name="lane-rules", description="How a lane works.", body="# Rules\n")
    mounted = skills.mount("gemini", skill, tmp_path / "turn")
    [answer] = run(ask_once(gemini(), request_for(skill=mounted), spawns))
    assert answer.status == "finished", answer.error
    [start] = [r for r in cli_log("gemini") if "argv" in r]
    assert mounted is not None and start["argv"][-2:] == list(mounted.argv)


def test_usage_is_priced_per_model_without_cached_input(
    request_for: Callable[..., TurnRequest], spawns: Spawns
) -> None:
    [answer] = run(ask_once(gemini(), request_for(), spawns))
    usage = answer.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (200, 1000, 50)
    assert usage.cost_usd == pytest.approx((200 * 1.25 + 1000 * 0.125 + 50 * 10) / 1e6)


def test_a_repair_resumes_the_session_from_init(
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    cli_log: Log,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_GEMINI_SCENARIO", "noreport,success")
    first, second = run(ask_once(gemini(), request_for(), spawns, repairs=("missing",)))
    assert first.status == second.status == "finished"
    starts = [r["argv"] for r in cli_log("gemini") if "argv" in r]
    assert "--resume" not in starts[0]
    sid = starts[1][starts[1].index("--resume") + 1]
    assert len(sid) == 36
    assert len(spawns.calls) == 2


def test_a_large_prompt_goes_through_stdin(
    request_for: Callable[..., TurnRequest], spawns: Spawns, cli_log: Log
) -> None:
    prompt = "x" * 600_000  # far past a single argv string's limit
    [answer] = run(ask_once(gemini(), request_for(prompt=prompt), spawns))
    assert answer.status == "finished", answer.error
    [stdin] = [r["stdin"] for r in cli_log("gemini") if "stdin" in r]
    assert len(stdin) == 600_000


def test_a_daily_quota_pauses_until_pacific_midnight(
    request_for: Callable[..., TurnRequest], spawns: Spawns, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_GEMINI_SCENARIO", "limit")
    [answer] = run(ask_once(gemini(), request_for(), spawns))
    assert answer.status == "limited"
    assert answer.resets_at is not None
    pacific = answer.resets_at.astimezone(ZoneInfo("America/Los_Angeles"))
    assert (pacific.hour, pacific.minute) == (0, 0)


def test_replaying_the_json_output_counts_two_models(
    request_for: Callable[..., TurnRequest], spawns: Spawns, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The recorded single-object output is pretty-printed over many lines.
    monkeypatch.setenv("FAKE_GEMINI_SCENARIO", "replay:gemini-json-docs-example.json")
    [answer] = run(ask_once(gemini(), request_for(), spawns))
    assert answer.status == "finished"
    assert answer.text == "The capital of France is Paris."
    assert answer.usage.cost_usd == pytest.approx(0.011790775)


def test_replaying_output_without_a_result_fails(
    request_for: Callable[..., TurnRequest], spawns: Spawns, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_GEMINI_SCENARIO", "replay:gemini-stream-json-assistant-deltas.jsonl")
    [answer] = run(ask_once(gemini(), request_for(), spawns))
    assert answer.status == "failed"
    assert "ended before a result" in (answer.error or "")
