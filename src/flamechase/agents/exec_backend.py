"""`exec:PATH` — any program as an agent.

The exec contract
-----------------

Give a role the agent spec `exec:PATH` and flamechase runs the executable at PATH once per
turn (and once more per repair of that turn's report). The program:

* is started with no arguments, in its own process group, with the current directory set to
  the turn's **workspace** (the files it is meant to change);
* receives the **prompt** on standard input; the same text is in the file named by
  `FLAMECHASE_PROMPT`;
* finds everything else in its environment (the caller's environment plus):

  ====================== ==================================================================
  FLAMECHASE_RUN_ID      id of the run
  FLAMECHASE_RUN_DIR     the run's state directory
  FLAMECHASE_FLOW        the name of the run's flow
  FLAMECHASE_ROLE        role this turn plays
  FLAMECHASE_LANE        lane (``lane-1`` ...), empty for roles outside lanes
  FLAMECHASE_TURN        1-based turn number in the lane
  FLAMECHASE_ATTEMPT     1-based attempt of that turn (after a crash or a usage limit)
  FLAMECHASE_WORKSPACE   the workspace (also the current directory)
  FLAMECHASE_PROMPT      file holding the prompt (on a repair run, the repair request)
  FLAMECHASE_REPORT      where to write the turn report (JSON)
  FLAMECHASE_USAGE       where to write what the turn cost (JSON, optional)
  FLAMECHASE_REPAIR      set only on a repair run: why the last report was refused; the
                         prompt then asks for a corrected report
  ====================== ==================================================================

  plus per-flow extras such as FLAMECHASE_INBOX, FLAMECHASE_ARTIFACTS and
  FLAMECHASE_CHECKPOINT. FLAMECHASE_PROC_TOKEN marks every process of the turn; leave it be.
* writes its report to `$FLAMECHASE_REPORT` and exits 0. A stale report or usage file is
  never left there from an earlier run: both are removed before the program starts.
* may write `$FLAMECHASE_USAGE`: a JSON object with any of ``cost_usd``, ``input_tokens``,
  ``output_tokens``, ``cache_read_tokens``, ``cache_write_tokens`` — non-negative finite
  numbers (token counts whole), for this run only, never running totals. Budgets count it as
  self-reported spend. ``account`` may give the account's usage as the agent sees it:
  ``{"weekly": 0.4, "window_5h": 0.1, "extra_credit": 0.0}`` (fractions of 1; agents/account.py).
  A malformed file (not JSON, a negative or non-numeric value, over 64 KiB,
  a symbolic link) is ignored and noted in the turn's record; it never fails the turn.
  Usage is read whatever the exit status: spend is spend.

How a run ends:

* exit 0: the turn finished; the report decides what it achieved;
* a non-zero exit: the turn failed; the last lines of standard error (2 KB at most) become
  the recorded error, so print the reason there;
* killed by a signal: failed, "killed by SIGSEGV" and so on;
* no output on stdout or stderr for `silence_timeout` seconds, or running past
  `turn_timeout`: the turn is cut (status timeout). Print progress (to stderr is fine) to
  show you are alive during long silent work;
* a hard stop cuts the turn (status interrupted).

Standard output is read and discarded (it counts only as a sign of life); it may be as large
as you like. When the program exits, whatever it left running in the background is ended —
SIGTERM, a grace period, SIGKILL — including daemons that called setsid(): a turn leaves
nothing behind.

A minimal agent::

    #!/bin/sh
    task=$(cat)                      # the prompt
    make test >&2 || true            # work in the workspace; progress on stderr
    cat > "$FLAMECHASE_REPORT" <<EOF
    {"status": "progress", "summary": "ran the tests"}
    EOF
    echo '{"cost_usd": 0}' > "$FLAMECHASE_USAGE"
"""

from __future__ import annotations

import asyncio
import errno
import json
import math
import os
import signal
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flamechase import jail, procs
from flamechase.agents import account
from flamechase.agents.backend import Answer, Backend, Session, SpawnHook, TurnRequest, Usage
from flamechase.agents.turnio import agent_env, prepare_io
from flamechase.errors import BackendUnavailable

if TYPE_CHECKING:
    from flamechase.agents.spec import AgentSpec

MAX_USAGE_FILE = 64 * 1024
MAX_ERROR = 2048  # bytes of Answer.error for a failed run, stderr tail included
_TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
_USAGE_FIELDS = ("cost_usd", *_TOKEN_FIELDS)
_MAX_TOKENS = (1 << 63) - 1  # what the run database can store


