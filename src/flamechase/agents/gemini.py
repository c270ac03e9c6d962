"""Gemini CLI (`gemini`) as an agent: one headless run per ask, stream-JSON out.

Argv (cwd = the workspace; the prompt goes on stdin, which makes the run headless and avoids
argv length limits)::

    gemini --output-format stream-json --approval-mode yolo [--model MODEL]
           --include-directories IO_DIR [...] [--include-directories SKILL_DIR]
           [--resume SESSION_ID]

with GEMINI_CLI_TRUST_WORKSPACE=true (a headless run in an untrusted folder exits 55).
SKILL_DIR holds the flow's skill as a GEMINI.md context file (agents/skills.py).

Events, one JSON object per line: `init` (session_id, model), `message` (assistant text,
maybe in deltas), `tool_use`, `tool_result`, `error` (warnings and errors), and a final
`result` with `status` and `stats` (tokens, per model). Exit codes: 0 success, 1 error,
42 bad input, 53 turn limit. A repair reruns with `--resume <session_id from init>`, so the
conversation continues; without a session id it starts afresh. The parser also takes the
single pretty-printed object of `--output-format json` (`response`, `stats.models`).

Gemini CLI has no effort setting (any `:EFFORT` is refused before the run) and reports no
cost: tokens × the price table. A daily quota ("Quota exceeded … per day") is a usage limit
that reopens at midnight Pacific; other 429s are retried. Must not touch run state.
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
    as_int,
    as_str,
    clip,
    loads,
)
from flamechase.agents.efforts import SpecLike
from flamechase.agents.limits import RetryPolicy, find_usage_limit, is_transient
from flamechase.agents.turnio import turn_dirs
from flamechase.agents.usage import TokenCounts, priced

__all__ = ["GeminiBackend", "GeminiRun", "GeminiSession", "parse_stream"]

# Headless gemini (0.61+) refuses an untrusted folder with exit 55, and every turn's
# workspace is new to it; the variable trusts the workspace for this run only.
TRUST_ENV = {"GEMINI_CLI_TRUST_WORKSPACE": "true"}
_EXIT_MEANING = {42: "bad input (exit 42)", 53: "turn limit exceeded (exit 53)"}
_MAX_DOCUMENT = 4 * 1024 * 1024  # non-event output kept to try as one JSON document


class GeminiRun:
    """Reads one gemini run's output; pure, so recorded streams can be replayed."""

    def __init__(self, model: str = "") -> None:
        self.model = model
        self.session_id = ""
        self.done = False
        self.status = ""
        self.error = ""
        self.errors: deque[str] = deque(maxlen=6)
        self.parts: list[str] = []
        self._chars = 0
        self.response = ""
        self.usage = Usage()
        self._document: list[bytes] = []
        self._document_size = 0

    def feed_line(self, line: bytes) -> None:
        obj = loads(line)
        if obj is not None and ("type" in obj or "response" in obj or "stats" in obj):
            self.feed(obj)
        elif self._document_size < _MAX_DOCUMENT:
            # `--output-format json` prints one pretty-printed object over many lines.
            self._document.append(line)
            self._document_size += len(line)

    def finish(self) -> None:
        """End of output: try what was not an event as one JSON document."""
        if not self.done and self._document:
            obj = loads(b"\n".join(self._document))
            if obj is not None:
                self.feed(obj)
        self._document.clear()

    def feed(self, obj: dict[str, Any]) -> None:
        kind = obj.get("type")
        if kind == "init":
            self.session_id = as_str(obj.get("session_id")) or as_str(obj.get("sessionId"))
            self.model = as_str(obj.get("model")) or self.model
        elif kind == "message":
            if obj.get("role") == "assistant":
                self._text(as_str(obj.get("content")), delta=obj.get("delta") is True)
        elif kind == "error":
            message = as_str(obj.get("message"))
            if obj.get("severity") != "warning" and message:
                self.errors.append(message)
        elif kind == "result":
            self.done = True
            self.status = as_str(obj.get("status")) or "success"
            err = obj.get("error")
            self.error = as_str(as_dict(err).get("message")) or as_str(err)
            self.usage = self._usage(as_dict(obj.get("stats")))
        elif kind is None and ("response" in obj or "stats" in obj or "error" in obj):
            self.done = True
            err = as_dict(obj.get("error"))
            self.status = "error" if err else "success"
            self.error = as_str(err.get("message"))
            self.response = as_str(obj.get("response"))
            self.usage = self._usage(as_dict(obj.get("stats")))

    def _text(self, text: str, *, delta: bool) -> None:
        if not text or self._chars > 1_000_000:
            return
        if not delta and self.parts:
            self.parts.append("\n")
        self.parts.append(text)
        self._chars += len(text)

    @property
    def text(self) -> str:
        return self.response or "".join(self.parts)

    def _usage(self, stats: dict[str, Any]) -> Usage:
        models = as_dict(stats.get("models"))
        total = TokenCounts()
        cost = 0.0
        entries = [(name, as_dict(v)) for name, v in models.items()] if models else []
        if not entries and stats:
            entries = [(self.model, stats)]
        for name, entry in entries:
            tokens = _tokens(entry)
            total = total + tokens
            cost += priced(name, tokens) or priced(self.model, tokens) or 0.0
        return total.usage(cost)

    def verdict(self, exit_code: int | None, stderr: str = "") -> Verdict:
        ok = self.done and self.status == "success" and not self.error
        if ok and exit_code in (0, None):
            return Verdict("finished", usage=self.usage, text=self.text, exit_code=exit_code)
        if self.error:
            message = self.error
        elif self.errors:
            message = self.errors[-1]
        elif exit_code in _EXIT_MEANING:
            message = _EXIT_MEANING[exit_code or 0]
        elif not self.done:
            message = "the output ended before a result"
        else:
            message = f"the run ended with status {self.status!r}"
        if exit_code not in (0, None) and not self.done:
            message = f"gemini exited with code {exit_code}: {message}"
        context = "\n".join([message, *self.errors, stderr])
        hit = find_usage_limit(context)
        if hit is not None:
            return Verdict(
                "limited",
                usage=self.usage,
                error=f"gemini: {hit.message}",
                resets_at=hit.resets_at,
                exit_code=exit_code,
            )
        return Verdict(
            "failed",
            usage=self.usage,
            error=f"gemini: {clip(message)}" + (f"; stderr: {stderr}" if stderr else ""),
            text=self.text,
            exit_code=exit_code,
            retry=is_transient(context),
        )


