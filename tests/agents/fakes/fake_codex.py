#!/usr/bin/env python3
"""Fake `codex`: `codex app-server`, JSON-RPC over stdio, as documented in codex-rs/app-server.

Requires `initialize` before anything else and then the `initialized` notification, keeps
threads (with a rollout file under $CODEX_HOME/sessions, as real codex does), answers
`turn/start` at once with an in-progress turn and then streams `turn/started`, `item/*`,
`thread/tokenUsage/updated` (running totals per thread) and `turn/completed`. Any other
subcommand but `--version` is refused. See __init__.py for the scenario variables.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import fakelib as fl

CLI = "codex"
VERSION = "codex-cli 0.160.1"
EFFORTS = {"ultra", "max", "xhigh", "high", "medium", "low", "minimal", "none"}
SANDBOXES = {"read-only", "workspace-write", "danger-full-access"}
LIMIT = (
    "You've hit your usage limit. To get more access now, send a request to your admin "
    "or try again at 12:16 PM."
)


class Server:
    def __init__(self) -> None:
        self.initialized = False
        self.acknowledged = False
        self.threads: dict[str, dict[str, int]] = {}
        self.next_id = 1000
        home = os.environ.get("CODEX_HOME")
        self.sessions = Path(home) / "sessions" if home else fl.state_dir(CLI) / "sessions"

    # -- wire --

    def send(self, obj: dict[str, Any]) -> None:
        fl.emit(obj)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"method": method, "params": params})

    def reply(self, rid: Any, result: Any) -> None:
        self.send({"id": rid, "result": result})

    def error(self, rid: Any, code: int, message: str) -> None:
        self.send({"id": rid, "error": {"code": code, "message": message}})

    def read(self) -> dict[str, Any] | None:
        line = sys.stdin.readline()
        if not line:
            return None
        try:
            msg = json.loads(line)
        except ValueError:
            fl.die(CLI, f"stdin line is not JSON: {line[:80]!r}")
        fl.log(CLI, {"stdin": msg})
        return msg

    # -- methods --

    def handle(self, msg: dict[str, Any]) -> None:
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if method is None:
            return  # a response to one of our requests, handled where it was awaited
        if rid is None:  # a notification
            if method == "initialized":
                self.acknowledged = True
            return
        if method == "initialize":
            if self.initialized:
                return self.error(rid, -32600, "Already initialized")
            if not isinstance(params.get("clientInfo"), dict):
                return self.error(rid, -32602, "initialize: clientInfo is required")
            self.initialized = True
            return self.reply(rid, {"userAgent": f"{params['clientInfo'].get('name')}/0.160.1"})
        if not self.initialized or not self.acknowledged:
            return self.error(rid, -32002, "Not initialized")
        if method == "thread/start":
            return self.thread_start(rid, params)
        if method == "thread/resume":
            tid = params.get("threadId")
            if tid not in self.threads and not self.rollout(tid).exists():
                return self.error(rid, -32600, f"no rollout found for thread id {tid}")
            self.threads.setdefault(tid, {"in": 0, "cached": 0, "out": 0})
            return self.reply(rid, {"thread": {"id": tid}})
        if method == "turn/start":
            return self.turn_start(rid, params)
        self.error(rid, -32601, f"unknown method {method}")

    def rollout(self, tid: str) -> Path:
        day = time.strftime("%Y/%m/%d")
        return self.sessions / day / f"rollout-2026-01-01T00-00-00-{tid}.jsonl"

    def thread_start(self, rid: Any, params: dict[str, Any]) -> None:
        if params.get("approvalPolicy") != "never":
            fl.die(CLI, f"flamechase must run unattended (approvalPolicy never): {params!r}")
        if params.get("sandbox") not in SANDBOXES:
            return self.error(rid, -32602, f"unknown sandbox {params.get('sandbox')!r}")
        cwd = params.get("cwd")
        if not isinstance(cwd, str) or not Path(cwd).is_dir():
            return self.error(rid, -32602, f"cwd {cwd!r} is not a directory")
        tid = str(uuid.uuid4())
        self.threads[tid] = {"in": 0, "cached": 0, "out": 0}
        rollout = self.rollout(tid)
        rollout.parent.mkdir(parents=True, exist_ok=True)
        rollout.touch()
        thread = {
            "id": tid,
            "preview": "",
            "modelProvider": "openai",
            "createdAt": int(time.time()),
        }
        self.reply(rid, {"thread": thread})
        self.notify("thread/started", {"thread": thread})

    def turn_start(self, rid: Any, params: dict[str, Any]) -> None:
        tid = params.get("threadId")
        if tid not in self.threads:
            return self.error(rid, -32600, f"thread not found: {tid}")
        inputs = params.get("input")
        if not isinstance(inputs, list) or not inputs or inputs[0].get("type") != "text":
            return self.error(rid, -32602, "turn/start: input must be a list of text items")
        if "effort" in params and params["effort"] not in EFFORTS:
            return self.error(rid, -32602, f"unknown variant {params['effort']!r}")
        # Asks are counted per thread across servers, so a resumed thread goes on counting.
        counter = fl.state_dir(CLI) / f"{tid}.asks"
        asks = int(counter.read_text()) if counter.exists() else 0
        counter.write_text(str(asks + 1))
        name = fl.scenario(CLI, asks)
        turn_id = f"turn_{uuid.uuid4().hex[:8]}"
        self.reply(
            rid, {"turn": {"id": turn_id, "status": "inProgress", "items": [], "error": None}}
        )
        ids = {"threadId": tid, "turnId": turn_id}
        self.notify(
            "turn/started",
            {"threadId": tid, "turn": {"id": turn_id, "status": "inProgress", "items": []}},
        )
        if name == "hang":
            fl.hang()
        if name == "crash":
            self.item("agentMessage", ids, text="Starting…")
            sys.stderr.write("thread 'main' panicked at codex-rs/core/src/codex.rs:1\n")
            raise SystemExit(101)
        if name.startswith("replay:"):
            return self.replay(name, tid, turn_id)
        if name.startswith("limits:"):  # recorded app-server notifications, then a turn
            for line in fl.replay_lines(name):
                fl.emit_raw(line + b"\n")
        if name in ("limit", "ratelimit", "error"):
            message = {
                "limit": LIMIT,
                "ratelimit": "exceeded retry limit, last status: 429 Too Many Requests, "
                "request id: 9c84b52ce87fbe62-SJC",
                "error": '{"type":"error","status":400,"error":{"type":"invalid_request_error",'
                '"message":"bad model"}}',
            }[name]
            info: Any = {
                "limit": "usageLimitExceeded",
                "ratelimit": {"responseTooManyFailedAttempts": {"httpStatusCode": 429}},
                "error": "badRequest",
            }[name]
            error = {"message": message, "codexErrorInfo": info, "additionalDetails": None}
            self.notify("error", {**ids, "error": error, "willRetry": False})
            self.complete(tid, turn_id, "failed", error)
            return None
        if name == "garbage":
            fl.garbage()
        if name.startswith("sleep:"):
            time.sleep(fl.sleep_seconds(name))
        if name == "permission":
            self.approval(ids)
        text = "Done: fake turn."
        if name == "structured" and isinstance(params.get("outputSchema"), dict):
            text = json.dumps(fl.report())
        elif name != "noreport":
            fl.write_report()
        self.item("agentMessage", ids, text=text)
        self.usage(tid, turn_id, 1000, 800, 50)
        self.complete(tid, turn_id, "completed", None)
        return None

    def item(self, kind: str, ids: dict[str, str], **fields: Any) -> None:
        item = {"type": kind, "id": f"item_{uuid.uuid4().hex[:6]}", **fields}
        self.notify("item/started", {**ids, "item": item})
        self.notify("item/completed", {**ids, "item": item})

    def usage(self, tid: str, turn_id: str, inp: int, cached: int, out: int) -> None:
        totals = self.threads[tid]
        totals["in"] += inp
        totals["cached"] += cached
        totals["out"] += out
        total = {
            "inputTokens": totals["in"],
            "cachedInputTokens": totals["cached"],
            "outputTokens": totals["out"],
            "reasoningOutputTokens": 0,
            "totalTokens": totals["in"] + totals["out"],
        }
        last = {"inputTokens": inp, "cachedInputTokens": cached, "outputTokens": out}
        self.notify(
            "thread/tokenUsage/updated",
            {"threadId": tid, "turnId": turn_id, "tokenUsage": {"total": total, "last": last}},
        )

    def complete(self, tid: str, turn_id: str, status: str, error: Any) -> None:
        turn = {"id": turn_id, "status": status, "items": [], "error": error}
        self.notify("turn/completed", {"threadId": tid, "turn": turn})

    def approval(self, ids: dict[str, str]) -> None:
        """A server-to-client approval request; the client must answer before we go on."""
        self.next_id += 1
        rid = self.next_id
        self.send(
            {
                "id": rid,
                "method": "item/commandExecution/requestApproval",
                "params": {**ids, "itemId": "item_cmd", "command": "true", "reason": "test"},
            }
        )
        while True:
            msg = self.read()
            if msg is None:
                raise SystemExit(0)
            if msg.get("id") == rid and "method" not in msg:
                if msg.get("result", {}).get("decision") not in ("accept", "acceptForSession"):
                    fl.die(CLI, f"approval not granted: {msg!r}")
                return
            self.handle(msg)

    def replay(self, name: str, tid: str, turn_id: str) -> None:
        """Translate a recorded `codex exec --json` stream into app-server notifications."""
        ids = {"threadId": tid, "turnId": turn_id}
        finished = False
        for raw in fl.replay_lines(name):
            try:
                ev = json.loads(raw)
            except ValueError:
                fl.emit_raw(raw + b"\n")
                continue
            kind = ev.get("type")
            if kind == "item.completed" and ev.get("item", {}).get("type") == "agent_message":
                self.item("agentMessage", ids, text=ev["item"].get("text", ""))
            elif kind == "error":
                error = {"message": ev.get("message", "")}
                self.notify("error", {**ids, "error": error, "willRetry": False})
            elif kind == "turn.completed":
                u = ev.get("usage", {})
                self.threads[tid] = {"in": 0, "cached": 0, "out": 0}
                self.usage(
                    tid,
                    turn_id,
                    u.get("input_tokens", 0),
                    u.get("cached_input_tokens", 0),
                    u.get("output_tokens", 0),
                )
                self.complete(tid, turn_id, "completed", None)
                finished = True
                break
            elif kind == "turn.failed":
                self.complete(tid, turn_id, "failed", ev.get("error"))
                finished = True
                break
        if not finished:
            raise SystemExit(1)


def main() -> None:
    argv = sys.argv[1:]
    if argv in (["--version"], ["-V"]):
        print(VERSION)
        return
    fl.log_start(CLI, argv)
    if not argv or argv[0] != "app-server":
        fl.die(CLI, f"this fake only serves `codex app-server`, got {argv!r}")
    values, _, positional = fl.take_flags(CLI, argv[1:], valued={"--listen", "-c"}, boolean=set())
    if positional or values.get("--listen", "stdio://") != "stdio://":
        fl.die(CLI, f"unexpected app-server arguments {argv[1:]!r}")
    if fl.scenario(CLI, 0) == "exit1":
        fl.die(CLI, "Error: failed to load config: invalid TOML", 1)
    server = Server()
    while True:
        msg = server.read()
        if msg is None:
            return
        server.handle(msg)


if __name__ == "__main__":
    main()
