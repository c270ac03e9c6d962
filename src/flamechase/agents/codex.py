"""Codex CLI (`codex`) as an agent: `codex app-server`, JSON-RPC over stdio, one per session.

Argv (cwd = the workspace): `codex app-server`. Messages, one JSON object per line (codex
omits the `"jsonrpc": "2.0"` member, and so do we)::

    → initialize {clientInfo}            ← {userAgent, ...}
    → initialized (notification)
    → thread/start {cwd, model, approvalPolicy: "never", sandbox, developerInstructions?}
                                         ← {thread: {id}}
    → turn/start {threadId, input: [{type: "text", text}], model, effort?, approvalPolicy,
                  sandboxPolicy, outputSchema?}         ← {turn: {id, status: "inProgress"}}
    ← item/*, thread/tokenUsage/updated, error, ... until turn/completed {turn: {status}}

A repair is another `turn/start` on the same thread (after a crash, `thread/resume` in a new
server first). A turn flamechase confines itself (`TurnRequest.writable` set) runs with codex's
own sandbox off: its bubblewrap cannot start inside that confinement. Every other turn runs
under codex's workspace-write sandbox with the workspace and the turn's own files writable.
Approval requests, which `approvalPolicy: never` should prevent, are accepted.

Usage: `tokenUsage.total` is a running total per thread (input includes cached tokens), so a
turn costs the difference, priced from the table: codex reports no cost. The account's usage
shares of `account/rateLimits/updated` ride with it (agents/account.py). The parser also reads
`codex exec --json` events (`turn.completed`, `turn.failed`, ...), the form of the recorded
streams in the tests. Must not touch run state.
"""

from __future__ import annotations

import json
from collections import deque
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flamechase.agents import account
from flamechase.agents.backend import Session, SpawnHook, TurnRequest, Usage
from flamechase.agents.clisession import (
    CliBackend,
    Verdict,
    as_dict,
    as_float,
    as_int,
    as_str,
    clip,
    loads,
)
from flamechase.agents.efforts import SpecLike
from flamechase.agents.limits import (
    DEFAULT_WAIT,
    RetryPolicy,
    find_usage_limit,
    from_epoch,
    is_transient,
    parse_reset,
)
from flamechase.agents.rpc import RpcError, RpcSession, unsupported
from flamechase.agents.usage import RunningTotals, TokenCounts, priced

__all__ = ["CodexBackend", "CodexSession", "CodexTurn", "parse_stream"]

CLIENT_INFO = {"name": "flamechase", "title": "flamechase", "version": "0.1.0"}