def _tokens(entry: dict[str, Any]) -> TokenCounts:
    """Token counts from a stats block of either output format (input includes cached)."""
    nested = as_dict(entry.get("tokens"))
    if nested:  # --output-format json: prompt, candidates, cached, thoughts, tool
        cached = as_int(nested.get("cached"))
        prompt = as_int(nested.get("prompt"))
        return TokenCounts(
            max(0, prompt - cached) + as_int(nested.get("tool")),
            as_int(nested.get("candidates")) + as_int(nested.get("thoughts")),
            cached,
            0,
        )
    cached = as_int(entry.get("cached"))
    if "input" in entry:
        uncached = as_int(entry.get("input"))
    else:
        uncached = max(0, as_int(entry.get("input_tokens")) - cached)
    return TokenCounts(uncached, as_int(entry.get("output_tokens")), cached, 0)


def parse_stream(lines: list[bytes], model: str = "", exit_code: int | None = 0) -> list[Verdict]:
    """Every run's verdict in a recorded file (runs are separated by their `result`)."""
    out: list[Verdict] = []
    run = GeminiRun(model)
    fed = False
    for line in lines:
        if not line.strip():
            continue
        run.feed_line(line)
        fed = True
        if run.done:
            out.append(run.verdict(exit_code))
            run, fed = GeminiRun(model), False
    if fed:
        run.finish()
        out.append(run.verdict(exit_code if run.done else None))
    return out


class GeminiSession(CliSession):
    program = "gemini"
    continues = True

    def __init__(
        self, request: TurnRequest, on_spawn: SpawnHook, retry: RetryPolicy, spec: SpecLike
    ) -> None:
        super().__init__(request, on_spawn, retry)
        self.spec = spec
        self.session_id: str | None = None
        self._run: GeminiRun | None = None

    def argv(self) -> list[str]:
        argv = ["gemini", "--output-format", "stream-json", "--approval-mode", "yolo"]
        if self.spec.model:
            argv += ["--model", self.spec.model]
        # Gemini's file tools refuse paths outside its workspace: the turn's own files (report,
        # artifacts, checkpoint) live in the run directory, so they are added as workspaces.
        for directory in turn_dirs(self.request):
            argv += ["--include-directories", directory]
        if self.request.skill is not None:
            argv += self.request.skill.argv  # the flow's skill: a context file's directory
        if self.session_id:
            argv += ["--resume", self.session_id]
        return argv

    async def _attempt(self, prompt: str, deadline: float) -> Verdict:
        await self._drop_proc()
        run = self._run = GeminiRun(self.spec.model)
        code = await self._run_once(
            self.argv(), prompt, deadline, run.feed_line, extra_env=TRUST_ENV
        )
        run.finish()
        stderr = self.stderr_tail() if not (run.done and code == 0) else ""
        if run.done and run.status == "success":
            # Only a run that answered left a session to resume: after a failed first request
            # (a rate limit) `--resume` would find none and exit 42.
            self.session_id = run.session_id or self.session_id
        self.continues = self.session_id is not None
        if not run.done and code is not None and code < 0:
            verdict = Verdict("failed", usage=run.usage, error=self._ended_early(code))
            verdict.exit_code = code
        else:
            verdict = run.verdict(code, stderr)
        await self._drop_proc()
        return verdict

    def _partial_usage(self) -> Usage:
        return self._run.usage if self._run is not None else Usage()


class GeminiBackend(CliBackend):
    cli = "gemini"

    def open(self, request: TurnRequest, on_spawn: SpawnHook) -> Session:
        return GeminiSession(request, on_spawn, self.retry, self.spec)
