"""Claude Code (`claude`) as an agent: one long-lived stream-JSON process per session.

Argv (cwd = the workspace)::

    claude --print --input-format stream-json --output-format stream-json --verbose
           --session-id <fresh uuid4> --permission-mode bypassPermissions
           --permission-prompt-tool stdio --model MODEL [--effort EFFORT]
           [--json-schema SCHEMA] [--plugin-dir DIR (the flow's skill, agents/skills.py)]

Each ask is one `{"type":"user",...}` line on stdin; the turn ends at the next `result` event,
and is failed when it says `is_error`, a `subtype` other than `success`, or a
`terminal_reason` other than `completed`. A repair is another user line in the same process
(or, if the process died, `--resume <id>` instead of `--session-id`). Permission prompts that
still arrive as `control_request` lines are allowed, except AskUserQuestion, which is denied
with "nobody is there to answer": the session is unattended.

Usage: `total_cost_usd` and `modelUsage` are running totals per process, so a turn costs the
difference. The account's usage shares a `rate_limit_event` gives ride with it
(agents/account.py). Usage-limit results ("Weekly limit reached ∙ resets 5am") become `limited`;
overloads and rate limits are retried with back-off. Must not touch run state.
"""

from __future__ import annotations

import json
import os
import uuid
from collections import deque
from datetime import datetime
from typing import Any

from flamechase.agents import account
from flamechase.agents.backend import Session, SpawnHook, TurnRequest, Usage
from flamechase.agents.clisession import (
    CliBackend,
    CliSession,
    Verdict,
    as_dict,
    as_float,
    as_int,
    as_list,
    as_str,
    clip,
    loads,
)
from flamechase.agents.efforts import SpecLike
from flamechase.agents.limits import RetryPolicy, find_usage_limit, from_epoch, is_transient
from flamechase.agents.usage import RunningTotals, TokenCounts, priced

__all__ = ["ClaudeBackend", "ClaudeSession", "ClaudeTurn", "parse_stream"]

_UNATTENDED = (
    "No user is available to answer questions in this session. Decide on your own, state "
    "the assumption you made, and carry on."
)
_TRANSIENT_STATUSES = {429, 500, 502, 503, 504, 529}