class ExecBackend(Backend):
    """`exec:PATH`: run one executable per ask; see the module docstring for the contract."""

    self_reported = True

    def __init__(self, spec: AgentSpec, *, kill_grace: float | None = None) -> None:
        self.spec = spec
        self.path: Path | None = Path(spec.path) if spec.path else None
        self.kill_grace = kill_grace

    def check(self) -> None:
        text = self.spec.text
        path = self.path
        if path is None:
            raise BackendUnavailable(f"agent spec {text!r}: no program path; use exec:PATH")
        if not path.exists():
            raise BackendUnavailable(f"agent spec {text!r}: {path} does not exist")
        if path.is_dir():
            raise BackendUnavailable(f"agent spec {text!r}: {path} is a directory, not a program")
        if not os.access(path, os.X_OK):
            raise BackendUnavailable(
                f"agent spec {text!r}: {path} is not executable; run `chmod +x {path}`"
            )

    def open(self, request: TurnRequest, on_spawn: SpawnHook) -> Session:
        if self.path is None:
            self.check()  # raises
        assert self.path is not None
        grace = self.kill_grace if self.kill_grace is not None else request.kill_grace
        return ExecSession(self.path, request, on_spawn, kill_grace=grace)


class ExecSession(Session):
    """One turn of an exec agent; each ask runs the program again."""

    continues = False

    def __init__(
        self,
        path: Path,
        request: TurnRequest,
        on_spawn: SpawnHook,
        *,
        kill_grace: float = procs.KILL_GRACE,
    ) -> None:
        self.path = path
        self.request = request
        self.on_spawn = on_spawn
        self.kill_grace = kill_grace
        self._proc: procs.Proc | None = None
        self._cut = False

    async def ask(self, prompt: str, *, repair: str | None = None) -> Answer:
        if self._proc is not None:
            raise RuntimeError("exec session: ask while another ask is under way")
        if self._cut:
            return _interrupted(Usage(self_reported=True), "")
        req = self.request
        prepare_io(req, prompt)
        env = self._environment(repair)
        try:
            argv = jail.wrap([str(self.path)], req.jail)
            proc = await procs.Proc.start(
                argv,
                cwd=req.workspace,
                env=env,
                stdin_file=req.prompt_path,
                on_spawn=self.on_spawn,
            )
        except OSError as exc:
            reason = exc.strerror or str(exc)
            where = (
                f" ({exc.filename})" if exc.filename and str(exc.filename) != str(self.path) else ""
            )
            return Answer(
                status="failed",
                error=f"could not start {self.path}: {reason}{where}",
                usage=Usage(self_reported=True),
            )
        self._proc = proc
        try:
            if self._cut:  # cut() arrived while the program was being started
                await proc.kill(self.kill_grace)
            return await self._finish(proc)
        except BaseException:
            # Cancelled (or a bug): the process group must not outlive the ask.
            await _kill_surely(proc, self.kill_grace)
            raise
        finally:
            self._proc = None

    async def _finish(self, proc: procs.Proc) -> Answer:
        req = self.request
        deadline = proc.started + req.turn_timeout
        cut_reason: str | None = None
        code: int | None = None
        try:
            code = jail.decode_exit(
                await proc.wait_exit(deadline=deadline, silence=req.silence_timeout), req.jail
            )
        except procs.SilenceTimeout:
            cut_reason = f"turn cut: no output for {req.silence_timeout:g}s (silence_timeout)"
        except procs.TurnTimeout:
            cut_reason = f"turn cut: ran past turn_timeout {req.turn_timeout:g}s"
        # Always: the turn's leftovers (a daemon, a background job) end with it.
        await proc.kill(self.kill_grace)
        usage, note = read_usage(req.usage_path)
        text = note or ""
        if self._cut:
            return _interrupted(usage, text)
        if cut_reason is not None:
            return Answer(status="timeout", error=cut_reason, usage=usage, text=text)
        assert code is not None
        if code == 0:
            return Answer(status="finished", usage=usage, exit_code=0, text=text)
        if code < 0:
            try:
                what = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                what = f"killed by signal {-code}"
        else:
            what = f"exited with code {code}"
        never = jail.not_started(code, proc.stderr_tail(), str(self.path), req.jail)
        if never is not None:  # its jail could not run it: as unjailed, it did not start
            return Answer(
                status="failed",
                exit_code=code,
                error=f"could not start {self.path}: {never}",
                usage=usage,
                text=text,
            )
        return Answer(
            status="failed",
            exit_code=code,
            error=_with_stderr(what, proc.stderr_tail()),
            usage=usage,
            text=text,
        )

    def _environment(self, repair: str | None) -> dict[str, str]:
        return agent_env(self.request, repair=repair)

    async def cut(self) -> None:
        """Kill the running program now; the pending ask returns status interrupted.

        Also makes any later ask of this session return interrupted without starting."""
        self._cut = True
        proc = self._proc
        if proc is not None:
            await proc.kill(self.kill_grace)

    async def close(self) -> None:
        proc = self._proc
        if proc is not None:
            await _kill_surely(proc, self.kill_grace)


