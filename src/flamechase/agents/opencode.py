"""opencode (`opencode run`) as an agent: one non-interactive run per ask, JSON events out.

Argv (cwd = the workspace; the prompt goes on stdin, which `opencode run` reads when it is
not a terminal, so no prompt ever meets an argv length limit)::

    opencode run --format json --dangerously-skip-permissions [--model PROVIDER/MODEL]
                 [--variant EFFORT] [--session SESSION_ID]

with OPENCODE_CONFIG_CONTENT naming the flow's skill as an instructions file when the flow
has one for the role (agents/skills.py).

Events, one JSON object per line, each with `type`, `timestamp` and `sessionID`:
`step_start`, `text` (part.text), `tool_use`, `reasoning`, `step_finish` (part.tokens and
part.cost of that step), `error` (error.name, error.data.message) and, in newer versions,
`done`. The run exits when the session goes idle; exit code 1 after an error. A repair reruns
with `--session <sessionID>`, continuing the conversation.

opencode reports each step's cost (USD), which is used as is; tokens are summed per step
(`output` + `reasoning` count as output). The effort is passed as `--variant`, opencode's
provider-specific reasoning effort. Must not touch run state.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from flamechase.agents.backend import Session, SpawnHook, TurnRequest, Usage
from flamechase.agents.clisession import (
    CliBackend,
    CliSession,
    Verdict,
    as_dict,
    as_float,
    as_int,
    as_str,
    clip,
    loads,
)
from flamechase.agents.efforts import SpecLike
from flamechase.agents.limits import RetryPolicy, find_usage_limit, is_transient
from flamechase.agents.usage import TokenCounts, priced

__all__ = ["OpencodeBackend", "OpencodeRun", "OpencodeSession", "parse_stream"]

_TRANSIENT_STATUSES = {429, 500, 502, 503, 504, 529}


class OpencodeRun:
    """Reads one `opencode run --format json` output; pure, so recordings can be replayed."""

    def __init__(self, model: str = "") -> None:
        self.model = model
        self.session_id = ""
        self.done = False
        self.steps = 0
        self.finish_reason = ""
        self.tokens = TokenCounts()
        self.cost: float | None = None
        self.errors: deque[str] = deque(maxlen=6)
        self.retryable = False
        self.texts: deque[str] = deque(maxlen=16)

    def feed(self, obj: dict[str, Any]) -> None:
        self.session_id = as_str(obj.get("sessionID")) or self.session_id
        kind = obj.get("type")
        part = as_dict(obj.get("part"))
        if kind == "text":
            text = as_str(part.get("text"))
            if text:
                self.texts.append(text[:200_000])
        elif kind == "step_finish":
            self.steps += 1
            self.finish_reason = as_str(part.get("reason")) or self.finish_reason
            tokens = as_dict(part.get("tokens"))
            cache = as_dict(tokens.get("cache"))
            self.tokens = self.tokens + TokenCounts(
                as_int(tokens.get("input")),
                as_int(tokens.get("output")) + as_int(tokens.get("reasoning")),
                as_int(cache.get("read")),
                as_int(cache.get("write")),
            )
            cost = as_float(part.get("cost"))
            if cost is not None:
                self.cost = (self.cost or 0.0) + cost
        elif kind == "error":
            err = as_dict(obj.get("error"))
            data = as_dict(err.get("data"))
            message = as_str(data.get("message")) or as_str(err.get("name")) or "error"
            self.errors.append(message)
            status = data.get("statusCode")
            if data.get("isRetryable") is True or (
                isinstance(status, int) and status in _TRANSIENT_STATUSES
            ):
                self.retryable = True
        elif kind == "done":
            self.done = True

    @property
    def text(self) -> str:
        return "\n".join(self.texts)

    @property
    def usage(self) -> Usage:
        cost = self.cost if self.cost is not None else priced(self.model, self.tokens)
        return self.tokens.usage(cost or 0.0)

    def verdict(self, exit_code: int | None, stderr: str = "") -> Verdict:
        usage = self.usage
        if not self.errors and exit_code in (0, None):
            return Verdict("finished", usage=usage, text=self.text, exit_code=exit_code)
        message = self.errors[-1] if self.errors else f"opencode exited with code {exit_code}"
        context = "\n".join([*self.errors, stderr])
        hit = find_usage_limit(context)
        if hit is not None:
            return Verdict(
                "limited",
                usage=usage,
                error=f"opencode: {hit.message}",
                resets_at=hit.resets_at,
                exit_code=exit_code,
            )
        return Verdict(
            "failed",
            usage=usage,
            error=f"opencode: {clip(message)}" + (f"; stderr: {stderr}" if stderr else ""),
            text=self.text,
            exit_code=exit_code,
            retry=self.retryable or is_transient(context),
        )


def parse_stream(lines: list[bytes], model: str = "", exit_code: int | None = 0) -> list[Verdict]:
    """The verdict of a recorded run (one file = one run)."""
    run = OpencodeRun(model)
    for line in lines:
        obj = loads(line)
        if obj is not None:
            run.feed(obj)
    return [run.verdict(exit_code)]


class OpencodeSession(CliSession):
    program = "opencode"
    continues = True

    def __init__(
        self, request: TurnRequest, on_spawn: SpawnHook, retry: RetryPolicy, spec: SpecLike
    ) -> None:
        super().__init__(request, on_spawn, retry)
        self.spec = spec
        self.session_id: str | None = None
        self._run: OpencodeRun | None = None

    def argv(self) -> list[str]:
        argv = ["opencode", "run", "--format", "json", "--dangerously-skip-permissions"]
        if self.spec.model:
            argv += ["--model", self.spec.model]
        if self.spec.effort:
            argv += ["--variant", self.spec.effort]
        if self.session_id:
            argv += ["--session", self.session_id]
        return argv

    async def _attempt(self, prompt: str, deadline: float) -> Verdict:
        await self._drop_proc()
        run = self._run = OpencodeRun(self.spec.model)

        def feed(line: bytes) -> None:
            obj = loads(line)
            if obj is not None:
                run.feed(obj)

        # The flow's skill: an instructions file named in OPENCODE_CONFIG_CONTENT (skills.py).
        skill_env = self.request.skill.env if self.request.skill is not None else None
        code = await self._run_once(self.argv(), prompt, deadline, feed, extra_env=skill_env)
        stderr = self.stderr_tail() if (code != 0 or run.errors) else ""
        self.session_id = run.session_id or self.session_id
        self.continues = self.session_id is not None
        if code is not None and code < 0:
            verdict = Verdict("failed", usage=run.usage, error=self._ended_early(code))
            verdict.exit_code = code
        else:
            verdict = run.verdict(code, stderr)
        await self._drop_proc()
        return verdict

    def _partial_usage(self) -> Usage:
        return self._run.usage if self._run is not None else Usage()


class OpencodeBackend(CliBackend):
    cli = "opencode"
    reports_cost = True  # every step_finish carries the step's cost

    def open(self, request: TurnRequest, on_spawn: SpawnHook) -> Session:
        return OpencodeSession(request, on_spawn, self.retry, self.spec)