class CodexTurn:
    """Reads one turn's notifications (app-server) or events (`exec --json`); pure."""

    def __init__(self, totals: RunningTotals, model: str, *, want_json: bool = False) -> None:
        self.totals = totals
        self.model = model
        self.want_json = want_json
        self.turn_id = ""
        self.thread_id = ""
        self.done = False
        self.status = ""
        self.error = ""
        self.error_info = ""
        self.errors: deque[str] = deque(maxlen=6)
        self.text = ""
        self.tokens = TokenCounts()
        self.limit_reset: float | None = None
        self.shares: dict[str, float] = {}  # the account's usage, as codex reports it

    # -- feeding --

    def feed(self, obj: dict[str, Any]) -> None:
        """One message: a JSON-RPC notification `{method, params}` or an exec event `{type}`."""
        method = obj.get("method")
        if isinstance(method, str):
            self._notification(method, as_dict(obj.get("params")))
        elif isinstance(obj.get("type"), str):
            self._exec_event(as_str(obj.get("type")), obj)

    def _notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "item/completed":
            item = as_dict(params.get("item"))
            if item.get("type") == "agentMessage" and self._ours(params):
                self.text = as_str(item.get("text"))[:1_000_000]
        elif method == "thread/tokenUsage/updated":
            self._token_usage(params)
        elif method == "error":
            if params.get("willRetry") is True:
                return  # codex is retrying by itself; only the final word counts
            err = as_dict(params.get("error"))
            self.errors.append(as_str(err.get("message")) or json.dumps(params)[:500])
            info = err.get("codexErrorInfo")
            if info is not None:
                self.error_info = json.dumps(info)[:300]
        elif method == "account/rateLimits/updated":
            self._rate_limits(as_dict(params.get("rateLimits")))
        elif method == "turn/completed":
            turn = as_dict(params.get("turn"))
            thread_id = as_str(params.get("threadId"))
            if (self.turn_id and as_str(turn.get("id")) not in ("", self.turn_id)) or (
                self.thread_id and thread_id and thread_id != self.thread_id
            ):
                return  # another turn (a sub-agent thread): not ours
            self.done = True
            self.status = as_str(turn.get("status")) or "completed"
            err = as_dict(turn.get("error"))
            self.error = as_str(err.get("message"))
            info = err.get("codexErrorInfo")
            if info is not None:
                self.error_info = json.dumps(info)[:300]

    def _ours(self, params: dict[str, Any]) -> bool:
        """Whether a notification belongs to our turn (not a sub-agent's thread or turn)."""
        turn_id = as_str(params.get("turnId"))
        thread_id = as_str(params.get("threadId"))
        if self.thread_id and thread_id and thread_id != self.thread_id:
            return False
        return not (self.turn_id and turn_id and turn_id != self.turn_id)

    def _token_usage(self, params: dict[str, Any]) -> None:
        usage = as_dict(params.get("tokenUsage"))
        thread = as_str(params.get("threadId")) or self.thread_id or "thread"
        total = as_dict(usage.get("total"))
        if total:
            self._add_total(
                thread,
                as_int(total.get("inputTokens")),
                as_int(total.get("cachedInputTokens")),
                as_int(total.get("cacheWriteInputTokens")),
                as_int(total.get("outputTokens")),
            )
        else:
            last = as_dict(usage.get("last"))
            inp, cached = as_int(last.get("inputTokens")), as_int(last.get("cachedInputTokens"))
            written = as_int(last.get("cacheWriteInputTokens"))
            self.tokens = self.tokens + TokenCounts(
                max(0, inp - cached - written), as_int(last.get("outputTokens")), cached, written
            )

    def _add_total(self, thread: str, inp: int, cached: int, written: int, out: int) -> None:
        """Add the growth of a thread's running totals (codex input includes cached tokens)."""
        d_in = self.totals.step_int(f"{thread}:in", inp)
        d_cached = self.totals.step_int(f"{thread}:cached", cached)
        d_written = self.totals.step_int(f"{thread}:written", written)
        d_out = self.totals.step_int(f"{thread}:out", out)
        self.tokens = self.tokens + TokenCounts(
            max(0, d_in - d_cached - d_written), d_out, d_cached, d_written
        )

    def _rate_limits(self, limits: dict[str, Any]) -> None:
        self.shares.update(account.from_codex(limits))
        for window in ("primary", "secondary"):
            w = as_dict(limits.get(window))
            used = as_float(w.get("usedPercent"))
            reset = as_float(w.get("resetsAt"))
            if used is not None and used >= 100 and reset is not None:
                self.limit_reset = reset

    def _exec_event(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "thread.started":
            self.thread_id = as_str(obj.get("thread_id"))
        elif kind == "item.completed":
            item = as_dict(obj.get("item"))
            if item.get("type") == "agent_message":
                self.text = as_str(item.get("text"))[:1_000_000]
        elif kind == "error":
            self.errors.append(as_str(obj.get("message")))
        elif kind == "turn.completed":
            u = as_dict(obj.get("usage"))
            self._add_total(
                self.thread_id or "thread",
                as_int(u.get("input_tokens")),
                as_int(u.get("cached_input_tokens")),
                as_int(u.get("cache_write_input_tokens")),
                as_int(u.get("output_tokens")),
            )
            self.done, self.status = True, "completed"
        elif kind == "turn.failed":
            self.done, self.status = True, "failed"
            self.error = as_str(as_dict(obj.get("error")).get("message"))

    # -- judging --

    def usage(self) -> Usage:
        cost = priced(self.model, self.tokens) or 0.0
        return self.tokens.usage(cost).reporting(self.shares, "codex")

    def verdict(self) -> Verdict:
        usage = self.usage()
        if self.status == "completed":
            structured = self._structured() if self.want_json else None
            return Verdict("finished", usage=usage, text=self.text, structured=structured)
        if self.status == "interrupted":
            return Verdict("interrupted", usage=usage, error="codex: the turn was interrupted")
        message = self.error or (self.errors[-1] if self.errors else "") or "the turn failed"
        verdict = judge_error(message, self.error_info, self.limit_reset, self.errors)
        verdict.usage, verdict.text = usage, self.text
        return verdict

    def _structured(self) -> Any:
        """The final message as JSON when the turn had an outputSchema, else None."""
        obj = loads(self.text)
        return obj


def judge_error(
    message: str,
    error_info: str = "",
    limit_reset: float | None = None,
    earlier: deque[str] | None = None,
) -> Verdict:
    """A failed codex turn: a usage limit, a transient error worth retrying, or a failure."""
    context = "\n".join([message, *(earlier or ())])
    hit = find_usage_limit(context)
    info = error_info.lower().replace("_", "")
    if hit is not None or "usagelimit" in info:
        resets_at = hit.resets_at if hit is not None and hit.reset_known else None
        resets_at = resets_at or from_epoch(limit_reset) or parse_reset(context)
        # A limit that does not say when it reopens is looked at again after a while.
        resets_at = resets_at or (hit.resets_at if hit else datetime.now(UTC) + DEFAULT_WAIT)
        shown = hit.message if hit is not None else clip(message, 300)
        return Verdict("limited", error=f"codex: {shown}", resets_at=resets_at)
    transient = (
        is_transient(message)
        or "overloaded" in info
        or any(f'"httpstatuscode": {code}' in info for code in (429, 500, 502, 503, 504, 529))
    )
    return Verdict("failed", error=f"codex: {clip(message)}", retry=transient)


def parse_stream(lines: list[bytes], model: str = "") -> list[Verdict]:
    """Every turn's verdict in a recorded stream (`exec --json` or app-server messages)."""
    totals = RunningTotals()
    out: list[Verdict] = []
    turn = CodexTurn(totals, model)
    fed = False
    thread = ""
    for line in lines:
        obj = loads(line)
        if obj is None:
            continue
        turn.feed(obj)
        thread = turn.thread_id or thread
        fed = True
        if turn.done:
            out.append(turn.verdict())
            turn, fed = CodexTurn(totals, model), False
            turn.thread_id = thread
    if fed:
        end = turn.verdict() if turn.errors else None
        out.append(end or Verdict("failed", error="codex's output ended before the turn did"))
    return out


class CodexSession(RpcSession):
    program = "codex"
    continues = True
    jsonrpc_header = False  # the app-server omits it on the wire

    def __init__(
        self, request: TurnRequest, on_spawn: SpawnHook, retry: RetryPolicy, spec: SpecLike
    ) -> None:
        super().__init__(request, on_spawn, retry)
        self.spec = spec
        self.thread_id: str | None = None
        self._ready = False
        self.totals = RunningTotals()
        self._turn: CodexTurn | None = None

    def argv(self) -> list[str]:
        return ["codex", "app-server"]

    def _thread_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "cwd": str(self.request.workspace),
            "approvalPolicy": "never",
            "sandbox": "danger-full-access" if self.confined else "workspace-write",
        }
        if self.spec.model:
            params["model"] = self.spec.model
        if self.request.skill is not None and self.request.skill.instructions:
            params["developerInstructions"] = self.request.skill.instructions  # the flow's skill
        return params

    @property
    def confined(self) -> bool:
        """Whether flamechase confines this turn itself. codex's own (bubblewrap) sandbox
        cannot start inside that confinement, so it is off there and on everywhere else."""
        return self.request.writable is not None

    def writable_roots(self) -> list[str]:
        """What codex's own sandbox lets an unconfined turn write: the workspace, the turn's
        files, and the flow's artifact root and checkpoint directory."""
        roots = [self.request.workspace, self.request.io_dir]
        for key in ("FLAMECHASE_ARTIFACTS", "FLAMECHASE_CHECKPOINT"):
            value = self.request.env.get(key)
            if value:
                path = Path(value)
                roots.append(path if key == "FLAMECHASE_ARTIFACTS" else path.parent)
        return list(dict.fromkeys(str(p) for p in roots))

    def _turn_params(self, prompt: str) -> dict[str, Any]:
        params: dict[str, Any] = {
            "threadId": self.thread_id,
            "input": [{"type": "text", "text": prompt}],
            "approvalPolicy": "never",
        }
        if self.spec.model:
            params["model"] = self.spec.model
        if self.spec.effort:
            params["effort"] = self.spec.effort
        if self.confined:
            params["sandboxPolicy"] = {"type": "dangerFullAccess"}
        else:
            params["sandboxPolicy"] = {
                "type": "workspaceWrite",
                "writableRoots": self.writable_roots(),
                "networkAccess": True,
            }
        if self.request.result_schema is not None:
            params["outputSchema"] = dict(self.request.result_schema)
        return params

    async def _attempt(self, prompt: str, deadline: float) -> Verdict:
        self._turn = None
        try:
            if self.proc is None or self.proc.exited:
                await self._drop_proc()
                await self._start(self.argv(), stdin=True)
                self._ready = False
                self.totals.reset()
            if not self._ready:
                await self._request("initialize", {"clientInfo": CLIENT_INFO}, deadline)
                await self._notify("initialized", {})
                if self.thread_id is None:
                    result = await self._request("thread/start", self._thread_params(), deadline)
                    self.thread_id = as_str(as_dict(as_dict(result).get("thread")).get("id"))
                else:
                    params = {"threadId": self.thread_id, **self._thread_params()}
                    await self._request("thread/resume", params, deadline)
                if not self.thread_id:
                    return Verdict("failed", error="codex: thread/start returned no thread id")
                self._ready = True
            turn = self._turn = CodexTurn(
                self.totals, self.spec.model, want_json=self.request.result_schema is not None
            )
            turn.thread_id = self.thread_id or ""
            result = await self._request("turn/start", self._turn_params(prompt), deadline)
            turn.turn_id = turn.turn_id or as_str(as_dict(as_dict(result).get("turn")).get("id"))
            while not turn.done:
                await self._dispatch(await self._next_message(deadline))
            return turn.verdict()
        except RpcError as exc:
            verdict = judge_error(exc.message, json.dumps(exc.data)[:300] if exc.data else "")
            verdict.usage = self._partial_usage()
            return verdict

    def _partial_usage(self) -> Usage:
        return self._turn.usage() if self._turn is not None else Usage()

    def _notified(self, method: str, params: dict[str, Any]) -> None:
        if self._turn is not None:
            if method == "turn/started" and not self._turn.turn_id:
                self._turn.turn_id = as_str(as_dict(params.get("turn")).get("id"))
            self._turn.feed({"method": method, "params": params})

    def _serve(self, method: str, params: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        # approvalPolicy "never" should mean no approvals are asked; if one comes anyway the
        # session is unattended, so the answer is yes (the README's security note says why).
        if method in ("item/commandExecution/requestApproval", "item/fileChange/requestApproval"):
            return {"decision": "accept"}, None
        if method in ("execCommandApproval", "applyPatchApproval"):
            return {"decision": "approved"}, None
        if method == "item/tool/requestUserInput":
            return {"answers": {}}, None
        return unsupported(method)


class CodexBackend(CliBackend):
    cli = "codex"

    def open(self, request: TurnRequest, on_spawn: SpawnHook) -> Session:
        return CodexSession(request, on_spawn, self.retry, self.spec)
