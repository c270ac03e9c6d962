"""What every CLI-backed session shares: environment, transcript, liveness, cut and retries.

Owns the mechanics around an agent CLI process (one per session, or one per ask for CLIs that
exit after answering): starting it through `procs.Proc` with the `FLAMECHASE_*` environment,
keeping the raw stdout stream gzip'd at `io_dir/transcript.jsonl.gz` (0600), turning
silence/turn timeouts into `timeout` answers and `cut()` into `interrupted`, retrying transient
API errors with back-off, and a small JSON-RPC client for the CLIs that speak it (codex
app-server, ACP). Each CLI module supplies argv, framing and its parser.

Must not touch run state, reports or the database, and must never raise for agent
misbehaviour: whatever a CLI prints becomes an `Answer`.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import dataclasses
import gzip
import json
import math
import os
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from flamechase import sandbox
from flamechase.agents.backend import (
    Answer,
    AnswerStatus,
    Backend,
    Session,
    SpawnHook,
    TurnRequest,
    Usage,
)
from flamechase.agents.accounts import Account, account_env, check_account
from flamechase.agents.efforts import SpecLike, check_effort, check_installed
from flamechase.agents.limits import RetryPolicy
from flamechase.agents.turnio import agent_env, prepare_io
from flamechase.agents.usage import load_prices, price_for
from flamechase.errors import BackendUnavailable
from flamechase.procs import Proc, SilenceTimeout, TurnTimeout

__all__ = [
    "CliBackend",
    "CliSession",
    "RpcError",
    "RpcSession",
    "Transcript",
    "Verdict",
    "agent_env",
    "as_dict",
    "as_float",
    "as_int",
    "as_list",
    "as_str",
    "clip",
    "feed_stdin",
    "loads",
    "prepare_io",
    "unsupported",
]

TRANSCRIPT_NAME = "transcript.jsonl.gz"
_EXIT_WAIT = 5.0  # after stdout closed, how long the process gets to report its exit code
_CLOSE_WAIT = 2.0  # after stdin closed on close(), how long before the group is ended
_ERROR_CHARS = 1500


# ---- tolerant JSON access: a parser must survive any shape ----------------------------------


def loads(line: bytes | str) -> dict[str, Any] | None:
    """The JSON object on `line`, or None for anything else (garbage, arrays, deep nesting)."""
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: object) -> str:
    return value if isinstance(value, str) else ""


def as_int(value: object) -> int:
    """A non-negative token count, 0 for anything that is not one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if not math.isfinite(value) or value < 0 or value > 10**15:
        return 0
    return int(value)


def as_float(value: object) -> float | None:
    """A finite non-negative number, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0 or value > 1e12:
        return None
    return float(value)


def clip(text: str, limit: int = _ERROR_CHARS) -> str:
    """`text` on one line, cut to `limit` characters."""
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


# ---- environment and transcript -------------------------------------------------------------


class Transcript:
    """The session's raw stdout, one line per line, gzip'd, readable while it grows.

    Each flush ends a deflate block (Z_SYNC_FLUSH), so the file decompresses up to the last
    answer even if the engine dies mid-session. A write error disables the transcript rather
    than failing the turn: the audit trail is valuable, the turn more so.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._raw: BinaryIO | None = None
        self._gz: gzip.GzipFile | None = None
        self.broken = False

    def _open(self) -> gzip.GzipFile | None:
        if self._gz is None and not self.broken:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(
                    self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600
                )
                os.fchmod(fd, 0o600)
                self._raw = os.fdopen(fd, "ab")
                # Appending makes a multi-member gzip file, which every reader accepts.
                self._gz = gzip.GzipFile(fileobj=self._raw, mode="ab", mtime=0)
            except OSError:
                self.broken = True
        return self._gz

    def write(self, line: bytes) -> None:
        gz = self._open()
        if gz is None:
            return
        try:
            gz.write(line)
            gz.write(b"\n")
        except OSError:
            self.broken = True

    def flush(self) -> None:
        if self._gz is not None and not self.broken:
            try:
                self._gz.flush()
                if self._raw is not None:
                    self._raw.flush()
            except OSError:
                self.broken = True

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self._gz is not None:
                self._gz.close()
            if self._raw is not None:
                self._raw.close()
        self._gz = None
        self._raw = None

    @property
    def written(self) -> Path | None:
        return self.path if self.path.exists() else None


# ---- the session base -----------------------------------------------------------------------


