"""The session contract, the same for every CLI backend, through the Backend/Session API with
real processes (the fake CLIs): a turn finishes with the report written and usage counted; a
repair continues the same conversation; a usage limit is `limited` with a reset time; rate
limits are retried with back-off, a bounded number of times; errors, crashes, garbage, hangs,
overruns and cuts end as failed/finished/timeout/interrupted; the raw stream is kept gzip'd
(0600); the FLAMECHASE_* environment reaches the CLI; nothing is left running."""

from __future__ import annotations

import asyncio
import gzip
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flamechase import procs
from flamechase.agents.acp import AcpBackend
from flamechase.agents.backend import Backend, TurnRequest
from flamechase.agents.claude import ClaudeBackend
from flamechase.agents.codex import CodexBackend
from flamechase.agents.gemini import GeminiBackend
from flamechase.agents.opencode import OpencodeBackend
from tests.agents.helpers import NoSleep, Spawns, ask_once, backend, report_of, run

# (backend class, spec, fake name for FAKE_<NAME>_* variables)
CLIS: dict[str, tuple[type[Backend], str, str]] = {
    "claude": (ClaudeBackend, "claude/claude-sonnet-4-5:high", "claude"),
    "codex": (CodexBackend, "codex/gpt-5:high", "codex"),
    "gemini": (GeminiBackend, "gemini/gemini-2.5-pro", "gemini"),
    "opencode": (OpencodeBackend, "opencode/anthropic/claude-sonnet-4-5:high", "opencode"),
    "acp": (AcpBackend, "acp:fake-acp", "acp"),
}

pytestmark = pytest.mark.usefixtures("fake_bin")


