"""The four wire dialects: parse a request into a Conversation, render a Step as SSE events
(or one JSON answer), and render a Fault as the vendor's own error response.

Shapes follow each vendor's public API reference and what the pinned CLIs send; every error
body carries the vendor's real wording, because the CLIs (and flamechase after them) judge
errors by it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from tests.realcli.script import (
    CallTool,
    Conversation,
    Fault,
    Say,
    Shell,
    Step,
    Usage,
    WriteFile,
)

# A step for a cut stream: something long enough to cut in the middle.
CUT_STEP: Step = Say("This answer will not arrive whole. " * 8)


def _sse(data: dict[str, Any], event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n"


def _strings(value: Any) -> str:
    """Every text of a content value (a string, or a list of parts with text)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_strings(v) for v in value)
    if isinstance(value, dict):
        for key in ("text", "content", "output"):
            if key in value:
                return _strings(value[key])
    return ""


def _now_reset(fault: Fault) -> int:
    return fault.reset_epoch or int(time.time()) + 3 * 3600


class Dialect:
    name = ""

    def parse(self, body: dict[str, Any], path: str) -> Conversation:
        raise NotImplementedError

    def streams(self, body: dict[str, Any], path: str) -> bool:
        return body.get("stream") is True

    def events(self, step: Step, conv: Conversation, usage: Usage, n: int) -> Iterator[str]:
        raise NotImplementedError

    def whole(self, step: Step, conv: Conversation, usage: Usage, n: int) -> dict[str, Any]:
        raise NotImplementedError

    def fault(self, fault: Fault) -> tuple[int, dict[str, str], dict[str, Any]]:
        raise NotImplementedError


# ---- Anthropic Messages (claude) ------------------------------------------------------------


class Anthropic(Dialect):
    name = "anthropic"

    def parse(self, body: dict[str, Any], path: str) -> Conversation:
        prompts: list[str] = []
        results: list[str] = []
        for message in body.get("messages") or []:
            if not isinstance(message, dict) or message.get("role") != "user":
                continue
            content = message.get("content")
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            tool = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
            if tool:
                results += [_strings(b.get("content")) for b in tool]
            else:
                prompts.append(_strings(blocks))
                results = []
        tools = [t.get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)]
        return Conversation(self.name, str(body.get("model", "")), prompts, results, tools)

    def _blocks(self, step: Step, n: int) -> list[dict[str, Any]]:
        if isinstance(step, WriteFile):
            return [
                {
                    "type": "tool_use",
                    "id": f"toolu_{n:04d}",
                    "name": "Write",
                    "input": {"file_path": step.path, "content": step.content},
                }
            ]
        if isinstance(step, Shell):
            return [
                {
                    "type": "tool_use",
                    "id": f"toolu_{n:04d}",
                    "name": "Bash",
                    "input": {"command": step.command, "description": "write the report"},
                }
            ]
        if isinstance(step, CallTool):
            return [
                {"type": "tool_use", "id": f"toolu_{n:04d}", "name": step.name, "input": step.args}
            ]
        assert isinstance(step, Say)
        return [{"type": "text", "text": step.text}]

    def _usage(self, usage: Usage) -> dict[str, int]:
        return {
            "input_tokens": usage.input,
            "output_tokens": usage.output,
            "cache_read_input_tokens": usage.cache_read,
            "cache_creation_input_tokens": usage.cache_write,
        }

    def events(self, step: Step, conv: Conversation, usage: Usage, n: int) -> Iterator[str]:
        blocks = self._blocks(step, n)
        start_usage = {**self._usage(usage), "output_tokens": 1}
        yield _sse(
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_{n:04d}",
                    "type": "message",
                    "role": "assistant",
                    "model": conv.model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                },
            },
            "message_start",
        )
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                yield _sse(
                    {
                        "type": "content_block_start",
                        "index": i,
                        "content_block": {"type": "text", "text": ""},
                    },
                    "content_block_start",
                )
                text = block["text"]
                for part in (text[: len(text) // 2], text[len(text) // 2 :]):
                    yield _sse(
                        {
                            "type": "content_block_delta",
                            "index": i,
                            "delta": {"type": "text_delta", "text": part},
                        },
                        "content_block_delta",
                    )
            else:
                yield _sse(
                    {
                        "type": "content_block_start",
                        "index": i,
                        "content_block": {**block, "input": {}},
                    },
                    "content_block_start",
                )
                yield _sse(
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {
                            "type": "input_json_delta",
                            "partial_json": json.dumps(block["input"]),
                        },
                    },
                    "content_block_delta",
                )
            yield _sse({"type": "content_block_stop", "index": i}, "content_block_stop")
        stop = "tool_use" if blocks[0]["type"] == "tool_use" else "end_turn"
        yield _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": self._usage(usage),
            },
            "message_delta",
        )
        yield _sse({"type": "message_stop"}, "message_stop")

    def whole(self, step: Step, conv: Conversation, usage: Usage, n: int) -> dict[str, Any]:
        blocks = self._blocks(step, n)
        stop = "tool_use" if blocks[0]["type"] == "tool_use" else "end_turn"
        return {
            "id": f"msg_{n:04d}",
            "type": "message",
            "role": "assistant",
            "model": conv.model,
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": self._usage(usage),
        }

    def fault(self, fault: Fault) -> tuple[int, dict[str, str], dict[str, Any]]:
        if fault.kind == "rate_limit":
            return (
                429,
                {"retry-after": str(fault.retry_after)},
                {
                    "type": "error",
                    "error": {
                        "type": "rate_limit_error",
                        "message": "This request would exceed the rate limit for your organization of "  # noqa: E501
                        "50 requests per minute. For details, refer to "
                        "https://docs.claude.com/en/api/rate-limits.",
                    },
                },
            )
        if fault.kind == "overloaded":
            return (
                529,
                {},
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            )
        if fault.kind == "usage_limit":
            reset = _now_reset(fault)
            # Subscription wording (see /work/shared/reference/cli-streams); claude shows it
            # as "API Error: Request rejected (429) · <message>".
            when = time.strftime("%I:%M%p", time.gmtime(reset)).lstrip("0").lower()
            message = f"You've hit your session limit · resets {when} (UTC)"
            return (
                429,
                {
                    "anthropic-ratelimit-unified-status": "rejected",
                    "anthropic-ratelimit-unified-reset": str(reset),
                    "anthropic-ratelimit-unified-representative-claim": "five_hour",
                    "anthropic-ratelimit-unified-5h-status": "rejected",
                    "anthropic-ratelimit-unified-5h-reset": str(reset),
                    "retry-after": "3600",
                },
                {"type": "error", "error": {"type": "rate_limit_error", "message": message}},
            )
        return (
            500,
            {},
            {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}},
        )