@dataclasses.dataclass(slots=True)
class Verdict:
    """What one attempt at an ask came to; `retry` marks a transient failure."""

    status: AnswerStatus
    usage: Usage = Usage()  # noqa: RUF009 -- Usage is frozen, sharing the default is safe
    error: str | None = None
    text: str = ""
    structured: Any = None
    resets_at: datetime | None = None
    exit_code: int | None = None
    retry: bool = False


class _ProcessGone(Exception):
    """The CLI process closed stdout (exited or died) before the exchange finished."""


class CliSession(Session):
    """A session driving one CLI. Subclasses implement `_attempt` (one try at one ask)."""

    #: Program name, for messages ("claude exited with code 1 ...").
    program: str = "agent"

    def __init__(self, request: TurnRequest, on_spawn: SpawnHook, retry: RetryPolicy) -> None:
        self.request = request
        self.on_spawn = on_spawn
        self.retry = retry
        self.transcript = Transcript(request.io_dir / TRANSCRIPT_NAME)
        self.proc: Proc | None = None
        self._cut = False
        self._closed = False
        self._repair: str | None = None

    # -- the Session API --

    async def ask(self, prompt: str, *, repair: str | None = None) -> Answer:
        if self._closed:
            return Answer(status="failed", error="the session is closed")
        self._repair = repair
        try:
            prepare_io(self.request, prompt)
        except OSError as exc:
            return Answer(status="failed", error=f"cannot prepare {self.request.io_dir}: {exc}")
        deadline = time.monotonic() + self.request.turn_timeout
        usage = Usage()
        verdict = Verdict("failed")
        tries = len(self.retry.delays) + 1
        for attempt in range(tries):
            if self._cut:
                verdict = Verdict("interrupted", error="the turn was cut")
                break
            verdict = await self._guarded(prompt, deadline)
            usage = usage + verdict.usage
            if self._cut:
                verdict.status, verdict.retry = "interrupted", False
                verdict.error = verdict.error or "the turn was cut"
            if not verdict.retry:
                break
            if attempt == tries - 1:
                verdict.error = f"{verdict.error} (gave up after {tries} tries)"
                break
            wait = min(self.retry.delays[attempt], max(0.0, deadline - time.monotonic()))
            await self.retry.sleep(wait)
            if self._cut:
                verdict.status, verdict.error = "interrupted", "the turn was cut"
                break
        self.transcript.flush()
        return Answer(
            status=verdict.status,
            usage=usage,
            error=verdict.error,
            exit_code=verdict.exit_code,
            structured=verdict.structured,
            text=verdict.text,
            resets_at=verdict.resets_at,
            transcript=self.transcript.written,
        )

    async def cut(self) -> None:
        self._cut = True
        if self.proc is not None:
            await self.proc.kill(self.request.kill_grace)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self.proc is not None:
                with contextlib.suppress(Exception):
                    await self._goodbye(self.proc)
                await self.proc.kill(self.request.kill_grace)
                self.proc = None
        finally:
            self.transcript.close()

    # -- for subclasses --

    @abc.abstractmethod
    async def _attempt(self, prompt: str, deadline: float) -> Verdict:
        """One try at answering `prompt`: start or reuse the process, exchange, judge."""

    def _partial_usage(self) -> Usage:
        """Spend seen so far in an attempt that is being abandoned (a timeout)."""
        return Usage()

    async def _goodbye(self, proc: Proc) -> None:
        """End the session politely before the group is ended (default: close stdin, wait)."""
        proc.close_stdin()
        with contextlib.suppress(TurnTimeout, SilenceTimeout):
            await proc.wait_exit(deadline=time.monotonic() + _CLOSE_WAIT, silence=_CLOSE_WAIT + 1)

    async def _start(
        self, argv: list[str], *, stdin: bool, extra_env: Mapping[str, str] | None = None
    ) -> Proc:
        """Start the CLI in the workspace (OSError when it cannot start), on the spec's
        account when it names one."""
        env = dict(extra_env or {})
        account = self._account()
        if account is not None:
            env.update(account_env(account))
        if self.request.writable is not None:
            grants = [*self.request.writable, *([account.path] if account else [])]
            argv = sandbox.wrap(argv, grants)
        proc = await Proc.start(
            argv,
            cwd=self.request.workspace,
            env=agent_env(self.request, env, self._repair),
            stdin_pipe=stdin,
            on_spawn=self.on_spawn,
        )
        self.proc = proc
        # Our own first line: the transcript exists and says what ran even if the CLI dies
        # before printing a byte.
        self._note("started", argv=argv, pid=proc.pgid)
        if self._cut:  # cut() ran while we were starting: it could not see this process
            await proc.kill(self.request.kill_grace)
            raise _ProcessGone
        return proc

    def _account(self) -> Account | None:
        spec: SpecLike | None = getattr(self, "spec", None)
        if spec is None or not spec.provider:
            return None
        try:
            return check_account(spec)
        except BackendUnavailable:
            return None  # removed since the run started: the CLI's default state is used

    def _note(self, event: str, **fields: Any) -> None:
        """A line of flamechase's own in the transcript (`{"flamechase": event, ...}`)."""
        line = {"flamechase": event, "at": round(time.time(), 3), **fields}
        self.transcript.write(json.dumps(line, ensure_ascii=False, default=str).encode())
        self.transcript.flush()

    async def _read(self, deadline: float) -> bytes | None:
        """The next stdout line (recorded in the transcript), or None at end of output."""
        assert self.proc is not None
        line = await self.proc.next_line(deadline=deadline, silence=self.request.silence_timeout)
        if line is not None:
            self.transcript.write(line)
        return line

    async def _write(self, message: Mapping[str, Any]) -> None:
        assert self.proc is not None
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            await self.proc.write(data.encode())
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise _ProcessGone from exc

    async def _run_once(
        self,
        argv: list[str],
        prompt: str,
        deadline: float,
        on_line: Callable[[bytes], None],
        extra_env: Mapping[str, str] | None = None,
    ) -> int | None:
        """One process per ask (gemini, opencode): start `argv` with `prompt` on stdin, hand
        every stdout line to `on_line`, and return the exit code."""
        proc = await self._start(argv, stdin=True, extra_env=extra_env)
        feeder = asyncio.ensure_future(feed_stdin(proc, prompt.encode()))
        try:
            while True:
                line = await self._read(deadline)
                if line is None:
                    break
                on_line(line)
            return await self._exit_code()
        finally:
            feeder.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await feeder

    async def _exit_code(self) -> int | None:
        """The exit code of a process whose stdout ended, waiting a little; None if it lingers."""
        if self.proc is None:
            return None
        try:
            return await self.proc.wait_exit(
                deadline=time.monotonic() + _EXIT_WAIT, silence=_EXIT_WAIT + 1
            )
        except (TurnTimeout, SilenceTimeout):
            return None

    async def _drop_proc(self) -> None:
        """End the process (if any) so the next attempt starts a fresh one."""
        if self.proc is not None:
            proc, self.proc = self.proc, None
            await proc.kill(self.request.kill_grace)

    def _ended_early(self, code: int | None, what: str = "before the turn ended") -> str:
        """'claude exited with code 1 before the turn ended: <stderr tail>'."""
        if code is None:
            how = "closed its output"
        elif code < 0:
            how = f"was killed by signal {-code}"
        else:
            how = f"exited with code {code}"
        tail = self.stderr_tail()
        return f"{self.program} {how} {what}" + (f": {tail}" if tail else "")

    def stderr_tail(self) -> str:
        if self.proc is None:
            return ""
        lines = [ln for ln in self.proc.stderr_tail(800).splitlines() if ln.strip()]
        return clip(" | ".join(lines[-4:]), 600)

    # -- the guard around every attempt --

    async def _guarded(self, prompt: str, deadline: float) -> Verdict:
        verdict = await self._guarded_attempt(prompt, deadline)
        if verdict.status != "finished":
            self._note("ended", status=verdict.status, why=verdict.error,
                       exit_code=verdict.exit_code)
        return verdict

    async def _guarded_attempt(self, prompt: str, deadline: float) -> Verdict:
        try:
            return await self._attempt(prompt, deadline)
        except TurnTimeout:
            usage = self._partial_usage()
            await self._drop_proc()
            return Verdict(
                "timeout",
                usage=usage,
                error=f"{self.program}: the turn ran past turn_timeout "
                f"({self.request.turn_timeout:g}s) and was cut",
            )
        except SilenceTimeout:
            usage = self._partial_usage()
            await self._drop_proc()
            return Verdict(
                "timeout",
                usage=usage,
                error=f"{self.program} said nothing for {self.request.silence_timeout:g}s "
                "(silence_timeout) and was cut",
            )
        except _ProcessGone:
            usage = self._partial_usage()
            code = await self._exit_code()
            error = self._ended_early(code)
            await self._drop_proc()
            return Verdict("failed", usage=usage, error=error, exit_code=code)
        except OSError as exc:
            await self._drop_proc()
            return Verdict("failed", error=f"could not start {self.program}: {exc}")


