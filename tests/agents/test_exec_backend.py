"""The exec contract: a program gets the prompt on stdin and in a file, the turn in its
environment, the workspace as its cwd; its exit status, stderr tail and optional usage file
become the Answer; silence, overrun, a stop or a cancellation cut it; and when an ask returns,
nothing the program started is still running.

Every test runs real scripts written into tmp_path.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypeVar

import pytest

from flamechase import procs
from flamechase.agents import exec_backend
from flamechase.agents.backend import Answer, TurnRequest, Usage
from flamechase.agents.exec_backend import MAX_ERROR, ExecBackend, ExecSession, read_usage
from flamechase.errors import BackendUnavailable
from flamechase.reports import parse_report

T = TypeVar("T")


def run(coro: Awaitable[T]) -> T:
    async def main() -> T:
        return await coro

    return asyncio.run(main())


def script(tmp_path: Path, body: str, *, python: bool = False, name: str = "agent") -> Path:
    path = tmp_path / name
    shebang = f"#!{sys.executable}" if python else "#!/bin/sh"
    path.write_text(f"{shebang}\n{body}")
    path.chmod(0o755)
    return path


def spec_for(path: Path) -> Any:
    return SimpleNamespace(text=f"exec:{path}", cli="exec", path=str(path))


@pytest.fixture
def request_for(tmp_path: Path) -> Callable[..., TurnRequest]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    run_dir = tmp_path / "run"

    def make(**overrides: Any) -> TurnRequest:
        fields: dict[str, Any] = {
            "run_id": "r-123",
            "run_dir": run_dir,
            "flow": "flame_chase",
            "role": "worker",
            "lane": "lane-2",
            "turn": 3,
            "attempt": 1,
            "workspace": workspace,
            "io_dir": run_dir / "turns" / "lane-2-3",
            "prompt": "do the thing",
            "turn_timeout": 30.0,
            "silence_timeout": 30.0,
        }
        fields.update(overrides)
        return TurnRequest(**fields)

    return make


class Spawns:
    """An on_spawn hook that records (pgid, token) pairs."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, str]] = []
        self.started = asyncio.Event()

    def __call__(self, pgid: int, token: str) -> None:
        self.seen.append((pgid, token))
        self.started.set()

    def leftovers(self) -> list[int]:
        return [pid for pgid, token in self.seen for pid in procs.live_members(pgid, token)]


def session(agent: Path, request: TurnRequest, spawns: Spawns | None = None) -> ExecSession:
    backend = ExecBackend(spec_for(agent), kill_grace=0.3)
    opened = backend.open(request, spawns if spawns is not None else Spawns())
    assert isinstance(opened, ExecSession)
    return opened


def ask(agent: Path, request: TurnRequest, spawns: Spawns | None = None, **kwargs: Any) -> Answer:
    return run(session(agent, request, spawns).ask(request.prompt, **kwargs))


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


async def until_file(path: Path, timeout: float = 3.0) -> None:
    """Wait until `path` holds a complete line."""
    end = time.monotonic() + timeout
    while not (path.exists() and path.read_text().endswith("\n")):
        assert time.monotonic() < end, f"{path} never appeared"
        await asyncio.sleep(0.01)


# ---- the backend ---------------------------------------------------------------------------


def test_backend_is_self_reported_and_sessions_do_not_continue(tmp_path: Path) -> None:
    agent = script(tmp_path, "exit 0\n")
    backend = ExecBackend(spec_for(agent))
    backend.check()
    assert backend.self_reported is True
    assert ExecSession.continues is False


def test_registry_builds_an_exec_backend_from_a_spec(tmp_path: Path) -> None:
    from flamechase.agents.registry import backend_for
    from flamechase.agents.spec import parse_spec

    agent = script(tmp_path, "exit 0\n")
    backend = backend_for(parse_spec(f"exec:{agent}"))
    assert isinstance(backend, ExecBackend)
    assert backend.path == agent


@pytest.mark.parametrize("problem", ["missing", "not-executable", "directory"])
def test_check_refuses_a_path_that_cannot_run(tmp_path: Path, problem: str) -> None:
    path = tmp_path / "agent"
    if problem == "not-executable":
        path.write_text("#!/bin/sh\n")
        path.chmod(0o644)
    elif problem == "directory":
        path.mkdir()
    with pytest.raises(BackendUnavailable, match=str(path)):
        ExecBackend(spec_for(path)).check()


