#!/usr/bin/env python3
"""Fake ACP agent (`fake-acp`): Agent Client Protocol v1, JSON-RPC 2.0 over stdio.

Requires `initialize` (protocolVersion 1) first; offers `loadSession`; `session/new` and
`session/load` need an absolute cwd and an `mcpServers` list; `session/prompt` streams
`session/update` notifications (message chunks, a tool call, a `usage_update` with a running
cost) and answers `{stopReason: "end_turn", usage}`. See __init__.py for the scenarios.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from typing import Any

import fakelib as fl

CLI = "acp"


class Agent:
    def __init__(self) -> None:
        self.initialized = False
        self.sessions = fl.state_dir(CLI)
        self.cost = 0.0
        self.next_id = 500

    def send(self, obj: dict[str, Any]) -> None:
        fl.emit({"jsonrpc": "2.0", **obj})

    def read(self) -> dict[str, Any] | None:
        line = sys.stdin.readline()
        if not line:
            return None
        try:
            msg = json.loads(line)
        except ValueError:
            fl.die(CLI, f"stdin line is not JSON: {line[:80]!r}")
        fl.log(CLI, {"stdin": msg})
        if msg.get("jsonrpc") != "2.0":
            fl.die(CLI, f"not JSON-RPC 2.0: {line[:120]!r}")
        return msg

    def reply(self, rid: Any, result: Any) -> None:
        self.send({"id": rid, "result": result})

    def error(self, rid: Any, code: int, message: str) -> None:
        self.send({"id": rid, "error": {"code": code, "message": message}})

    def update(self, sid: str, update: dict[str, Any]) -> None:
        self.send({"method": "session/update", "params": {"sessionId": sid, "update": update}})

    def handle(self, msg: dict[str, Any]) -> None:
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if method is None or rid is None:
            return
        if method == "initialize":
            if params.get("protocolVersion") != 1:
                return self.error(rid, -32602, "unsupported protocolVersion")
            self.initialized = True
            return self.reply(
                rid,
                {
                    "protocolVersion": 1,
                    "agentCapabilities": {"loadSession": True, "promptCapabilities": {}},
                    "authMethods": [],
                },
            )
        if not self.initialized:
            return self.error(rid, -32600, "initialize first")
        if method in ("session/new", "session/load"):
            if not os.path.isabs(params.get("cwd", "")) or not isinstance(
                params.get("mcpServers"), list
            ):
                return self.error(rid, -32602, f"{method}: cwd must be absolute, mcpServers a list")
            if method == "session/load":
                sid = params.get("sessionId", "")
                if not (self.sessions / f"{sid}.json").exists():
                    return self.error(rid, -32602, f"unknown session {sid}")
                return self.reply(rid, None)
            sid = f"sess_{uuid.uuid4().hex[:12]}"
            (self.sessions / f"{sid}.json").write_text(json.dumps({"asks": 0}))
            return self.reply(rid, {"sessionId": sid, **self.model_offer()})
        if method in ("session/set_config_option", "session/set_model"):
            return self.set_model(rid, method, params)
        if method == "session/prompt":
            return self.prompt(rid, params)
        self.error(rid, -32601, f"method not found: {method}")

    def model_offer(self) -> dict[str, Any]:
        """FAKE_ACP_MODELS=config: a `model` config option (opencode's way); =models: the
        session's models (gemini's way); unset: no model selection at all."""
        how = os.environ.get("FAKE_ACP_MODELS", "")
        options = [{"value": m, "name": m} for m in ("small", "large")]
        if how == "config":
            return {
                "configOptions": [
                    {
                        "id": "model",
                        "name": "Model",
                        "category": "model",
                        "type": "select",
                        "currentValue": "small",
                        "options": options,
                    }
                ]
            }
        if how == "models":
            return {
                "models": {
                    "currentModelId": "small",
                    "availableModels": [{"modelId": m, "name": m} for m in ("small", "large")],
                }
            }
        return {}

    def set_model(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        value = (
            params.get("value") if method == "session/set_config_option" else params.get("modelId")
        )
        if value not in ("small", "large"):
            return self.error(rid, -32602, f"unknown model {value!r}")
        return self.reply(rid, {} if method == "session/set_model" else {"configOptions": []})

    def prompt(self, rid: Any, params: dict[str, Any]) -> None:
        sid = params.get("sessionId", "")
        state = self.sessions / f"{sid}.json"
        if not state.exists():
            return self.error(rid, -32602, f"unknown session {sid}")
        blocks = params.get("prompt")
        if not isinstance(blocks, list) or not blocks or blocks[0].get("type") != "text":
            return self.error(rid, -32602, "prompt must be a list of content blocks")
        asks = json.loads(state.read_text())["asks"]
        state.write_text(json.dumps({"asks": asks + 1}))
        name = fl.scenario(CLI, asks)
        if name == "hang":
            fl.hang()
        if name == "crash":
            self.update(
                sid,
                {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hm"}},
            )
            raise SystemExit(9)
        if name == "limit":
            return self.error(
                rid, -32000, "You've hit your session limit · resets 11:30am (Europe/Budapest)"
            )
        if name == "ratelimit":
            return self.error(rid, -32000, "API Error: 529 Overloaded")
        if name == "error":
            return self.error(rid, -32603, "Internal error: model refused the request")
        if name == "garbage":
            fl.garbage()
        if name.startswith("sleep:"):
            time.sleep(fl.sleep_seconds(name))
        if name == "permission":
            self.permission(sid)
        self.update(
            sid,
            {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "Writing "},
            },
        )
        self.update(
            sid,
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "c1",
                "title": "Write report",
                "kind": "edit",
                "status": "completed",
            },
        )
        if name != "noreport":
            fl.write_report()
        self.update(
            sid,
            {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "the report."},
            },
        )
        self.cost += 0.01
        self.update(
            sid,
            {
                "sessionUpdate": "usage_update",
                "used": 1200,
                "size": 200000,
                "cost": {"amount": self.cost, "currency": "USD"},
            },
        )
        usage = {
            "inputTokens": 200,
            "outputTokens": 30,
            "cachedReadTokens": 1000,
            "cachedWriteTokens": 0,
            "totalTokens": 1230,
        }
        self.reply(rid, {"stopReason": "end_turn", "usage": usage})
        return None

    def permission(self, sid: str) -> None:
        self.next_id += 1
        rid = self.next_id
        options = [
            {"optionId": "deny", "name": "Reject", "kind": "reject_once"},
            {"optionId": "yes", "name": "Allow once", "kind": "allow_once"},
        ]
        call = {"toolCallId": "c0", "title": "Run tests", "kind": "execute", "status": "pending"}
        self.send(
            {
                "id": rid,
                "method": "session/request_permission",
                "params": {"sessionId": sid, "toolCall": call, "options": options},
            }
        )
        while True:
            msg = self.read()
            if msg is None:
                raise SystemExit(0)
            if msg.get("id") == rid and "method" not in msg:
                outcome = (msg.get("result") or {}).get("outcome", {})
                if outcome.get("optionId") != "yes":
                    fl.die(CLI, f"permission not granted: {msg!r}")
                return
            self.handle(msg)


def main() -> None:
    argv = sys.argv[1:]
    fl.log_start(CLI, argv)
    if argv:
        fl.die(CLI, f"no arguments expected, got {argv!r}")
    if fl.scenario(CLI, 0) == "exit1":
        fl.die(CLI, "cannot start: missing API key", 1)
    agent = Agent()
    while True:
        msg = agent.read()
        if msg is None:
            return
        agent.handle(msg)


if __name__ == "__main__":
    main()
