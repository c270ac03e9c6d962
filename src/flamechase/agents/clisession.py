"""What every CLI-backed session shares: environment, transcript, liveness, cut and retries.

Owns the mechanics around an agent CLI process (one per session, or one per ask for CLIs that
exit after answering): starting it through `procs.Proc` with the `FLAMECHASE_*` environment
(and the spec's account), keeping the raw stdout in a `Transcript`, turning silence/turn
timeouts into `timeout` answers and `cut()` into `interrupted`, and retrying transient API
errors with back-off. JSON-RPC CLIs build on it in `rpc.py`; tolerant JSON access is in
`jsonread.py`. Each CLI module supplies argv, framing and its parser.

Must not touch run state, reports or the database, and must never raise for agent
misbehaviour: whatever a CLI prints becomes an `Answer`.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import dataclasses
import json
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from flamechase import jail
from flamechase.agents.accounts import Account, account_env, check_account
from flamechase.agents.backend import (
    Answer,
    AnswerStatus,
    Backend,
    Session,
    SpawnHook,
    TurnRequest,
    Usage,
)
from flamechase.agents.efforts import SpecLike, check_effort, check_installed
from flamechase.agents.jsonread import (
    as_dict,
    as_float,
    as_int,
    as_list,
    as_str,
    clip,
    loads,
)
from flamechase.agents.limits import RetryPolicy
from flamechase.agents.transcript import TRANSCRIPT_NAME, Transcript
from flamechase.agents.turnio import agent_env, prepare_io
from flamechase.agents.usage import load_prices, unpriced_notice
from flamechase.errors import BackendUnavailable
from flamechase.procs import Proc, SilenceTimeout, TurnTimeout

# The JSON helpers are re-exported: every CLI module takes them from here with the base class.
__all__ = [
    "TRANSCRIPT_NAME",
    "CliBackend",
    "CliSession",
    "ProcessGone",
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
]

_EXIT_WAIT = 5.0  # after stdout closed, how long the process gets to report its exit code
_CLOSE_WAIT = 2.0  # after stdin closed on close(), how long before the group is ended


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


class ProcessGone(Exception):
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
        self._started_as = self.program  # argv[0] as started, before its jail
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
        spec = self.request.jail
        if spec is not None and account is not None:
            # The CLI keeps its login and sessions in the account's directory.
            spec = dataclasses.replace(spec, grants=(*spec.grants, account.path))
        self._started_as = argv[0]
        argv = jail.wrap(argv, spec)
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
            raise ProcessGone
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
            raise ProcessGone from exc

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
            self._note(
                "ended", status=verdict.status, why=verdict.error, exit_code=verdict.exit_code
            )
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
        except ProcessGone:
            usage = self._partial_usage()
            code = await self._exit_code()
            error = self._ended_early(code)
            tail = self.proc.stderr_tail(800) if self.proc is not None else ""
            never = jail.not_started(code, tail, self._started_as, self.request.jail)
            if never is not None:  # its jail could not run it: as unjailed, it did not start
                error = f"could not start {self.program}: {never}"
            await self._drop_proc()
            return Verdict("failed", usage=usage, error=error, exit_code=code)
        except OSError as exc:
            await self._drop_proc()
            return Verdict("failed", error=f"could not start {self.program}: {exc}")


async def feed_stdin(proc: Proc, data: bytes) -> None:
    """Write `data` to the CLI's stdin and close it; run as a task beside the reader, so a
    CLI that reads its prompt only after writing output cannot deadlock us on a full pipe."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        await proc.write(data)
    proc.close_stdin()


# ---- the backend base -----------------------------------------------------------------------


class CliBackend(Backend):
    """A backend for one named CLI: checks PATH, effort and prices; opens sessions."""

    #: The CLI's name in specs and on PATH.
    cli: str = ""
    #: Whether every answer carries its cost (then the price table plays no part).
    reports_cost: bool = False

    def __init__(self, spec: SpecLike, *, retry: RetryPolicy | None = None) -> None:
        self.spec = spec
        self.retry = retry if retry is not None else RetryPolicy.from_env()

    def check(self) -> None:
        check_account(self.spec)
        check_effort(self.spec)
        check_installed(self.cli)
        load_prices()  # a bad FLAMECHASE_PRICES file is refused now, not mid-run

    def can_bound_cost(self) -> bool:
        """A CLI that reports no cost reports tokens, priced from the table (an unlisted model
        at an upper bound): only an empty price table leaves them uncounted."""
        if self.reports_cost:
            return True
        try:
            table = load_prices()
        except BackendUnavailable:
            return False
        model = self.spec.model
        return table.lookup(model) is not None or table.bound(model) is not None

    def price_notice(self) -> str | None:
        if self.reports_cost:
            return None
        try:
            return unpriced_notice(self.spec.model)
        except BackendUnavailable:
            return None  # check() refuses the bad price file with its own message