def test_program_that_cannot_start_is_a_failed_answer(
    tmp_path: Path, request_for: Callable[..., TurnRequest]
) -> None:
    agent = tmp_path / "agent"
    agent.write_text("#!/bin/sh\n")
    agent.chmod(0o644)
    answer = ask(agent, request_for())
    assert answer.status == "failed"
    assert answer.error is not None
    assert answer.error.startswith(f"could not start {agent}: Permission denied")


# ---- what the program receives -------------------------------------------------------------


def test_prompt_arrives_on_stdin_and_in_the_prompt_file(
    tmp_path: Path, request_for: Callable[..., TurnRequest]
) -> None:
    agent = script(tmp_path, 'cat > stdin.txt\ncp "$FLAMECHASE_PROMPT" file.txt\n')
    request = request_for(prompt="fix the bug\nin foo.py\n")
    answer = ask(agent, request)
    assert answer.status == "finished"
    assert (request.workspace / "stdin.txt").read_text() == "fix the bug\nin foo.py\n"
    assert (request.workspace / "file.txt").read_text() == "fix the bug\nin foo.py\n"
    assert stat.S_IMODE(request.prompt_path.stat().st_mode) == 0o600


def test_turn_environment_is_set(
    tmp_path: Path, request_for: Callable[..., TurnRequest], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CALLER_VAR", "kept")
    monkeypatch.setenv("FLAMECHASE_REPAIR", "an outer turn's repair reason")
    agent = script(
        tmp_path,
        "import json, os\njson.dump(dict(os.environ), open('env.json', 'w'))\n",
        python=True,
    )
    request = request_for(lane="", env={"FLAMECHASE_INBOX": "/x/inbox.json"})
    assert ask(agent, request).status == "finished"
    env = json.loads((request.workspace / "env.json").read_text())
    assert env["CALLER_VAR"] == "kept"
    assert "FLAMECHASE_REPAIR" not in env
    expected = {
        "FLAMECHASE_RUN_ID": "r-123",
        "FLAMECHASE_RUN_DIR": str(request.run_dir),
        "FLAMECHASE_FLOW": "flame_chase",
        "FLAMECHASE_ROLE": "worker",
        "FLAMECHASE_LANE": "",
        "FLAMECHASE_TURN": "3",
        "FLAMECHASE_ATTEMPT": "1",
        "FLAMECHASE_WORKSPACE": str(request.workspace),
        "FLAMECHASE_PROMPT": str(request.prompt_path),
        "FLAMECHASE_REPORT": str(request.report_path),
        "FLAMECHASE_USAGE": str(request.usage_path),
        "FLAMECHASE_INBOX": "/x/inbox.json",
    }
    assert {k: env.get(k) for k in expected} == expected
    assert len(env[procs.TOKEN_VAR]) == 32


def test_cwd_is_the_workspace(tmp_path: Path, request_for: Callable[..., TurnRequest]) -> None:
    agent = script(tmp_path, 'pwd -P > "$FLAMECHASE_RUN_DIR/cwd.txt"\n')
    request = request_for()
    request.run_dir.mkdir()
    assert ask(agent, request).status == "finished"
    assert (request.run_dir / "cwd.txt").read_text().strip() == str(request.workspace.resolve())


def test_on_spawn_gets_the_group_and_token_of_the_program(
    tmp_path: Path, request_for: Callable[..., TurnRequest]
) -> None:
    agent = script(tmp_path, 'echo "$$ $FLAMECHASE_PROC_TOKEN" > me.txt\n')
    request = request_for()
    spawns = Spawns()
    ask(agent, request, spawns)
    pid, token = (request.workspace / "me.txt").read_text().split()
    assert spawns.seen == [(int(pid), token)]


# ---- how it ends ---------------------------------------------------------------------------


def test_exit_zero_is_finished(tmp_path: Path, request_for: Callable[..., TurnRequest]) -> None:
    agent = script(tmp_path, 'echo \'{"status": "progress"}\' > "$FLAMECHASE_REPORT"\n')
    request = request_for()
    answer = ask(agent, request)
    assert answer == Answer(status="finished", exit_code=0, usage=Usage(self_reported=True))
    assert request.report_path.exists()


def test_nonzero_exit_is_failed_with_the_stderr_tail(
    tmp_path: Path, request_for: Callable[..., TurnRequest]
) -> None:
    agent = script(
        tmp_path, "echo progress\necho 'warming up' >&2\necho 'boom: no key' >&2\nexit 3\n"
    )
    answer = ask(agent, request_for())
    assert answer.status == "failed"
    assert answer.exit_code == 3
    assert answer.error == "exited with code 3: warming up\nboom: no key"


def test_long_stderr_is_clipped_to_2kb_keeping_the_end(
    tmp_path: Path, request_for: Callable[..., TurnRequest]
) -> None:
    agent = script(
        tmp_path,
        "import sys\nfor i in range(2000):\n    print(f'trace line {i}', file=sys.stderr)\n"
        "print('Error: the real reason', file=sys.stderr)\nsys.exit(1)\n",
        python=True,
    )
    answer = ask(agent, request_for())
    assert answer.error is not None
    assert len(answer.error.encode()) <= MAX_ERROR
    assert answer.error.startswith("exited with code 1: …trace line ")
    assert answer.error.endswith("trace line 1999\nError: the real reason")


def test_death_by_signal_is_named(tmp_path: Path, request_for: Callable[..., TurnRequest]) -> None:
    agent = script(tmp_path, "echo 'segfaulting' >&2\nkill -SEGV $$\n")
    answer = ask(agent, request_for())
    assert answer.status == "failed"
    assert answer.error == "killed by SIGSEGV: segfaulting"


def test_silence_cuts_the_turn(tmp_path: Path, request_for: Callable[..., TurnRequest]) -> None:
    agent = script(tmp_path, "echo started\nsleep 300\n")
    spawns = Spawns()
    t0 = time.monotonic()
    answer = ask(agent, request_for(silence_timeout=0.5), spawns)
    assert time.monotonic() - t0 < 60  # cut, not waited for (bounds are loose: load-proof)
    assert answer.status == "timeout"
    assert answer.error == "turn cut: no output for 0.5s (silence_timeout)"
    assert spawns.leftovers() == []


def test_turn_timeout_cuts_a_chatty_turn(
    tmp_path: Path, request_for: Callable[..., TurnRequest]
) -> None:
    agent = script(tmp_path, "while :; do echo still going; sleep 0.05; done\n")
    spawns = Spawns()
    t0 = time.monotonic()
    answer = ask(agent, request_for(turn_timeout=0.6, silence_timeout=0.3), spawns)
    assert time.monotonic() - t0 < 60  # the loop never ends by itself
    assert answer.status == "timeout"
    assert answer.error == "turn cut: ran past turn_timeout 0.6s"
    assert spawns.leftovers() == []


def test_stderr_output_keeps_a_turn_alive_past_the_silence_window(
    tmp_path: Path, request_for: Callable[..., TurnRequest]
) -> None:
    agent = script(tmp_path, "for i in 1 2 3 4 5 6 7 8; do echo 'thinking' >&2; sleep 0.15; done\n")
    answer = ask(agent, request_for(silence_timeout=0.5))
    assert answer.status == "finished"


def test_200mb_of_stdout_neither_grows_memory_nor_stops_the_turn(
    tmp_path: Path, request_for: Callable[..., TurnRequest]
) -> None:
    agent = script(tmp_path, "yes 'a line of agent chatter' | head -c 200000000\nexit 0\n")

    async def go() -> tuple[Answer, int]:
        base = peak = rss_kb()
        task = asyncio.ensure_future(session(agent, request_for()).ask("go"))
        while not task.done():
            peak = max(peak, rss_kb())
            await asyncio.sleep(0.01)
        return await task, max(peak, rss_kb()) - base

    answer, growth_kb = run(go())
    assert answer.status == "finished"
    assert growth_kb < 50 * 1024


def test_background_children_and_daemons_end_with_the_turn(
    tmp_path: Path, request_for: Callable[..., TurnRequest]
) -> None:
    agent = script(
        tmp_path,
        "setsid sleep 300 &\necho $! > daemon.pid\n"
        "sleep 300 &\necho $! > child.pid\n"
        "sleep 0.2\nexit 0\n",
    )
    request = request_for()
    spawns = Spawns()
    t0 = time.monotonic()
    answer = ask(agent, request, spawns)
    assert time.monotonic() - t0 < 60  # the sleeps (300 s) were ended, not waited for
    assert answer.status == "finished"
    assert spawns.leftovers() == []
    for name in ("daemon.pid", "child.pid"):
        assert not alive(int((request.workspace / name).read_text()))


def test_leftover_that_ignores_sigterm_is_killed_within_grace(
    tmp_path: Path, request_for: Callable[..., TurnRequest]
) -> None:
    agent = script(tmp_path, "(trap '' TERM; exec sleep 300) &\nsleep 0.1\nexit 0\n")
    spawns = Spawns()
    t0 = time.monotonic()
    answer = ask(agent, request_for(), spawns)
    took = time.monotonic() - t0
    assert answer.status == "finished"
    assert 0.3 <= took < 60  # the grace (0.3 s) was waited, then SIGKILL (not the 300 s)
    assert spawns.leftovers() == []


def test_cut_interrupts_the_pending_ask_and_later_asks(
    tmp_path: Path, request_for: Callable[..., TurnRequest]
) -> None:
    agent = script(tmp_path, "echo yes > started\nsleep 300\n")
    request = request_for()
    spawns = Spawns()

    async def go() -> tuple[Answer, Answer]:
        turn = session(agent, request, spawns)
        pending = asyncio.ensure_future(turn.ask("go"))
        await until_file(request.workspace / "started")
        await turn.cut()
        first = await asyncio.wait_for(pending, timeout=2)
        return first, await turn.ask("again")

    first, again = run(go())
    assert first.status == "interrupted"
    assert first.error == "turn cut by a stop"
    assert again.status == "interrupted"
    assert len(spawns.seen) == 1
    assert spawns.leftovers() == []


def test_cancelling_an_ask_kills_the_program(
    tmp_path: Path, request_for: Callable[..., TurnRequest]
) -> None:
    # (Cancelling while the program is still being spawned is covered in test_procs.)
    agent = script(tmp_path, "sleep 300 &\necho $! > child.pid\nsleep 300\n")
    request = request_for()
    spawns = Spawns()

    async def go() -> None:
        pending = asyncio.ensure_future(session(agent, request, spawns).ask("go"))
        await asyncio.wait_for(spawns.started.wait(), timeout=3)
        await until_file(request.workspace / "child.pid")
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending

    run(go())
    assert spawns.leftovers() == []
    assert not alive(int((request.workspace / "child.pid").read_text()))


# ---- repair --------------------------------------------------------------------------------


def test_repair_runs_the_program_again_with_the_reason_and_no_stale_report(
    tmp_path: Path, request_for: Callable[..., TurnRequest]
) -> None:
    agent = script(
        tmp_path,
        'if [ -z "${FLAMECHASE_REPAIR+set}" ]; then\n'
        '  echo "not json" > "$FLAMECHASE_REPORT"\n'
        "  exit 0\n"
        "fi\n"
        'if [ -e "$FLAMECHASE_REPORT" ]; then echo stale > repair.txt; exit 1; fi\n'
        'printf "%s|" "$FLAMECHASE_REPAIR" > repair.txt\n'
        "cat >> repair.txt\n"
        'echo \'{"status": "progress"}\' > "$FLAMECHASE_REPORT"\n',
    )
    request = request_for()

    async def go() -> tuple[Answer, Answer]:
        turn = session(agent, request)
        first = await turn.ask("do it")
        second = await turn.ask("your report was not JSON; write it again", repair="not JSON")
        return first, second

    first, second = run(go())
    assert (first.status, second.status) == ("finished", "finished")
    assert (request.workspace / "repair.txt").read_text() == (
        "not JSON|your report was not JSON; write it again"
    )
    assert request.report_path.read_text() == '{"status": "progress"}\n'


def test_stale_report_and_usage_are_removed_before_the_program_runs(
    tmp_path: Path, request_for: Callable[..., TurnRequest]
) -> None:
    request = request_for()
    request.io_dir.mkdir(parents=True)
    request.report_path.write_text('{"status": "deliverable_ready"}')
    request.usage_path.write_text('{"cost_usd": 9.5}')
    agent = script(tmp_path, "exit 0\n")
    answer = ask(agent, request)
    assert answer.usage == Usage(self_reported=True)
    assert not request.report_path.exists()


# ---- usage ---------------------------------------------------------------------------------


def test_usage_file_is_read_as_self_reported_spend(
    tmp_path: Path, request_for: Callable[..., TurnRequest]
) -> None:
    agent = script(
        tmp_path,
        'echo \'{"cost_usd": 0.25, "input_tokens": 1200, "output_tokens": 300,'
        ' "cache_read_tokens": 50, "cache_write_tokens": 7}\' > "$FLAMECHASE_USAGE"\n',
    )
    answer = ask(agent, request_for())
    assert answer.usage == Usage(
        cost_usd=0.25,
        input_tokens=1200,
        output_tokens=300,
        cache_read_tokens=50,
        cache_write_tokens=7,
        self_reported=True,
    )
    assert answer.text == ""


def test_usage_is_counted_even_when_the_program_fails(
    tmp_path: Path, request_for: Callable[..., TurnRequest]
) -> None:
    agent = script(tmp_path, 'echo \'{"cost_usd": 1.5}\' > "$FLAMECHASE_USAGE"\nexit 2\n')
    answer = ask(agent, request_for())
    assert answer.status == "failed"
    assert answer.usage == Usage(cost_usd=1.5, self_reported=True)


def test_partial_usage_file_fills_the_rest_with_zero(tmp_path: Path) -> None:
    path = tmp_path / "usage.json"
    path.write_text('{"output_tokens": 12.0, "note": "extra keys are fine"}')
    assert read_usage(path) == (Usage(output_tokens=12, self_reported=True), None)


def test_an_agent_may_report_its_accounts_usage_shares(tmp_path: Path) -> None:
    path = tmp_path / "usage.json"
    path.write_text('{"cost_usd": 0.5, "account": {"weekly": 0.95, "window_5h": 0.2}}')
    usage, note = read_usage(path)
    assert note is None and usage.cost_usd == 0.5
    assert (usage.shares, usage.shares_from) == ({"weekly": 0.95, "window_5h": 0.2}, "exec")


def test_missing_usage_file_is_zero_without_a_note(tmp_path: Path) -> None:
    assert read_usage(tmp_path / "usage.json") == (Usage(self_reported=True), None)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("not json at all", "not JSON"),
        (b"\xff\xfe{}", "not JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"cost_usd": -1}', "cost_usd must be a non-negative"),
        ('{"cost_usd": NaN}', "cost_usd must be a non-negative finite"),
        ('{"cost_usd": Infinity}', "cost_usd must be a non-negative finite"),
        ('{"cost_usd": "0.5"}', "cost_usd must be a number"),
        ('{"input_tokens": true}', "input_tokens must be a number"),
        ('{"input_tokens": 10.5}', "input_tokens must be a whole number"),
        ('{"output_tokens": 1e30}', "output_tokens is implausibly large"),
        ("[" * 100000, "larger than 64 KiB"),
        ("[" * 60000, "not JSON"),
        ('{"account": {"monthly": 0.5}}', "account.monthly is not one of"),
        ('{"account": {"weekly": "93%"}}', "account.weekly must be a fraction"),
    ],
)
def test_malformed_usage_file_is_ignored_with_a_note(
    tmp_path: Path, content: str | bytes, why: str
) -> None:
    path = tmp_path / "usage.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    usage, note = read_usage(path)
    assert usage == Usage(self_reported=True)
    assert note is not None
    assert note.startswith("usage file ignored: ")
    assert why in note


