"""Any Agent Client Protocol agent (`acp:COMMAND`): JSON-RPC 2.0 over stdio, one per session.

Argv: `shlex.split(COMMAND)` (cwd = the workspace). Messages, one JSON object per line::

    → initialize {protocolVersion: 1, clientCapabilities: {fs: {readTextFile: false,
                  writeTextFile: false}, terminal: false}, clientInfo}
    → session/new {cwd, mcpServers: []}             ← {sessionId}
    → session/prompt {sessionId, prompt: [{type: "text", text}]}
    ← session/update {sessionId, update: {sessionUpdate: "agent_message_chunk" | "tool_call"
                      | "usage_update" | ...}} ...
                                                    ← {stopReason, usage?}

`end_turn`, `max_tokens` and `max_turn_requests` end the turn (the engine then judges the
report), `cancelled` is an interruption, `refusal` a failure. A repair is another
session/prompt in the same session; after a crash, `session/load` when the agent offers it.
Permission requests are answered with the agent's allow option (the session is unattended);
we offer no file system or terminal, so the agent uses its own tools.

Spend is whatever the agent reports, marked self-reported: the prompt response's `usage`
(tokens of this turn) and `usage_update.cost` (a running total in USD); without a cost,
tokens × the price of MODEL when known. The model part of the spec is otherwise only a label.
Must not touch run state.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections import deque
from typing import Any

from flamechase.agents.backend import Session, SpawnHook, TurnRequest, Usage
from flamechase.agents.clisession import (
    CliBackend,
    Verdict,
    as_dict,
    as_float,
    as_int,
    as_list,
    as_str,
    clip,
)
from flamechase.agents.efforts import SpecLike, check_effort
from flamechase.agents.gemini import TRUST_ENV as GEMINI_TRUST
from flamechase.agents.limits import RetryPolicy, find_usage_limit, is_transient
from flamechase.agents.rpc import RpcError, RpcSession, unsupported
from flamechase.agents.turnio import turn_dirs
from flamechase.agents.usage import RunningTotals, TokenCounts, load_prices, price_for, priced
from flamechase.errors import BackendUnavailable

__all__ = ["AcpBackend", "AcpSession", "AcpTurn"]

PROTOCOL_VERSION = 1
CLIENT_INFO = {"name": "flamechase", "title": "flamechase", "version": "0.1.0"}
_FINISHED = ("end_turn", "max_tokens", "max_turn_requests")


class AcpTurn:
    """Reads one prompt turn's session updates and its response; pure."""

    def __init__(self, totals: RunningTotals, model: str) -> None:
        self.totals = totals
        self.model = model
        self.chunks: list[str] = []
        self._chars = 0
        self.cost: float | None = None
        self.tokens = TokenCounts()
        self.stop_reason = ""
        self.errors: deque[str] = deque(maxlen=4)
        self.priced_cost: float | None = None

    def update(self, update: dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            content = as_dict(update.get("content"))
            text = as_str(content.get("text"))
            if content.get("type") == "text" and text and self._chars < 1_000_000:
                self.chunks.append(text)
                self._chars += len(text)
        elif kind == "usage_update":
            cost = as_dict(update.get("cost"))
            amount = as_float(cost.get("amount"))
            if amount is not None and as_str(cost.get("currency")).upper() in ("", "USD"):
                self.cost = (self.cost or 0.0) + self.totals.step("cost", amount)

    def respond(self, result: dict[str, Any]) -> None:
        self.stop_reason = as_str(result.get("stopReason"))
        u = as_dict(result.get("usage"))
        quota = as_dict(as_dict(result.get("_meta")).get("quota"))
        if not u and quota:
            self._quota(quota)
        if u:
            cached_read = as_int(u.get("cachedReadTokens"))
            cached_write = as_int(u.get("cachedWriteTokens"))
            self.tokens = TokenCounts(
                as_int(u.get("inputTokens")),
                as_int(u.get("outputTokens")) + as_int(u.get("thoughtTokens")),
                cached_read,
                cached_write,
            )

    def _quota(self, quota: dict[str, Any]) -> None:
        """gemini --acp: `_meta.quota.model_usage[]` (tokens per model, input incl. cached)."""
        per_model = [as_dict(m) for m in as_list(quota.get("model_usage"))]
        entries = [(as_str(m.get("model")), as_dict(m.get("token_count"))) for m in per_model]
        if not entries:
            entries = [(self.model, as_dict(quota.get("token_count")))]
        cost: float | None = 0.0
        for name, count in entries:
            tokens = TokenCounts(
                as_int(count.get("input_tokens")), as_int(count.get("output_tokens"))
            )
            self.tokens = self.tokens + tokens
            price = priced(name or self.model, tokens)
            cost = None if price is None or cost is None else cost + price
        if cost is not None and self.cost is None:
            self.priced_cost = cost

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    def usage(self) -> Usage:
        cost = self.cost if self.cost is not None else self.priced_cost
        if cost is None:
            cost = priced(self.model, self.tokens)
        return self.tokens.usage(cost or 0.0, self_reported=True)

    def verdict(self) -> Verdict:
        usage = self.usage()
        if self.stop_reason in _FINISHED:
            return Verdict("finished", usage=usage, text=self.text)
        if self.stop_reason == "cancelled":
            return Verdict("interrupted", usage=usage, error="the agent cancelled the turn")
        why = f"the agent stopped: {self.stop_reason or 'no stop reason'}"
        return Verdict("failed", usage=usage, error=why, text=self.text)


def judge_error(program: str, message: str) -> Verdict:
    hit = find_usage_limit(message)
    if hit is not None:
        return Verdict("limited", error=f"{program}: {hit.message}", resets_at=hit.resets_at)
    return Verdict("failed", error=f"{program}: {clip(message)}", retry=is_transient(message))


class AcpSession(RpcSession):
    continues = True
    jsonrpc_header = True

    def __init__(
        self,
        request: TurnRequest,
        on_spawn: SpawnHook,
        retry: RetryPolicy,
        spec: SpecLike,
        argv: list[str],
    ) -> None:
        super().__init__(request, on_spawn, retry)
        self.spec = spec
        self._argv = argv
        self.program = os.path.basename(argv[0])
        self.session_id: str | None = None
        self._ready = False
        self._can_load = False
        self.totals = RunningTotals()
        self._turn: AcpTurn | None = None

    async def _attempt(self, prompt: str, deadline: float) -> Verdict:
        self._turn = None
        try:
            if self.proc is None or self.proc.exited:
                await self._drop_proc()
                argv, env = self._launch()
                await self._start(argv, stdin=True, extra_env=env)
                self._ready = False
                self.totals.reset()
            if not self._ready:
                await self._handshake(deadline)
            turn = self._turn = AcpTurn(self.totals, self.spec.model)
            params = {"sessionId": self.session_id, "prompt": [{"type": "text", "text": prompt}]}
            result = await self._request("session/prompt", params, deadline)
            turn.respond(as_dict(result))
            return turn.verdict()
        except RpcError as exc:
            verdict = judge_error(self.program, exc.message)
            verdict.usage = self._partial_usage()
            return verdict

    async def _handshake(self, deadline: float) -> None:
        init = as_dict(
            await self._request(
                "initialize",
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "clientCapabilities": {
                        "fs": {"readTextFile": False, "writeTextFile": False},
                        "terminal": False,
                    },
                    "clientInfo": CLIENT_INFO,
                },
                deadline,
            )
        )
        self._can_load = as_dict(init.get("agentCapabilities")).get("loadSession") is True
        base = {"cwd": str(self.request.workspace), "mcpServers": []}
        if self.session_id is not None and self._can_load:
            # A restarted agent: reload the conversation so a repair keeps its context.
            await self._request("session/load", {"sessionId": self.session_id, **base}, deadline)
        else:
            result = as_dict(await self._request("session/new", base, deadline))
            self.session_id = as_str(result.get("sessionId"))
            if not self.session_id:
                raise RpcError("session/new", {"message": "the agent returned no sessionId"})
            if self.spec.model:
                await self._select_model(result, deadline)
        self._ready = True

    async def _select_model(self, offer: dict[str, Any], deadline: float) -> None:
        """Choose the spec's model the way the agent offers: a config option of category
        `model` (opencode), or the session's `models` (gemini)."""
        model = self.spec.model
        for raw in as_list(offer.get("configOptions")):
            option = as_dict(raw)
            if option.get("category") == "model" and as_str(option.get("id")):
                params = {"sessionId": self.session_id, "configId": option["id"], "value": model}
                await self._request("session/set_config_option", params, deadline)
                return
        if as_dict(offer.get("models")):
            params = {"sessionId": self.session_id, "modelId": model}
            await self._request("session/set_model", params, deadline)
            return
        raise RpcError(
            "session/new",
            {
                "message": f"the agent offers no model selection, so "
                f"-m {model} cannot be honoured; drop it"
            },
        )

    def _launch(self) -> tuple[list[str], dict[str, str]]:
        """argv and extra environment: the command as given, plus what a known agent needs to
        work unattended on the turn's files (gemini: trust, and its file tools may write the
        turn directory, which lies outside the workspace)."""
        argv = list(self._argv)
        if self.program == "gemini":
            for directory in turn_dirs(self.request):
                argv += ["--include-directories", directory]
            return argv, dict(GEMINI_TRUST)
        return argv, {}

    def _partial_usage(self) -> Usage:
        return self._turn.usage() if self._turn is not None else Usage()

    def _notified(self, method: str, params: dict[str, Any]) -> None:
        ours = as_str(params.get("sessionId")) in ("", self.session_id)
        if method == "session/update" and self._turn is not None and ours:
            self._turn.update(as_dict(params.get("update")))

    def _serve(self, method: str, params: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        if method == "session/request_permission":
            options = [as_dict(o) for o in as_list(params.get("options"))]
            for kind in ("allow_always", "allow_once"):
                for option in options:
                    if option.get("kind") == kind and option.get("optionId") is not None:
                        chosen = {"outcome": "selected", "optionId": option["optionId"]}
                        return {"outcome": chosen}, None
            # No allow option: declining is the only answer left that is not a lie.
            return {"outcome": {"outcome": "cancelled"}}, None
        return unsupported(method)


class AcpBackend(CliBackend):
    cli = "acp"
    reports_cost = True  # self-reported: counted as the agent reports it
    # ACP agents report their own spend, if any (the run says so once at start).
    self_reported = True

    def __init__(self, spec: SpecLike, *, retry: RetryPolicy | None = None) -> None:
        super().__init__(spec, retry=retry)
        try:
            self.argv = shlex.split(spec.path or "")
        except ValueError:
            self.argv = []

    def check(self) -> None:
        check_effort(self.spec)
        if not self.argv:
            raise BackendUnavailable(f"{self.spec.text!r}: the ACP command is empty")
        program = self.argv[0]
        if shutil.which(program) is None:
            raise BackendUnavailable(
                f"{self.spec.text!r}: {program!r} is not found on PATH or not executable"
            )
        load_prices()

    def can_bound_cost(self) -> bool:
        """ACP agents report tokens at most (a cost only sometimes), so budget.cost can see
        their spend only when `-m MODEL` names a priced model."""
        try:
            return bool(self.spec.model) and price_for(self.spec.model) is not None
        except BackendUnavailable:
            return False

    def spend_notice(self, role: str) -> str | None:
        if self.can_bound_cost():
            return None
        what = (
            f"model {self.spec.model!r} has no price"
            if self.spec.model
            else "no -m MODEL names a priced model"
        )
        return (
            f"the spend of {role} ({self.spec.text}) cannot be seen: an ACP agent reports "
            f"tokens at most and {what}; budget.cost is refused, token budgets count what "
            "it reports"
        )

    def open(self, request: TurnRequest, on_spawn: SpawnHook) -> Session:
        return AcpSession(request, on_spawn, self.retry, self.spec, self.argv)