class ClaudeTurn:
    """Reads the stream-JSON events of one ask; pure, so recorded streams can be replayed."""

    def __init__(self) -> None:
        self.result: dict[str, Any] | None = None
        self.session_id = ""
        self.model = ""
        self.texts: deque[str] = deque(maxlen=8)
        # Error-ish texts seen on the way (a subagent stopped by a limit, a rejected window).
        self.notes: deque[str] = deque(maxlen=8)
        self.rejected_reset: float | None = None
        self.shares: dict[str, float] = {}  # the account's usage, as the stream reports it

    @property
    def done(self) -> bool:
        return self.result is not None

    def feed(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """Take one event; return a control_response to write back, if it asks for one."""
        kind = obj.get("type")
        if kind == "result":
            origin = as_str(as_dict(obj.get("origin")).get("kind"))
            # A background task's own follow-up result is not the answer to our prompt; its
            # spend still shows up in the next result's running totals.
            if origin != "task-notification":
                self.result = obj
        elif kind == "assistant":
            message = as_dict(obj.get("message"))
            for raw in as_list(message.get("content")):
                part = as_dict(raw)
                text = as_str(part.get("text"))
                if part.get("type") == "text" and text:
                    self.texts.append(text[:4000])
                    if as_str(message.get("model")) == "<synthetic>":
                        self.notes.append(text[:2000])
        elif kind == "system":
            sub = obj.get("subtype")
            if sub == "init":
                self.session_id = as_str(obj.get("session_id"))
                self.model = as_str(obj.get("model"))
            elif sub == "task_notification" and obj.get("status") == "failed":
                self.notes.append(as_str(obj.get("summary"))[:2000])
        elif kind == "rate_limit_event":
            info = as_dict(obj.get("rate_limit_info"))
            self.shares.update(account.from_claude(info))
            if info.get("status") == "rejected":
                self.rejected_reset = as_float(info.get("resetsAt"))
                self.notes.append(f"usage limit reached ({as_str(info.get('rateLimitType'))})")
        elif kind == "control_request":
            return _answer_control(obj)
        return None

    def verdict(self, totals: RunningTotals, model: str) -> Verdict:
        """The ask's outcome from its `result` (call only when `done`)."""
        res = self.result or {}
        usage = result_usage(res, totals, model).reporting(self.shares, "claude")
        text = as_str(res.get("result"))
        structured = res.get("structured_output")
        subtype = as_str(res.get("subtype"))
        terminal = as_str(res.get("terminal_reason"))
        failed = (
            res.get("is_error") is True
            or (subtype not in ("", "success"))
            or (terminal not in ("", "completed"))
        )
        if not failed:
            return Verdict("finished", usage=usage, text=text, structured=structured)
        errors = [as_str(e) for e in as_list(res.get("errors")) if as_str(e)]
        message = text or "; ".join(errors) or f"claude stopped: {subtype or terminal}"
        verdict = self._judge_error(message, res.get("api_error_status"))
        verdict.usage, verdict.text = usage, text
        return verdict

    def verdict_without_result(self, error: str, exit_code: int | None) -> Verdict:
        """The outcome when the stream ended with no result (crash, kill, excerpt)."""
        verdict = self._judge_error(error, None)
        verdict.exit_code = exit_code
        verdict.usage = verdict.usage.reporting(self.shares, "claude")
        return verdict

    def _judge_error(self, message: str, api_status: object) -> Verdict:
        notes = "\n".join(self.notes)
        hit = find_usage_limit(message) or find_usage_limit(notes)
        if hit is not None or self.rejected_reset is not None:
            resets_at: datetime | None
            if hit is not None and hit.reset_known:
                resets_at = hit.resets_at
            else:
                resets_at = from_epoch(self.rejected_reset) or (
                    hit.resets_at if hit is not None else None
                )
            shown = hit.message if hit is not None else "usage limit reached"
            return Verdict("limited", error=f"claude: {shown}", resets_at=resets_at)
        transient = (
            isinstance(api_status, int) and api_status in _TRANSIENT_STATUSES
        ) or is_transient(message)
        return Verdict("failed", error=f"claude: {clip(message)}", retry=transient)


def _answer_control(obj: dict[str, Any]) -> dict[str, Any]:
    """Reply to a control_request: allow tools (unattended), deny questions, refuse the rest."""
    request_id = obj.get("request_id")
    request = as_dict(obj.get("request"))
    if request.get("subtype") == "can_use_tool":
        if request.get("tool_name") == "AskUserQuestion":
            decision: dict[str, Any] = {"behavior": "deny", "message": _UNATTENDED}
        else:
            decision = {"behavior": "allow", "updatedInput": as_dict(request.get("input"))}
        return {
            "type": "control_response",
            "response": {"subtype": "success", "request_id": request_id, "response": decision},
        }
    return {
        "type": "control_response",
        "response": {
            "subtype": "error",
            "request_id": request_id,
            "error": f"flamechase does not handle {as_str(request.get('subtype')) or 'this'}",
        },
    }


def result_usage(res: dict[str, Any], totals: RunningTotals, model: str) -> Usage:
    """Per-ask usage from a result whose `total_cost_usd`/`modelUsage` are running totals."""
    tokens = TokenCounts()
    priced_cost: float | None = 0.0
    model_usage = as_dict(res.get("modelUsage"))
    if model_usage:
        for name, raw in model_usage.items():
            entry = as_dict(raw)
            delta = TokenCounts(
                totals.step_int(f"in:{name}", as_int(entry.get("inputTokens"))),
                totals.step_int(f"out:{name}", as_int(entry.get("outputTokens"))),
                totals.step_int(f"cr:{name}", as_int(entry.get("cacheReadInputTokens"))),
                totals.step_int(f"cw:{name}", as_int(entry.get("cacheCreationInputTokens"))),
            )
            tokens = tokens + delta
            cost = priced(name, delta)
            priced_cost = None if cost is None or priced_cost is None else priced_cost + cost
    else:
        # Older/sanitized results: `usage` is this result's own (not a running total).
        u = as_dict(res.get("usage"))
        tokens = TokenCounts(
            as_int(u.get("input_tokens")),
            as_int(u.get("output_tokens")),
            as_int(u.get("cache_read_input_tokens")),
            as_int(u.get("cache_creation_input_tokens")),
        )
        priced_cost = priced(model, tokens)
    reported = as_float(res.get("total_cost_usd"))
    cost_usd = totals.step("cost", reported) if reported is not None else (priced_cost or 0.0)
    return tokens.usage(cost_usd)


def parse_stream(lines: list[bytes], model: str = "") -> list[Verdict]:
    """Every ask's verdict in a recorded stream (the last one may have no result)."""
    totals = RunningTotals()
    out: list[Verdict] = []
    turn = ClaudeTurn()
    fed = False
    for line in lines:
        obj = loads(line)
        if obj is None:
            continue
        turn.feed(obj)
        fed = True
        if turn.done:
            out.append(turn.verdict(totals, model))
            turn, fed = ClaudeTurn(), False
    if fed:
        out.append(turn.verdict_without_result("claude's output ended before a result", None))
    return out


class ClaudeSession(CliSession):
    program = "claude"
    continues = True

    def __init__(
        self,
        request: TurnRequest,
        on_spawn: SpawnHook,
        retry: RetryPolicy,
        spec: SpecLike,
    ) -> None:
        super().__init__(request, on_spawn, retry)
        self.spec = spec
        self.session_id = str(uuid.uuid4())
        self._launched = False
        self.totals = RunningTotals()
        self._turn: ClaudeTurn | None = None

    def argv(self) -> list[str]:
        argv = [
            "claude",
            "--print",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
        ]
        argv += ["--resume" if self._launched else "--session-id", self.session_id]
        # Claude refuses bypassPermissions as root unless IS_SANDBOX is exactly "1"; acceptEdits
        # plus our allow-everything answers on the stdio permission tool is the same in effect.
        sandbox_flag = self.request.env.get("IS_SANDBOX", os.environ.get("IS_SANDBOX"))
        root = hasattr(os, "geteuid") and os.geteuid() == 0 and sandbox_flag != "1"
        argv += ["--permission-mode", "acceptEdits" if root else "bypassPermissions"]
        argv += ["--permission-prompt-tool", "stdio"]
        if self.spec.model:
            argv += ["--model", self.spec.model]
        if self.spec.effort:
            argv += ["--effort", self.spec.effort]
        if self.request.result_schema is not None:
            argv += ["--json-schema", json.dumps(self.request.result_schema)]
        if self.request.skill is not None:
            argv += self.request.skill.argv
        return argv

    async def _attempt(self, prompt: str, deadline: float) -> Verdict:
        if self.proc is None or self.proc.exited:
            await self._drop_proc()
            argv = self.argv()
            # Background tasks outlive the turn and answer with extra results; a flow's turn
            # must end when its answer does.
            extra = {"CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1"}
            await self._start(argv, stdin=True, extra_env=extra)
            self._launched = True
            self.totals.reset()  # a new process counts from zero
        turn = self._turn = ClaudeTurn()
        content = [{"type": "text", "text": prompt}]
        await self._write({"type": "user", "message": {"role": "user", "content": content}})
        while not turn.done:
            line = await self._read(deadline)
            if line is None:
                break
            obj = loads(line)
            if obj is None:
                continue
            reply = turn.feed(obj)
            if reply is not None:
                await self._write(reply)
        if turn.done:
            return turn.verdict(self.totals, self.spec.model)
        code = await self._exit_code()
        verdict = turn.verdict_without_result(self._ended_early(code), code)
        await self._drop_proc()
        return verdict


class ClaudeBackend(CliBackend):
    cli = "claude"
    reports_cost = True  # every result carries total_cost_usd

    def open(self, request: TurnRequest, on_spawn: SpawnHook) -> Session:
        return ClaudeSession(request, on_spawn, self.retry, self.spec)