# ---- JSON-RPC over stdio (codex app-server, ACP) -------------------------------------------


class RpcError(Exception):
    """A JSON-RPC error response to one of our requests."""

    def __init__(self, method: str, error: Mapping[str, Any]) -> None:
        self.code = error.get("code")
        self.message = as_str(error.get("message")) or json.dumps(error)[:300]
        self.data = error.get("data")
        super().__init__(f"{method}: {self.message}")


class RpcSession(CliSession):
    """A CliSession whose CLI speaks JSON-RPC 2.0, one message per line, both ways."""

    #: Whether to put "jsonrpc": "2.0" on our messages (ACP requires it; codex omits it).
    jsonrpc_header: bool = True

    def __init__(self, request: TurnRequest, on_spawn: SpawnHook, retry: RetryPolicy) -> None:
        super().__init__(request, on_spawn, retry)
        self._next_id = 0

    async def _request(self, method: str, params: Mapping[str, Any], deadline: float) -> Any:
        """Send a request and wait for its response, handling everything that comes first."""
        self._next_id += 1
        rid = self._next_id
        message: dict[str, Any] = {"id": rid, "method": method, "params": dict(params)}
        if self.jsonrpc_header:
            message = {"jsonrpc": "2.0", **message}
        await self._write(message)
        while True:
            obj = await self._next_message(deadline)
            if obj.get("id") == rid and "method" not in obj:
                if "error" in obj:
                    raise RpcError(method, as_dict(obj.get("error")))
                return obj.get("result")
            await self._dispatch(obj)

    async def _notify(self, method: str, params: Mapping[str, Any]) -> None:
        message: dict[str, Any] = {"method": method, "params": dict(params)}
        if self.jsonrpc_header:
            message = {"jsonrpc": "2.0", **message}
        await self._write(message)

    async def _next_message(self, deadline: float) -> dict[str, Any]:
        """The next JSON object from the CLI; garbage lines are skipped (kept in the transcript)."""
        while True:
            line = await self._read(deadline)
            if line is None:
                raise _ProcessGone
            obj = loads(line)
            if obj is not None:
                return obj

    async def _dispatch(self, obj: dict[str, Any]) -> None:
        """Route a message that is not the response we wait for."""
        method = obj.get("method")
        if not isinstance(method, str):
            return  # a stray response: ignore
        params = as_dict(obj.get("params"))
        if "id" in obj and obj.get("id") is not None:
            result, error = self._serve(method, params)
            reply: dict[str, Any] = {"id": obj["id"]}
            if error is not None:
                reply["error"] = error
            else:
                reply["result"] = result
            if self.jsonrpc_header:
                reply = {"jsonrpc": "2.0", **reply}
            await self._write(reply)
        else:
            self._notified(method, params)

    @abc.abstractmethod
    def _serve(self, method: str, params: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        """Answer a request from the CLI: (result, None) or (None, error object)."""

    @abc.abstractmethod
    def _notified(self, method: str, params: dict[str, Any]) -> None:
        """Take in a notification from the CLI."""


async def feed_stdin(proc: Proc, data: bytes) -> None:
    """Write `data` to the CLI's stdin and close it; run as a task beside the reader, so a
    CLI that reads its prompt only after writing output cannot deadlock us on a full pipe."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        await proc.write(data)
    proc.close_stdin()


def unsupported(method: str) -> tuple[None, dict[str, Any]]:
    """The JSON-RPC 'method not found' error for a request we do not serve."""
    return None, {"code": -32601, "message": f"flamechase does not serve {method}"}


# ---- the backend base -----------------------------------------------------------------------


class CliBackend(Backend):
    """A backend for one named CLI: checks PATH, effort and prices; opens sessions."""

    #: The CLI's name in specs and on PATH.
    cli: str = ""

    def __init__(self, spec: SpecLike, *, retry: RetryPolicy | None = None) -> None:
        self.spec = spec
        self.retry = retry if retry is not None else RetryPolicy.from_env()

    def check(self) -> None:
        check_account(self.spec)
        check_effort(self.spec)
        check_installed(self.cli)
        load_prices()  # a bad FLAMECHASE_PRICES file is refused now, not mid-run

    def can_bound_cost(self) -> bool:
        """Default for CLIs that report no cost: only a known price for the model helps."""
        try:
            return price_for(self.spec.model) is not None
        except BackendUnavailable:
            return False
