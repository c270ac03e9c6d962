"""The spawner: an agent process in its own process group, streamed output, liveness
timeouts, and an end that leaves nothing of its group behind.

Every agent process starts in a new session (so it leads its own process group) with a
`FLAMECHASE_PROC_TOKEN` in its environment: the caller's (every process of one turn shares
its turn's token, recorded before the turn starts) or a fresh one. Ending a process means
SIGTERM to its group, a grace period, SIGKILL. A daemon that called setsid() left the group
but not its environment: once the group is gone, `reap.Reaper` finds it by the token.

Output is streamed, never slurped: stdout arrives as bounded lines through a queue bounded in
bytes, stderr is kept as a short tail. Memory stays flat whatever an agent prints.

The exit of the process itself is observed directly, not through its pipes: a daemon child
that inherited stdout and stays alive does not make `wait_exit` hang.

Imports nothing else of flamechase.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path

from flamechase.procs.reap import (
    KILL_GRACE,
    TOKEN_VAR,
    _group_empty,
    boot_ticks,
    end_group,
    end_group_now,
)

MAX_LINE = 1 << 20  # a stdout line longer than this is cut; the rest up to the newline dropped
STDERR_TAIL = 2048
_QUEUE_BYTES = 4 * MAX_LINE  # stdout lines held for a slow reader (plus at most one line)
_READ_CHUNK = 1 << 16
_STDERR_SETTLE = 1.0  # after the group is dead, how long to wait for the last stderr bytes


class TurnTimeout(Exception):
    """The whole turn ran past turn_timeout."""


class SilenceTimeout(Exception):
    """Nothing arrived on stdout or stderr for silence_timeout seconds."""


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The stock stream protocol, plus an event set the moment the process itself exits.

    (On Python 3.11 `Process.wait()` only returns once every pipe is closed, which a daemon
    holding stdout can postpone forever.)
    """

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited = asyncio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()


class _Lines:
    """FIFO of stdout lines for one producer and one consumer, bounded in bytes.

    `put` waits while the queue is over its limit (which stops reading the pipe, so the
    agent blocks on write); the end marker never waits. Between `drop()` and `keep()` lines
    are discarded.
    """

    def __init__(self, limit: int) -> None:
        self._items: deque[bytes] = deque()
        self._size = 0
        self._limit = limit
        self.ended = False
        self.dropping = False
        self._readable = asyncio.Event()
        self._room = asyncio.Event()

    async def put(self, line: bytes) -> None:
        while self._items and self._size + len(line) > self._limit and not self.dropping:
            self._room.clear()
            await self._room.wait()
        if self.dropping:
            return
        self._items.append(line)
        self._size += len(line)
        self._readable.set()

    def end(self) -> None:
        self.ended = True
        self._readable.set()

    def drop(self) -> None:
        self.dropping = True
        self._items.clear()
        self._size = 0
        self._room.set()

    def keep(self) -> None:
        self.dropping = False

    async def get(self) -> bytes | None:
        """The next line, or None once the output has ended (every time after that)."""
        while not self._items:
            if self.ended:
                return None
            self._readable.clear()
            await self._readable.wait()
        line = self._items.popleft()
        self._size -= len(line)
        self._room.set()
        return line