def test_usage_symlink_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text('{"cost_usd": 1}')
    (tmp_path / "usage.json").symlink_to(target)
    usage, note = read_usage(tmp_path / "usage.json")
    assert usage == Usage(self_reported=True)
    assert note == "usage file ignored: it is a symbolic link"


def test_usage_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "usage.json")
    usage, note = read_usage(tmp_path / "usage.json")
    assert usage == Usage(self_reported=True)
    assert note == "usage file ignored: not a regular file"


def test_malformed_usage_is_noted_on_the_answer_and_the_turn_still_finishes(
    tmp_path: Path, request_for: Callable[..., TurnRequest]
) -> None:
    agent = script(tmp_path, 'echo \'{"cost_usd": "lots"}\' > "$FLAMECHASE_USAGE"\n')
    answer = ask(agent, request_for())
    assert answer.status == "finished"
    assert answer.usage == Usage(self_reported=True)
    assert answer.text == 'usage file ignored: cost_usd must be a number, got "lots"'


def test_the_documented_minimal_agent_works(
    tmp_path: Path, request_for: Callable[..., TurnRequest]
) -> None:
    doc = exec_backend.__doc__
    assert doc is not None
    example = textwrap.dedent(doc.split("A minimal agent::\n", 1)[1]).strip() + "\n"
    agent = tmp_path / "agent"
    agent.write_text(example)
    agent.chmod(0o755)
    request = request_for()
    answer = ask(agent, request)
    assert answer.status == "finished", answer.error
    assert parse_report(json.loads(request.report_path.read_text())).status == "progress"
    assert answer.usage == Usage(self_reported=True)
    assert answer.text == ""
