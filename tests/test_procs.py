"""Agent processes: each runs in its own group carrying a token; its output streams through
bounded buffers; silence and overall time are enforced; and ending it leaves nothing alive —
not the group, not a setsid() daemon, not a child that ignores SIGTERM.

Every test runs real processes from scripts written into tmp_path.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from flamechase import procs

T = TypeVar("T")
FAR = 60.0  # a deadline / silence window the test never reaches


def run(coro: Awaitable[T]) -> T:
    async def main() -> T:
        return await coro

    return asyncio.run(main())


def script(tmp_path: Path, body: str, *, name: str = "agent", python: bool = False) -> Path:
    path = tmp_path / name
    shebang = f"#!{sys.executable}" if python else "#!/bin/sh"
    path.write_text(f"{shebang}\n{body}")
    path.chmod(0o755)
    return path


async def start(path: Path, **kwargs: Any) -> procs.Proc:
    return await procs.Proc.start([str(path)], cwd=path.parent, env=dict(os.environ), **kwargs)


def deadline(seconds: float = FAR) -> float:
    return time.monotonic() + seconds


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


async def peak_rss_growth_kb(work: Callable[[], Awaitable[T]]) -> tuple[T, int]:
    """Run `work` while sampling this process's RSS; (result, peak growth in kB)."""
    base = rss_kb()
    peak = base
    done = False

    async def sample() -> None:
        nonlocal peak
        while not done:
            peak = max(peak, rss_kb())
            await asyncio.sleep(0.01)

    sampler = asyncio.ensure_future(sample())
    try:
        result = await work()
    finally:
        done = True
        await sampler
    return result, max(peak, rss_kb()) - base


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


async def wait_for_file(path: Path, timeout: float = 3.0) -> str:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists() and path.read_text().endswith("\n"):
            return path.read_text()
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


# ---- starting ------------------------------------------------------------------------------


def test_on_spawn_receives_pgid_and_token_of_a_process_leading_its_own_group(
    tmp_path: Path,
) -> None:
    agent = script(
        tmp_path,
        "import os\n"
        "print(os.getpid(), os.getpgid(0), os.getsid(0), os.environ['FLAMECHASE_PROC_TOKEN'])\n",
        python=True,
    )
    seen: list[tuple[int, str]] = []

    async def go() -> tuple[procs.Proc, bytes | None]:
        proc = await start(agent, on_spawn=lambda pgid, token: seen.append((pgid, token)))
        line = await proc.next_line(deadline=deadline(), silence=FAR)
        await proc.kill()
        return proc, line

    proc, line = run(go())
    assert line is not None
    pid, pgid, sid, token = line.decode().split()
    assert seen == [(proc.pgid, proc.token)]
    assert int(pid) == int(pgid) == int(sid) == proc.pgid
    assert token == proc.token