def _interrupted(usage: Usage, text: str) -> Answer:
    return Answer(status="interrupted", error="turn cut by a stop", usage=usage, text=text)


async def _kill_surely(proc: procs.Proc, grace: float) -> None:
    """`proc.kill`, falling back to an immediate SIGKILL sweep if we are cancelled again."""
    try:
        await proc.kill(grace)
    except asyncio.CancelledError:
        procs.end_group_now(proc.pgid, proc.token)
        raise


def _with_stderr(what: str, tail: str) -> str:
    """`what: <stderr tail>`, the whole clipped to MAX_ERROR bytes from the left of the tail."""
    tail = tail.strip()
    if not tail:
        return what
    head = f"{what}: "
    room = MAX_ERROR - len(head.encode())
    data = tail.encode()
    if len(data) > room:
        data = data[-(room - len("…".encode())) :]
        clipped = data.decode("utf-8", "ignore")
        # Start at a line boundary when there is one, so the message opens with a whole line.
        nl = clipped.find("\n")
        if 0 <= nl < len(clipped) - 1:
            clipped = clipped[nl + 1 :]
        tail = "…" + clipped
    return head + tail


# ---- files -----------------------------------------------------------------------------


def read_usage(path: Path) -> tuple[Usage, str | None]:
    """The usage an exec agent reported, and a note when its file was ignored.

    Missing file: zero usage, no note. Anything malformed: zero usage and
    "usage file ignored: <why>". Never raises for the file's content or kind.
    """
    zero = Usage(self_reported=True)
    try:
        raw = _read_bounded(path)
    except FileNotFoundError:
        return zero, None
    except _UsageFileError as exc:
        return zero, f"usage file ignored: {exc}"
    except OSError as exc:
        return zero, f"usage file ignored: cannot read it: {exc.strerror or exc}"
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return zero, f"usage file ignored: not JSON ({_one_line(str(exc))})"
    try:
        return _usage_from(data), None
    except _UsageFileError as exc:
        return zero, f"usage file ignored: {exc}"


class _UsageFileError(Exception):
    """A usage file that is present but unusable; the message says why."""


def _read_bounded(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _UsageFileError("it is a symbolic link") from None
        raise
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _UsageFileError("not a regular file")
        data = f.read(MAX_USAGE_FILE + 1)
    if len(data) > MAX_USAGE_FILE:
        raise _UsageFileError(f"larger than {MAX_USAGE_FILE // 1024} KiB")
    return data


def _usage_from(data: Any) -> Usage:
    if not isinstance(data, dict):
        raise _UsageFileError(f"expected a JSON object, got {type(data).__name__}")
    values: dict[str, Any] = {}
    if data.get("account") is not None:
        try:
            values.update(shares=account.checked(data["account"]), shares_from="exec")
        except ValueError as exc:
            raise _UsageFileError(str(exc)) from None
    for key in _USAGE_FIELDS:
        if key not in data or data[key] is None:
            continue
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _UsageFileError(f"{key} must be a number, got {_short(value)}")
        if not math.isfinite(value) or value < 0:
            raise _UsageFileError(
                f"{key} must be a non-negative finite number, got {_short(value)}"
            )
        if key in _TOKEN_FIELDS:
            if value != int(value):
                raise _UsageFileError(f"{key} must be a whole number, got {_short(value)}")
            if value > _MAX_TOKENS:
                raise _UsageFileError(f"{key} is implausibly large: {_short(value)}")
            values[key] = int(value)
        else:
            values[key] = float(value)
    return Usage(self_reported=True, **values)


def _short(value: Any) -> str:
    try:
        text = repr(value) if isinstance(value, float) else json.dumps(value)
    except (ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 200 else line[:197] + "..."