# ---- OpenAI Responses (codex) ---------------------------------------------------------------


_CODEX_CONTEXT = ("<environment_context", "<user_instructions", "# AGENTS.md")


class Responses(Dialect):
    name = "responses"

    def parse(self, body: dict[str, Any], path: str) -> Conversation:
        prompts: list[str] = []
        results: list[str] = []
        for item in body.get("input") or []:
            if not isinstance(item, dict):
                continue
            kind = item.get("type", "message")
            if kind == "message" and item.get("role") == "user":
                text = _strings(item.get("content"))
                if text.lstrip().startswith(_CODEX_CONTEXT):
                    continue  # codex's own context messages, not what the user asked
                prompts.append(text)
                results = []
            elif kind.endswith("_output"):
                results.append(_strings(item.get("output")))
        tools = []
        for t in body.get("tools") or []:
            if isinstance(t, dict):
                tools.append(str(t.get("name") or t.get("type") or ""))
        self.tool_kinds = {
            str(t.get("name")): str(t.get("type"))
            for t in body.get("tools") or []
            if isinstance(t, dict)
        }
        return Conversation(self.name, str(body.get("model", "")), prompts, results, tools)

    def _item(self, step: Step, conv: Conversation, n: int) -> dict[str, Any]:
        call_id = f"call_{n:04d}"
        tools = set(conv.tools)
        if isinstance(step, WriteFile) and "apply_patch" in tools:
            lines = "".join(f"+{line}\n" for line in step.content.splitlines() or [""])
            patch = f"*** Begin Patch\n*** Add File: {step.path}\n{lines}*** End Patch\n"
            if self.tool_kinds.get("apply_patch") == "custom":
                return {
                    "type": "custom_tool_call",
                    "id": f"ctc_{n:04d}",
                    "call_id": call_id,
                    "name": "apply_patch",
                    "input": patch,
                    "status": "completed",
                }
            return self._function(call_id, n, "apply_patch", {"input": patch})
        if isinstance(step, WriteFile):
            body = step.content.replace("'", "'\\''")
            step = Shell(f"printf '%s' '{body}' > {step.path}")
        if isinstance(step, Shell):
            if "exec_command" in tools:
                return self._function(call_id, n, "exec_command", {"cmd": step.command})
            if "shell_command" in tools:
                return self._function(call_id, n, "shell_command", {"command": step.command})
            return self._function(call_id, n, "shell", {"command": ["bash", "-lc", step.command]})
        if isinstance(step, CallTool):
            return self._function(call_id, n, step.name, step.args)
        assert isinstance(step, Say)
        return {
            "type": "message",
            "id": f"msg_{n:04d}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": step.text, "annotations": []}],
        }

    @staticmethod
    def _function(call_id: str, n: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "function_call",
            "id": f"fc_{n:04d}",
            "call_id": call_id,
            "name": name,
            "arguments": json.dumps(args),
            "status": "completed",
        }

    def _usage(self, usage: Usage) -> dict[str, Any]:
        total_in = usage.input + usage.cache_read + usage.cache_write
        return {
            "input_tokens": total_in,
            "input_tokens_details": {
                "cached_tokens": usage.cache_read,
                "cache_write_tokens": usage.cache_write,
            },
            "output_tokens": usage.output,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": total_in + usage.output,
        }

    def _response(
        self,
        n: int,
        conv: Conversation,
        status: str,
        output: list[Any],
        usage: dict[str, Any] | None,
    ) -> dict[str, Any]:
        return {
            "id": f"resp_{n:04d}",
            "object": "response",
            "created_at": int(time.time()),
            "status": status,
            "model": conv.model,
            "output": output,
            "usage": usage,
        }

    def events(self, step: Step, conv: Conversation, usage: Usage, n: int) -> Iterator[str]:
        item = self._item(step, conv, n)
        yield _sse(
            {
                "type": "response.created",
                "response": self._response(n, conv, "in_progress", [], None),
            },
            "response.created",
        )
        yield _sse(
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "status": "in_progress"},
            },
            "response.output_item.added",
        )
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield _sse(
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "delta": text,
                },
                "response.output_text.delta",
            )
        yield _sse(
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            "response.output_item.done",
        )
        yield _sse(
            {
                "type": "response.completed",
                "response": self._response(n, conv, "completed", [item], self._usage(usage)),
            },
            "response.completed",
        )

    def whole(self, step: Step, conv: Conversation, usage: Usage, n: int) -> dict[str, Any]:
        return self._response(n, conv, "completed", [self._item(step, conv, n)], self._usage(usage))

    def fault(self, fault: Fault) -> tuple[int, dict[str, str], dict[str, Any]]:
        if fault.kind == "rate_limit":
            return (
                429,
                {"retry-after": str(fault.retry_after)},
                {
                    "error": {
                        "message": "Rate limit reached for gpt-5 in organization org-test on tokens per "  # noqa: E501
                        "min (TPM): Limit 30000, Used 30000, Requested 1200. Please try "
                        f"again in {fault.retry_after}s.",
                        "type": "tokens",
                        "param": None,
                        "code": "rate_limit_exceeded",
                    }
                },
            )
        if fault.kind == "overloaded":
            return (
                503,
                {},
                {
                    "error": {
                        "message": "The server is overloaded or not ready yet.",
                        "type": "server_error",
                        "code": "server_is_overloaded",
                    }
                },
            )
        if fault.kind == "usage_limit":
            reset = _now_reset(fault)
            return (
                429,
                {},
                {
                    "error": {
                        "type": "usage_limit_reached",
                        "message": "The usage limit has been reached",
                        "plan_type": "plus",
                        "resets_at": reset,
                        "resets_in_seconds": max(1, reset - int(time.time())),
                    }
                },
            )
        return (
            500,
            {},
            {
                "error": {
                    "message": "The server had an error while processing your request.",
                    "type": "server_error",
                }
            },
        )