def test_stdin_file_becomes_the_program_stdin(tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.md"
    prompt.write_text("hello agent\nsecond line\n")
    agent = script(tmp_path, "cat\n")

    async def go() -> list[bytes | None]:
        proc = await start(agent, stdin_file=prompt)
        lines = [await proc.next_line(deadline=deadline(), silence=FAR) for _ in range(3)]
        await proc.kill()
        return lines

    assert run(go()) == [b"hello agent", b"second line", None]


def test_on_spawn_failure_kills_the_process_and_propagates(tmp_path: Path) -> None:
    agent = script(tmp_path, "sleep 30\n")
    tokens: list[tuple[int, str]] = []

    def hook(pgid: int, token: str) -> None:
        tokens.append((pgid, token))
        raise RuntimeError("database is gone")

    with pytest.raises(RuntimeError, match="database is gone"):
        run(start(agent, on_spawn=hook))
    [(pgid, token)] = tokens
    assert procs.live_members(pgid, token) == []


def with_marker(marker: str) -> list[int]:
    """Live processes whose environment carries MARKER=marker."""
    needle = f"MARKER={marker}".encode()
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and alive(int(name)):
            try:
                env = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if needle in env:
                found.append(int(name))
    return found


@pytest.mark.parametrize("yields", [0, 1, 2, 3, 5, 8, 13])
def test_cancelling_a_start_leaves_no_process(tmp_path: Path, yields: int) -> None:
    # However far the spawn got when cancelled, whatever it started is ended.
    agent = script(tmp_path, "sleep 300 &\nexec sleep 300\n")
    marker = f"{tmp_path.name}-{yields}"

    async def go() -> None:
        env = dict(os.environ, MARKER=marker)
        starting = asyncio.ensure_future(procs.Proc.start([str(agent)], cwd=tmp_path, env=env))
        for _ in range(yields):
            await asyncio.sleep(0)
        starting.cancel()
        try:
            proc = await starting
        except asyncio.CancelledError:
            return
        await proc.kill(grace=0.5)  # it won the race and started: an ordinary kill

    run(go())
    assert with_marker(marker) == []


def test_missing_program_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        run(start(tmp_path / "nope"))


# ---- output ------------------------------------------------------------------------------


def test_next_line_yields_each_line_then_none_every_time(tmp_path: Path) -> None:
    agent = script(tmp_path, "printf 'one\\ntwo\\nlast-without-newline'\n")

    async def go() -> list[bytes | None]:
        proc = await start(agent)
        lines = [await proc.next_line(deadline=deadline(), silence=FAR) for _ in range(5)]
        await proc.kill()
        return lines

    assert run(go()) == [b"one", b"two", b"last-without-newline", None, None]


def test_overlong_stdout_line_is_cut_at_max_line(tmp_path: Path) -> None:
    agent = script(
        tmp_path,
        "import sys\nsys.stdout.buffer.write(b'a' * (3 << 20) + b'\\nnext\\n')\n",
        python=True,
    )

    async def go() -> list[bytes | None]:
        proc = await start(agent)
        lines = [await proc.next_line(deadline=deadline(), silence=FAR) for _ in range(3)]
        await proc.kill()
        return lines

    first, second, end = run(go())
    assert first == b"a" * procs.MAX_LINE
    assert (second, end) == (b"next", None)


def test_unread_stdout_is_bounded_in_memory_then_delivered_in_full(tmp_path: Path) -> None:
    # 100 lines of 1 MiB: a reader that has not caught up must not make us hold them all.
    agent = script(
        tmp_path,
        "import sys\nfor i in range(100):\n    sys.stdout.buffer.write(b'x' * 1048575 + b'\\n')\n",
        python=True,
    )

    async def go() -> tuple[int, int]:
        proc = await start(agent)
        await asyncio.sleep(0.5)  # the agent writes as fast as it can; nobody reads
        held = proc.stdout_bytes
        count = 0
        while await proc.next_line(deadline=deadline(), silence=FAR) is not None:
            count += 1
        await proc.kill()
        return held, count

    (held, count), growth_kb = run(peak_rss_growth_kb(go))
    assert held < 16 << 20
    assert count == 100
    assert growth_kb < 50 * 1024


def test_stderr_tail_keeps_only_the_last_bytes(tmp_path: Path) -> None:
    agent = script(
        tmp_path,
        "import sys\nfor i in range(5000):\n    print('noise', i, file=sys.stderr)\n"
        "print('THE END', file=sys.stderr)\n",
        python=True,
    )

    async def go() -> str:
        proc = await start(agent)
        await proc.wait_exit(deadline=deadline(), silence=FAR)
        await proc.kill()
        return proc.stderr_tail()

    tail = run(go())
    assert len(tail.encode()) <= procs.STDERR_TAIL
    assert len(tail.encode()) > procs.STDERR_TAIL - 20
    assert tail.endswith("noise 4999\nTHE END\n")


# ---- waiting -----------------------------------------------------------------------------


def test_wait_exit_returns_the_exit_code(tmp_path: Path) -> None:
    agent = script(tmp_path, "echo working; exit 7\n")

    async def go() -> int:
        proc = await start(agent)
        code = await proc.wait_exit(deadline=deadline(), silence=FAR)
        await proc.kill()
        return code

    assert run(go()) == 7


def test_wait_exit_reports_a_signal_as_negative_code(tmp_path: Path) -> None:
    agent = script(tmp_path, "kill -SEGV $$\n")

    async def go() -> int:
        proc = await start(agent)
        code = await proc.wait_exit(deadline=deadline(), silence=FAR)
        await proc.kill()
        return code

    assert run(go()) == -signal.SIGSEGV


def test_wait_exit_is_not_delayed_by_a_child_holding_the_pipes(tmp_path: Path) -> None:
    agent = script(tmp_path, "sleep 30 &\necho $! > child.pid\nexit 0\n")

    async def go() -> tuple[int, float, procs.Proc]:
        proc = await start(agent)
        t0 = time.monotonic()
        code = await proc.wait_exit(deadline=deadline(), silence=FAR)
        took = time.monotonic() - t0
        await proc.kill(grace=0.5)
        return code, took, proc

    code, took, proc = run(go())
    assert code == 0
    assert took < 0.5
    assert not alive(int((tmp_path / "child.pid").read_text()))
    assert procs.live_members(proc.pgid, proc.token) == []


def test_lines_after_a_timed_out_wait_are_delivered_whole(tmp_path: Path) -> None:
    # A line cut by the end of a wait is dropped entirely, never delivered as a fragment.
    agent = script(
        tmp_path, "echo during\nprintf 'cut-'\nsleep 0.4\nprintf 'line\\nafter\\n'\nsleep 30\n"
    )

    async def go() -> bytes | None:
        proc = await start(agent)
        try:
            with pytest.raises(procs.TurnTimeout):
                await proc.wait_exit(deadline=deadline(0.2), silence=FAR)
            return await proc.next_line(deadline=deadline(), silence=FAR)
        finally:
            await proc.kill(grace=0.5)

    assert run(go()) == b"after"


def test_silence_raises_silence_timeout(tmp_path: Path) -> None:
    agent = script(tmp_path, "echo hi; sleep 30\n")

    async def go() -> float:
        proc = await start(agent)
        t0 = time.monotonic()
        try:
            with pytest.raises(procs.SilenceTimeout):
                await proc.wait_exit(deadline=deadline(), silence=0.4)
            return time.monotonic() - t0
        finally:
            await proc.kill(grace=0.5)

    assert run(go()) < 1.2


def test_output_does_not_extend_the_turn_deadline(tmp_path: Path) -> None:
    agent = script(tmp_path, "while :; do echo tick; sleep 0.05; done\n")

    async def go() -> float:
        proc = await start(agent)
        t0 = time.monotonic()
        try:
            with pytest.raises(procs.TurnTimeout):
                await proc.wait_exit(deadline=deadline(0.5), silence=0.3)
            return time.monotonic() - t0
        finally:
            await proc.kill(grace=0.5)

    assert 0.45 < run(go()) < 1.2


def test_next_line_enforces_silence_too(tmp_path: Path) -> None:
    agent = script(tmp_path, "sleep 30\n")

    async def go() -> None:
        proc = await start(agent)
        try:
            with pytest.raises(procs.SilenceTimeout):
                await proc.next_line(deadline=deadline(), silence=0.3)
        finally:
            await proc.kill(grace=0.5)

    run(go())


def test_stderr_output_counts_as_liveness(tmp_path: Path) -> None:
    agent = script(
        tmp_path, "for i in 1 2 3 4 5 6 7 8; do echo working >&2; sleep 0.1; done\nexit 0\n"
    )

    async def go() -> int:
        proc = await start(agent)
        code = await proc.wait_exit(deadline=deadline(), silence=0.4)
        await proc.kill()
        return code

    assert run(go()) == 0


# ---- ending ------------------------------------------------------------------------------


def test_kill_ends_a_setsid_daemon_found_by_its_token(tmp_path: Path) -> None:
    agent = script(tmp_path, "setsid sleep 300 &\necho $! > daemon.pid\nsleep 300\n")

    async def go() -> tuple[procs.Proc, int, int]:
        proc = await start(agent)
        daemon = int((await wait_for_file(tmp_path / "daemon.pid")).strip())
        # Wait until the daemon has really left the group.
        for _ in range(200):
            if os.getpgid(daemon) != proc.pgid:
                break
            await asyncio.sleep(0.01)
        daemon_group = os.getpgid(daemon)
        await proc.kill(grace=1.0)
        return proc, daemon, daemon_group

    proc, daemon, daemon_group = run(go())
    assert daemon_group != proc.pgid
    assert not alive(daemon)
    assert procs.live_members(proc.pgid, proc.token) == []


def test_kill_escalates_to_sigkill_when_sigterm_is_ignored(tmp_path: Path) -> None:
    agent = script(
        tmp_path,
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True)\ntime.sleep(300)\n",
        python=True,
    )

    async def go() -> tuple[procs.Proc, float]:
        proc = await start(agent)
        assert await proc.next_line(deadline=deadline(), silence=FAR) == b"ready"
        t0 = time.monotonic()
        await proc.kill(grace=0.3)
        return proc, time.monotonic() - t0

    proc, took = run(go())
    assert took < 1.5
    assert proc.process.returncode == -signal.SIGKILL
    assert procs.live_members(proc.pgid, proc.token) == []