@pytest.fixture(params=sorted(CLIS))
def cli(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def scenario(monkeypatch: pytest.MonkeyPatch, cli: str, value: str) -> None:
    monkeypatch.setenv(f"FAKE_{CLIS[cli][2].upper()}_SCENARIO", value)


def make(cli: str, sleep: NoSleep | None = None) -> Any:
    cls, text, _ = CLIS[cli]
    return backend(cls, text, sleep)


def test_a_turn_finishes_with_report_usage_and_transcript(
    cli: str, request_for: Callable[..., TurnRequest], spawns: Spawns
) -> None:
    request = request_for()
    [answer] = run(ask_once(make(cli), request, spawns))
    assert answer.status == "finished", answer.error
    assert answer.error is None
    assert report_of(request) == {"status": "progress", "summary": "fake turn"}
    assert answer.usage.input_tokens > 0
    assert answer.usage.cost_usd > 0
    assert answer.usage.self_reported is (cli == "acp")
    assert answer.transcript == request.io_dir / "transcript.jsonl.gz"
    assert stat.S_IMODE(answer.transcript.stat().st_mode) == 0o600
    assert len(gzip.decompress(answer.transcript.read_bytes()).splitlines()) >= 2
    assert request.prompt_path.read_text() == request.prompt


def test_the_spawn_hook_gets_group_and_token_and_nothing_is_left(
    cli: str, request_for: Callable[..., TurnRequest], spawns: Spawns
) -> None:
    run(ask_once(make(cli), request_for(), spawns, repairs=("again",)))
    assert spawns.calls
    for pgid, token in spawns.calls:
        assert pgid > 0 and len(token) == 32
        assert procs.live_members(pgid, token) == []


def test_the_cli_gets_the_turn_environment_and_cwd(
    cli: str,
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    cli_log: Callable[[str], list[dict[str, Any]]],
) -> None:
    request = request_for(env={"FLAMECHASE_INBOX": "/tmp/inbox.json"}, lane="lane-2", turn=7)
    run(ask_once(make(cli), request, spawns))
    [start] = [r for r in cli_log(CLIS[cli][2]) if "argv" in r]
    env = start["env"]
    assert env["FLAMECHASE_REPORT"] == str(request.report_path)
    assert env["FLAMECHASE_PROMPT"] == str(request.prompt_path)
    assert env["FLAMECHASE_USAGE"] == str(request.usage_path)
    assert env["FLAMECHASE_WORKSPACE"] == str(request.workspace)
    assert env["FLAMECHASE_RUN_ID"] == "run-test"
    assert env["FLAMECHASE_RUN_DIR"] == str(request.run_dir)
    assert env["FLAMECHASE_FLOW"] == "flame_chase"
    assert env["FLAMECHASE_ROLE"] == "first_chaser"
    assert env["FLAMECHASE_LANE"] == "lane-2"
    assert env["FLAMECHASE_TURN"] == "7"
    assert env["FLAMECHASE_ATTEMPT"] == "1"
    assert env["FLAMECHASE_INBOX"] == "/tmp/inbox.json"
    assert "FLAMECHASE_PROC_TOKEN" in env
    assert start["cwd"] == str(request.workspace)


def test_a_repair_continues_the_same_session(
    cli: str,
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scenario(monkeypatch, cli, "noreport,success")
    request = request_for()
    b = make(cli)

    async def go() -> tuple[list[Any], bool]:
        session = b.open(request, spawns)
        try:
            first = await session.ask(request.prompt)
            missing = not request.report_path.exists()
            second = await session.ask("Your report is missing; write it.", repair="missing")
            return [first, second, missing], session.continues
        finally:
            await session.close()

    (first, second, missing), continues = run(go())
    assert first.status == "finished" and missing
    assert second.status == "finished"
    assert report_of(request)["summary"] == "fake turn"
    assert continues is True


def test_a_stale_report_is_removed_before_each_ask(
    cli: str,
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scenario(monkeypatch, cli, "noreport")
    request = request_for()
    request.report_path.write_text('{"status": "stale"}')
    [answer] = run(ask_once(make(cli), request, spawns))
    assert answer.status == "finished"
    assert not request.report_path.exists()


def test_a_usage_limit_is_limited_with_a_reset_time(
    cli: str,
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    monkeypatch: pytest.MonkeyPatch,
    no_sleep: NoSleep,
) -> None:
    scenario(monkeypatch, cli, "limit")
    [answer] = run(ask_once(make(cli, no_sleep), request_for(), spawns))
    assert answer.status == "limited", answer.error
    assert answer.resets_at is not None and answer.resets_at.tzinfo is not None
    assert "limit" in (answer.error or "").lower()
    assert no_sleep.delays == []  # a limit is waited out by the engine, not retried here


def test_a_rate_limit_is_retried_after_a_back_off(
    cli: str,
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    monkeypatch: pytest.MonkeyPatch,
    no_sleep: NoSleep,
) -> None:
    scenario(monkeypatch, cli, "ratelimit,success")
    request = request_for()
    [answer] = run(ask_once(make(cli, no_sleep), request, spawns))
    assert answer.status == "finished", answer.error
    assert no_sleep.delays == [2.0]
    assert report_of(request)["status"] == "progress"


@pytest.mark.slow
def test_a_rate_limit_that_persists_fails_after_bounded_tries(
    cli: str,
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    monkeypatch: pytest.MonkeyPatch,
    no_sleep: NoSleep,
) -> None:
    scenario(monkeypatch, cli, "ratelimit")
    [answer] = run(ask_once(make(cli, no_sleep), request_for(), spawns))
    assert answer.status == "failed"
    assert no_sleep.delays == [2.0, 4.0, 8.0]
    assert "gave up after 4 tries" in (answer.error or "")


def test_an_api_error_fails_without_retry(
    cli: str,
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    monkeypatch: pytest.MonkeyPatch,
    no_sleep: NoSleep,
) -> None:
    scenario(monkeypatch, cli, "error")
    [answer] = run(ask_once(make(cli, no_sleep), request_for(), spawns))
    assert answer.status == "failed"
    assert answer.error and answer.error.strip()
    assert no_sleep.delays == []


def test_a_crash_mid_stream_fails_with_the_stderr_tail(
    cli: str,
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scenario(monkeypatch, cli, "crash")
    [answer] = run(ask_once(make(cli), request_for(), spawns))
    assert answer.status == "failed"
    assert answer.exit_code not in (None, 0)
    expected = {
        "claude": "segmentation fault",
        "codex": "panicked",
        "gemini": "heap out of memory",
        "opencode": "invalid memory address",
        "acp": "exited with code 9",
    }[cli]
    assert expected in (answer.error or "")


def test_a_cli_that_refuses_to_start_fails_with_its_message(
    cli: str,
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scenario(monkeypatch, cli, "exit1")
    [answer] = run(ask_once(make(cli), request_for(), spawns))
    assert answer.status == "failed"
    assert answer.exit_code == 1
    assert "fake" in (answer.error or "")


def test_garbage_lines_are_survived(
    cli: str,
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scenario(monkeypatch, cli, "garbage")
    [answer] = run(ask_once(make(cli), request_for(), spawns))
    assert answer.status == "finished", answer.error
    assert any(b"not JSON at all" in line for line in _transcript(answer.transcript))


def _transcript(path: Path | None) -> list[bytes]:
    assert path is not None
    return gzip.decompress(path.read_bytes()).splitlines()


def test_a_silent_cli_is_cut_as_a_timeout(
    cli: str,
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scenario(monkeypatch, cli, "hang")
    t0 = time.monotonic()
    [answer] = run(ask_once(make(cli), request_for(silence_timeout=0.2), spawns))
    assert answer.status == "timeout"
    assert "silence_timeout" in (answer.error or "")
    assert time.monotonic() - t0 < 60  # a hang is cut, whatever the load
    for pgid, token in spawns.calls:
        assert procs.live_members(pgid, token) == []


def test_a_turn_past_turn_timeout_is_cut(
    cli: str,
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scenario(monkeypatch, cli, "sleep:30")
    [answer] = run(ask_once(make(cli), request_for(turn_timeout=0.25, silence_timeout=60), spawns))
    assert answer.status == "timeout"
    assert "turn_timeout" in (answer.error or "")


def test_cut_interrupts_the_answer_under_way(
    cli: str,
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scenario(monkeypatch, cli, "hang")
    request = request_for()

    async def go() -> Any:
        session = make(cli).open(request, spawns)
        try:
            task = asyncio.ensure_future(session.ask(request.prompt))
            while not spawns.calls:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)
            await session.cut()
            answer = await asyncio.wait_for(task, 5)
            again = await session.ask("more")
            return answer, again
        finally:
            await session.close()

    answer, again = run(go())
    assert answer.status == "interrupted"
    assert again.status == "interrupted"  # a cut session starts nothing more
    assert len(spawns.calls) == 1
    for pgid, token in spawns.calls:
        assert procs.live_members(pgid, token) == []


def test_a_cli_gone_from_path_fails_the_ask_not_the_run(
    cli: str,
    request_for: Callable[..., TurnRequest],
    spawns: Spawns,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    b = make(cli)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    [answer] = run(ask_once(b, request_for(), spawns))
    assert answer.status == "failed"
    assert "could not start" in (answer.error or "")


def test_closing_twice_and_asking_after_close_are_harmless(
    cli: str, request_for: Callable[..., TurnRequest], spawns: Spawns
) -> None:
    request = request_for()

    async def go() -> Any:
        session = make(cli).open(request, spawns)
        await session.ask(request.prompt)
        await session.close()
        await session.close()
        return await session.ask("again")

    assert run(go()).status == "failed"