class Proc:
    """One running agent process and its group."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        token: str,
        *,
        exited: asyncio.Event | None = None,
        transport: asyncio.SubprocessTransport | None = None,
    ) -> None:
        self.process = process
        self.token = token
        self.pgid = process.pid
        self.started = time.monotonic()
        self.last_activity = self.started
        # Clock ticks since boot just before the spawn: older processes cannot be ours.
        self.since = 0
        self._exited = exited
        self._transport = transport
        self._lines = _Lines(_QUEUE_BYTES)
        self._stderr: deque[bytes] = deque()
        self._stderr_len = 0
        self.stdout_bytes = 0
        self._stdout_pump = asyncio.ensure_future(self._pump_stdout())
        self._stderr_pump = asyncio.ensure_future(self._pump_stderr())
        self._killing: asyncio.Future[None] | None = None

    # long: the spawn, its shielding and its abandonment must read as one sequence.
    @classmethod
    async def start(
        cls,
        argv: list[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        stdin_pipe: bool = False,
        stdin_file: Path | None = None,
        on_spawn: Callable[[int, str], None] | None = None,
        token: str | None = None,
    ) -> Proc:
        """Start `argv` in its own session; `on_spawn(pgid, token)` runs before any await.

        The token is `token`, else the one `env` carries (a turn's), else a new one.
        OSError when the program cannot be started (missing, not executable, bad cwd). If
        `on_spawn` raises, the process is killed and the error propagates.
        """
        token = token or env.get(TOKEN_VAR) or uuid.uuid4().hex
        since = boot_ticks()
        full_env = dict(env)
        full_env[TOKEN_VAR] = token
        stdin: int
        stdin_fd = None
        if stdin_file is not None:
            stdin_fd = os.open(stdin_file, os.O_RDONLY | os.O_CLOEXEC)
            stdin = stdin_fd
        elif stdin_pipe:
            stdin = asyncio.subprocess.PIPE
        else:
            stdin = asyncio.subprocess.DEVNULL
        loop = asyncio.get_running_loop()
        # The spawn runs as its own task, shielded: asyncio's clean-up for a spawn cancelled
        # half-way waits for the pipes to close, which a grandchild holding them postpones
        # indefinitely. Instead let the spawn finish (milliseconds), then end what it started.
        spawn = asyncio.ensure_future(
            loop.subprocess_exec(
                lambda: _Protocol(MAX_LINE, loop),
                *argv,
                cwd=str(cwd),
                env=full_env,
                stdin=stdin,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        )
        if stdin_fd is not None:
            fd = stdin_fd  # the child has its own copy once the spawn is over
            spawn.add_done_callback(lambda _: os.close(fd))
        try:
            transport, protocol = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            await _abandon_spawn(spawn, token)
            raise
        process = asyncio.subprocess.Process(transport, protocol, loop)
        if on_spawn is not None:
            try:
                on_spawn(process.pid, token)
            except BaseException:
                end_group_now(process.pid, token)
                transport.close()
                raise
        proc = cls(process, token, exited=protocol.exited, transport=transport)
        proc.since = since
        return proc

    # ---- output ------------------------------------------------------------------------

    async def _pump_stdout(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        lines = self._lines
        buf = bytearray()
        overlong = False  # the current line passed MAX_LINE: drop the rest of it
        skipping = False  # the current line began while lines were dropped: skip all of it
        try:
            while True:
                chunk = await stream.read(_READ_CHUNK)
                if not chunk:
                    break
                self.last_activity = time.monotonic()
                self.stdout_bytes += len(chunk)
                if lines.dropping:
                    buf.clear()
                    overlong = False
                    skipping = not chunk.endswith(b"\n")
                    continue
                start = 0
                while True:
                    nl = chunk.find(b"\n", start)
                    piece = chunk[start:] if nl < 0 else chunk[start:nl]
                    if not (overlong or skipping):
                        room = MAX_LINE - len(buf)
                        buf += piece[:room]
                        overlong = len(piece) > room
                    if nl < 0:
                        break
                    if not skipping:
                        await lines.put(bytes(buf))
                    buf.clear()
                    overlong = skipping = False
                    start = nl + 1
            if buf and not skipping:
                await lines.put(bytes(buf))
        finally:
            lines.end()

    async def _pump_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        while True:
            chunk = await stream.read(_READ_CHUNK)
            if not chunk:
                return
            self.last_activity = time.monotonic()
            self._stderr.append(chunk[-STDERR_TAIL:])
            self._stderr_len += min(len(chunk), STDERR_TAIL)
            while self._stderr_len - len(self._stderr[0]) >= STDERR_TAIL:
                self._stderr_len -= len(self._stderr.popleft())

    def stderr_tail(self, limit: int = STDERR_TAIL) -> str:
        data = b"".join(self._stderr)[-limit:]
        return data.decode("utf-8", "replace")

    def _wait_budget(self, deadline: float, silence: float) -> tuple[float, type[Exception]]:
        now = time.monotonic()
        silence_left = self.last_activity + silence - now
        turn_left = deadline - now
        if turn_left <= silence_left:
            return turn_left, TurnTimeout
        return silence_left, SilenceTimeout

    async def next_line(self, *, deadline: float, silence: float) -> bytes | None:
        """The next stdout line, or None at end of output (and every call after).

        Raises TurnTimeout / SilenceTimeout; stderr activity counts as liveness.
        """
        while True:
            left, kind = self._wait_budget(deadline, silence)
            if left <= 0:
                raise kind()
            try:
                return await asyncio.wait_for(self._lines.get(), timeout=min(left, 1.0))
            except TimeoutError:
                continue

    @property
    def exited(self) -> bool:
        """Whether the process itself (not necessarily its children) has exited."""
        return self.process.returncode is not None

    async def _exit_or_timeout(self, timeout: float) -> None:
        if self._exited is None:  # a Proc built around a plain Process: poll
            await asyncio.sleep(min(timeout, 0.05))
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._exited.wait(), timeout=timeout)

    async def wait_exit(self, *, deadline: float, silence: float) -> int:
        """Wait for the process itself to exit and return its code (negative: killed by that
        signal). A daemon child holding the pipes open does not delay this.

        Stdout counts as liveness, but lines that arrive during the wait (and any not yet
        read) are discarded, without being split into lines: printing is cheap however much.
        """
        self._lines.drop()
        try:
            while True:
                code = self.process.returncode
                if code is not None:
                    return code
                left, kind = self._wait_budget(deadline, silence)
                if left <= 0:
                    raise kind()
                await self._exit_or_timeout(min(left, 1.0))
        finally:
            if self._killing is None:
                self._lines.keep()

    async def write(self, data: bytes) -> None:
        stdin = self.process.stdin
        if stdin is None or stdin.is_closing():
            raise BrokenPipeError("agent stdin is closed")
        stdin.write(data)
        await stdin.drain()

    def close_stdin(self) -> None:
        stdin = self.process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()

    # ---- ending ------------------------------------------------------------------------

    async def kill(self, grace: float = KILL_GRACE) -> None:
        """End the process, its group and any escaped descendant; always reaps.

        Idempotent: a second call (or a concurrent one) waits for the first. The work is
        shielded, so cancelling the caller does not abandon a half-done kill.
        """
        if self._killing is None:
            self._killing = asyncio.ensure_future(self._kill(grace))
        await asyncio.shield(self._killing)

    async def _kill(self, grace: float) -> None:
        # While the leader is unreaped its pid (= the pgid) cannot have been reused.
        trusted = self.process.returncode is None
        if not trusted and _group_empty(self.pgid):
            # The usual end of a turn: the agent exited and left nothing in its group. Only a
            # descendant that left the group (setsid) can remain; looking for it means reading
            # every process's environment, so the owner of the token sweeps for it later
            # (`reap.Reaper`), off the path between turns.
            pass
        else:
            await end_group(
                self.pgid, self.token, grace=grace, trust_group=trusted, since=self.since
            )
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            end = time.monotonic() + grace + 1
            while self.process.returncode is None and time.monotonic() < end:
                await self._exit_or_timeout(end - time.monotonic())
        # Everything holding the pipes is dead: let the last stderr bytes in.
        self._lines.drop()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._stderr_pump), timeout=_STDERR_SETTLE)
        for pump in (self._stdout_pump, self._stderr_pump):
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pump
        if self.process.stdin is not None:
            self.process.stdin.close()
        if self._transport is not None:
            self._transport.close()


async def _abandon_spawn(
    spawn: asyncio.Future[tuple[asyncio.SubprocessTransport, _Protocol]], token: str
) -> None:
    """The starter was cancelled: end whatever `spawn` starts, now or (if cancelled again
    while waiting) as soon as the spawn completes."""

    def end(task: asyncio.Future[tuple[asyncio.SubprocessTransport, _Protocol]]) -> None:
        if task.cancelled() or task.exception() is not None:
            end_group_now(None, token)
            return
        transport, _ = task.result()
        end_group_now(transport.get_pid(), token)
        transport.close()

    try:
        await asyncio.wait({spawn})
    except asyncio.CancelledError:
        spawn.add_done_callback(end)
        raise
    end(spawn)