def test_kill_is_idempotent_and_safe_to_call_concurrently(tmp_path: Path) -> None:
    agent = script(tmp_path, "sleep 300\n")

    async def go() -> procs.Proc:
        proc = await start(agent)
        await asyncio.gather(proc.kill(grace=0.5), proc.kill(grace=0.5))
        await proc.kill(grace=0.5)
        return proc

    proc = run(go())
    assert procs.live_members(proc.pgid, proc.token) == []


def test_kill_after_a_clean_exit_keeps_the_full_stderr_tail(tmp_path: Path) -> None:
    agent = script(tmp_path, "echo 'final words' >&2\nexit 1\n")

    async def go() -> str:
        proc = await start(agent)
        await proc.wait_exit(deadline=deadline(), silence=FAR)
        await proc.kill()
        return proc.stderr_tail()

    assert run(go()) == "final words\n"


def test_end_group_returns_false_when_nothing_is_left(tmp_path: Path) -> None:
    agent = script(tmp_path, "exit 0\n")

    async def go() -> bool:
        proc = await start(agent)
        await proc.wait_exit(deadline=deadline(), silence=FAR)
        await proc.kill()
        return await procs.end_group(proc.pgid, proc.token, grace=0.1)

    assert run(go()) is False


def test_a_group_with_no_token_carrier_is_left_alone() -> None:
    # A recorded pgid whose number now belongs to someone else's group must not be signalled.
    stranger = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        assert procs.live_members(stranger.pid, "not-its-token") == []
        assert run(procs.end_group(stranger.pid, "not-its-token", grace=0.1)) is False
        procs.end_group_now(stranger.pid, "not-its-token")
        time.sleep(0.05)
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_end_group_now_kills_a_recorded_group_synchronously() -> None:
    token = "resume-test-token"
    env = dict(os.environ, **{procs.TOKEN_VAR: token})
    leftover = subprocess.Popen(["sleep", "30"], start_new_session=True, env=env)
    try:
        for _ in range(100):  # until exec has put the token in its environment
            if procs.live_members(leftover.pid, token):
                break
            time.sleep(0.01)
        procs.end_group_now(leftover.pid, token)
        assert leftover.wait(timeout=2) == -signal.SIGKILL
        assert procs.live_members(leftover.pid, token) == []
    finally:
        if leftover.poll() is None:
            leftover.kill()
            leftover.wait()