# ---- OpenAI Chat Completions (opencode) ------------------------------------------------------


class ChatCompletions(Dialect):
    name = "chat"

    def parse(self, body: dict[str, Any], path: str) -> Conversation:
        prompts: list[str] = []
        results: list[str] = []
        for message in body.get("messages") or []:
            if not isinstance(message, dict):
                continue
            role = message.get("role")
            if role == "user":
                prompts.append(_strings(message.get("content")))
                results = []
            elif role == "tool":
                results.append(_strings(message.get("content")))
        tools = [
            str((t.get("function") or {}).get("name", ""))
            for t in body.get("tools") or []
            if isinstance(t, dict)
        ]
        return Conversation(self.name, str(body.get("model", "")), prompts, results, tools)

    def _delta(self, step: Step, n: int) -> tuple[dict[str, Any], str]:
        if isinstance(step, Say):
            return {"role": "assistant", "content": step.text}, "stop"
        if isinstance(step, WriteFile):
            name, args = "write", {"filePath": step.path, "content": step.content}
        elif isinstance(step, Shell):
            name, args = "bash", {"command": step.command, "description": "write the report"}
        else:
            assert isinstance(step, CallTool)
            name, args = step.name, step.args
        call = {
            "index": 0,
            "id": f"call_{n:04d}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"

    def _usage(self, usage: Usage) -> dict[str, Any]:
        prompt = usage.input + usage.cache_read + usage.cache_write
        return {
            "prompt_tokens": prompt,
            "completion_tokens": usage.output,
            "total_tokens": prompt + usage.output,
            "prompt_tokens_details": {"cached_tokens": usage.cache_read},
        }

    def events(self, step: Step, conv: Conversation, usage: Usage, n: int) -> Iterator[str]:
        delta, finish = self._delta(step, n)
        base = {
            "id": f"chatcmpl-{n:04d}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": conv.model,
        }
        if isinstance(step, Say):
            text = step.text
            for part in (text[: len(text) // 2], text[len(text) // 2 :]):
                yield f"data: {json.dumps({**base, 'choices': [{'index': 0, 'delta': {'content': part}, 'finish_reason': None}]})}\n\n"  # noqa: E501
        else:
            yield f"data: {json.dumps({**base, 'choices': [{'index': 0, 'delta': delta, 'finish_reason': None}]})}\n\n"  # noqa: E501
        yield f"data: {json.dumps({**base, 'choices': [{'index': 0, 'delta': {}, 'finish_reason': finish}]})}\n\n"  # noqa: E501
        yield f"data: {json.dumps({**base, 'choices': [], 'usage': self._usage(usage)})}\n\n"
        yield "data: [DONE]\n\n"

    def whole(self, step: Step, conv: Conversation, usage: Usage, n: int) -> dict[str, Any]:
        delta, finish = self._delta(step, n)
        if "tool_calls" in delta:
            delta["tool_calls"] = [
                {k: v for k, v in c.items() if k != "index"} for c in delta["tool_calls"]
            ]
        return {
            "id": f"chatcmpl-{n:04d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": conv.model,
            "choices": [{"index": 0, "message": delta, "finish_reason": finish}],
            "usage": self._usage(usage),
        }

    def fault(self, fault: Fault) -> tuple[int, dict[str, str], dict[str, Any]]:
        if fault.kind == "usage_limit":
            reset = _now_reset(fault)
            # opencode retries a 429 five times, waiting what retry-after-ms says.
            return (
                429,
                {"retry-after-ms": "0"},
                {
                    "error": {
                        "message": "You've hit your usage limit. Upgrade to Pro or try again at "
                        + time.strftime("%I:%M %p", time.localtime(reset))
                        + ".",
                        "type": "usage_limit_reached",
                        "code": "usage_limit_reached",
                    }
                },
            )
        return Responses().fault(fault)


# ---- Gemini (gemini) ------------------------------------------------------------------------


class Gemini(Dialect):
    name = "gemini"

    def streams(self, body: dict[str, Any], path: str) -> bool:
        return ":streamGenerateContent" in path

    def parse(self, body: dict[str, Any], path: str) -> Conversation:
        prompts: list[str] = []
        results: list[str] = []
        for content in body.get("contents") or []:
            if not isinstance(content, dict) or content.get("role", "user") != "user":
                continue
            parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
            responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
            if responses:
                results += [json.dumps(r.get("response")) for r in responses]
            else:
                prompts.append("\n".join(str(p.get("text", "")) for p in parts))
                results = []
        tools = []
        for tool in body.get("tools") or []:
            for decl in (tool or {}).get("functionDeclarations") or []:
                tools.append(str(decl.get("name", "")))
        model = path.split("/models/", 1)[-1].split(":", 1)[0]
        config = body.get("generationConfig") or {}
        wants_json = config.get("responseMimeType") == "application/json"
        return Conversation(self.name, model, prompts, results, tools, wants_json)

    def _parts(self, step: Step) -> list[dict[str, Any]]:
        if isinstance(step, WriteFile):
            return [
                {
                    "functionCall": {
                        "name": "write_file",
                        "args": {"file_path": step.path, "content": step.content},
                    }
                }
            ]
        if isinstance(step, Shell):
            return [
                {
                    "functionCall": {
                        "name": "run_shell_command",
                        "args": {"command": step.command, "description": "write the report"},
                    }
                }
            ]
        if isinstance(step, CallTool):
            return [{"functionCall": {"name": step.name, "args": step.args}}]
        assert isinstance(step, Say)
        return [{"text": step.text}]

    def _usage(self, usage: Usage) -> dict[str, int]:
        prompt = usage.input + usage.cache_read + usage.cache_write
        return {
            "promptTokenCount": prompt,
            "candidatesTokenCount": usage.output,
            "totalTokenCount": prompt + usage.output,
            "cachedContentTokenCount": usage.cache_read,
        }

    def _answer(
        self,
        parts: list[dict[str, Any]],
        conv: Conversation,
        usage: dict[str, int] | None,
        finish: str | None,
    ) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        out: dict[str, Any] = {
            "candidates": [candidate],
            "modelVersion": conv.model,
            "responseId": "scripted",
        }
        if usage:
            out["usageMetadata"] = usage
        return out

    def events(self, step: Step, conv: Conversation, usage: Usage, n: int) -> Iterator[str]:
        parts = self._parts(step)
        if isinstance(step, Say):
            text = step.text
            yield f"data: {json.dumps(self._answer([{'text': text[: len(text) // 2]}], conv, None, None))}\r\n\r\n"  # noqa: E501
            parts = [{"text": text[len(text) // 2 :]}]
        yield f"data: {json.dumps(self._answer(parts, conv, self._usage(usage), 'STOP'))}\r\n\r\n"

    def whole(self, step: Step, conv: Conversation, usage: Usage, n: int) -> dict[str, Any]:
        return self._answer(self._parts(step), conv, self._usage(usage), "STOP")

    def fault(self, fault: Fault) -> tuple[int, dict[str, str], dict[str, Any]]:
        if fault.kind == "rate_limit":
            return (
                429,
                {"retry-after": str(fault.retry_after)},
                {
                    "error": {
                        "code": 429,
                        "status": "RESOURCE_EXHAUSTED",
                        "message": "Resource has been exhausted (e.g. check quota).",
                    }
                },
            )
        if fault.kind == "overloaded":
            return (
                503,
                {},
                {
                    "error": {
                        "code": 503,
                        "status": "UNAVAILABLE",
                        "message": "The model is overloaded. Please try again later.",
                    }
                },
            )
        if fault.kind == "usage_limit":
            return (
                429,
                {},
                {
                    "error": {
                        "code": 429,
                        "status": "RESOURCE_EXHAUSTED",
                        "message": "Quota exceeded for quota metric 'Generate Content API requests per "  # noqa: E501
                        "day' and limit 'GenerateContent request limit per day' of service "
                        "'generativelanguage.googleapis.com' for consumer "
                        "'project_number:1'.",
                        "details": [
                            {
                                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                                "violations": [
                                    {
                                        "quotaMetric": "generativelanguage.googleapis.com/"
                                        "generate_content_requests_per_day",
                                        "quotaId": "GenerateRequestsPerDayPerProject",
                                    }
                                ],
                            }
                        ],
                    }
                },
            )
        return (
            500,
            {},
            {
                "error": {
                    "code": 500,
                    "status": "INTERNAL",
                    "message": "An internal error has occurred.",
                }
            },
        )


_DIALECTS = {
    "anthropic": Anthropic,
    "responses": Responses,
    "chat": ChatCompletions,
    "gemini": Gemini,
}


def for_path(path: str) -> Dialect | None:
    """The dialect serving `path` (a fresh instance per request: they keep per-request state)."""
    route = path.split("?", 1)[0]
    if route.endswith("/v1/messages"):
        return Anthropic()
    if route.endswith("/responses"):
        return Responses()
    if route.endswith("/chat/completions"):
        return ChatCompletions()
    if "/models/" in route and (":streamGenerateContent" in route or ":generateContent" in route):
        return Gemini()
    return None
