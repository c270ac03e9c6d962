#!/usr/bin/env python3
"""Fake `claude`: Claude Code's print mode with stream-JSON in and out.

Accepts exactly the flags flamechase uses (and a few harmless ones), refuses anything else
the way claude refuses a bad command line. Prints `system/init`, then for each `user` line on
stdin the events of one turn ending in a `result` whose `total_cost_usd` and `modelUsage` are
running totals for this process, as real claude does. Exits at EOF. See __init__.py for the
scenario variables.
"""

from __future__ import annotations

import json
import math
import sys
import time
import uuid
from pathlib import Path

import fakelib as fl

CLI = "claude"
VERSION = "2.1.300 (Claude Code)"
EFFORTS = {"ultracode", "max", "xhigh", "high", "medium", "low"}
MODES = {"acceptEdits", "bypassPermissions", "default", "plan", "auto", "dontAsk"}
PRICE_IN, PRICE_OUT = 3.0, 15.0  # the fake's own accounting, USD per million tokens


def parse_args(argv: list[str]) -> dict[str, str]:
    values, flags, positional = fl.take_flags(
        CLI,
        argv,
        valued={
            "--input-format",
            "--output-format",
            "--session-id",
            "--resume",
            "--permission-mode",
            "--permission-prompt-tool",
            "--model",
            "--effort",
            "--json-schema",
            "--settings",
            "--plugin-dir",  # a flow's skill, mounted as a plugin of the session
        },
        boolean={"--print", "-p", "--verbose", "--include-partial-messages"},
    )
    if positional:
        fl.die(CLI, f"no prompt argument expected in stream-json input mode, got {positional!r}")
    if not flags & {"--print", "-p"}:
        fl.die(CLI, "this fake only knows print mode (--print)")
    if values.get("--input-format") != "stream-json":
        fl.die(CLI, "--input-format stream-json is required")
    if values.get("--output-format") != "stream-json":
        fl.die(CLI, "--output-format stream-json is required")
    if "--verbose" not in flags:
        fl.die(CLI, "When using --print, --output-format=stream-json requires --verbose", 1)
    if ("--session-id" in values) == ("--resume" in values):
        fl.die(CLI, "exactly one of --session-id and --resume is expected")
    sid = values.get("--session-id") or values.get("--resume", "")
    try:
        uuid.UUID(sid)
    except ValueError:
        fl.die(CLI, f"Invalid session ID {sid!r}. Must be a valid UUID.", 1)
    if values.get("--permission-mode", "default") not in MODES:
        fl.die(CLI, f"invalid --permission-mode {values['--permission-mode']!r}", 1)
    if "--effort" in values and values["--effort"] not in EFFORTS:
        fl.die(CLI, f"invalid --effort {values['--effort']!r}", 1)
    if values.get("--permission-prompt-tool", "stdio") != "stdio":
        fl.die(CLI, "only the stdio permission prompt tool is faked")
    if "--json-schema" in values:
        json.loads(values["--json-schema"])
    return values


class Session:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.sid = values.get("--session-id") or values["--resume"]
        self.model = values.get("--model") or "claude-sonnet-4-5-20250929"
        self.state = fl.state_dir(CLI) / f"{self.sid}.json"
        if "--resume" in values:
            if not self.state.exists():
                fl.die(CLI, f"No conversation found with session ID: {self.sid}", 1)
            self.asks = json.loads(self.state.read_text())["asks"]
        else:
            if self.state.exists():
                fl.die(CLI, f"Error: Session ID {self.sid} is already in use.", 1)
            self.asks = 0
            self.save()
        # Running totals for this process.
        self.tokens_in = 0
        self.tokens_out = 0
        self.cache_read = 0
        self.cost = 0.0

    def save(self) -> None:
        self.state.write_text(json.dumps({"asks": self.asks}))

    def init(self) -> None:
        fl.emit(
            {
                "type": "system",
                "subtype": "init",
                "cwd": str(Path.cwd()),
                "session_id": self.sid,
                "tools": ["Bash", "Read", "Edit", "Write"],
                "model": self.model,
                "permissionMode": self.values.get("--permission-mode", "default"),
                "apiKeySource": "none",
                "claude_code_version": VERSION.split(maxsplit=1)[0],
                "uuid": str(uuid.uuid4()),
            }
        )

    def assistant(self, text: str, *, synthetic: bool = False) -> None:
        fl.emit(
            {
                "type": "assistant",
                "message": {
                    "id": f"msg_{uuid.uuid4().hex[:20]}",
                    "type": "message",
                    "role": "assistant",
                    "model": "<synthetic>" if synthetic else self.model,
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": None,
                    "usage": {"input_tokens": 0 if synthetic else 100, "output_tokens": 20},
                },
                "parent_tool_use_id": None,
                "session_id": self.sid,
                "uuid": str(uuid.uuid4()),
            }
        )

    def result(
        self, text: str, *, is_error: bool = False, spend: bool = True, **extra: object
    ) -> None:
        if spend:
            self.tokens_in += 100
            self.tokens_out += 20
            self.cache_read += 1000
            self.cost += (100 * PRICE_IN + 20 * PRICE_OUT + 1000 * 0.3) / 1_000_000
        body: dict[str, object] = {
            "type": "result",
            "subtype": "success",
            "is_error": is_error,
            "duration_ms": 12,
            "duration_api_ms": 10,
            "num_turns": 1,
            "result": text,
            "stop_reason": "end_turn",
            "session_id": self.sid,
            "total_cost_usd": self.cost,
            "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 1000},
            "modelUsage": {
                self.model: {
                    "inputTokens": self.tokens_in,
                    "outputTokens": self.tokens_out,
                    "cacheReadInputTokens": self.cache_read,
                    "cacheCreationInputTokens": 0,
                    "costUSD": self.cost,
                }
            },
            "permission_denials": [],
            "terminal_reason": "completed",
            "uuid": str(uuid.uuid4()),
        }
        body.update(extra)
        fl.emit(body)

    def ask_permission(self) -> None:
        """A tool permission request on stdout; the answer must come back on stdin."""
        request_id = str(uuid.uuid4())
        fl.emit(
            {
                "type": "control_request",
                "request_id": request_id,
                "request": {
                    "subtype": "can_use_tool",
                    "tool_name": "Bash",
                    "input": {"command": "true"},
                    "tool_use_id": "toolu_fake",
                },
            }
        )
        line = sys.stdin.readline()
        msg = json.loads(line)
        fl.log(CLI, {"stdin": msg})
        response = msg.get("response", {})
        if msg.get("type") != "control_response" or response.get("request_id") != request_id:
            fl.die(CLI, f"expected the control_response to {request_id}, got {line!r}")
        if response.get("response", {}).get("behavior") != "allow":
            fl.die(CLI, "the permission was not granted")

    def turn(self, message: dict[str, object]) -> None:
        content = message.get("message", {})
        if not isinstance(content, dict) or content.get("role") != "user":
            fl.die(CLI, f"malformed user message: {message!r}")
        name = fl.scenario(CLI, self.asks)
        self.asks += 1
        self.save()
        if name == "hang":
            fl.hang()
        if name == "crash":
            self.assistant("Working on it…")
            sys.stderr.write("fake claude: segmentation fault (core dumped)\n")
            sys.stderr.flush()
            raise SystemExit(3)
        left = fl.window_left(CLI, name) if name.startswith("limit_for:") else 0.0
        if left > 0:
            # Whole seconds, rounded up: the reset said is never before the window's end.
            text = f"You've hit your session limit · resets in {math.ceil(left)} seconds"
            self.assistant(text, synthetic=True)
            self.result(text, is_error=True)
            return
        if name == "limit":
            text = "Weekly limit reached ∙ resets 5am"
            self.assistant(text, synthetic=True)
            self.result(text, is_error=True)
            return
        if name == "ratelimit":
            text = (
                'API Error: 529 {"type":"error","error":{"type":"overloaded_error",'
                '"message":"Overloaded"}}'
            )
            self.assistant(text, synthetic=True)
            self.result(text, is_error=True, spend=False, api_error_status=529)
            return
        if name == "error":
            text = (
                'API Error: 400 {"type":"error","error":{"type":"invalid_request_error",'
                '"message":"prompt is too long"}}'
            )
            self.assistant(text, synthetic=True)
            self.result(text, is_error=True, spend=False)
            return
        if name.startswith("replay:"):
            for line in fl.replay_lines(name):
                fl.emit_raw(line + b"\n")
            return
        if name == "garbage":
            fl.garbage()
        if name.startswith("sleep:"):
            time.sleep(fl.sleep_seconds(name))
        if name == "permission":
            self.ask_permission()
        self.assistant("I will write the report now.")
        structured = None
        if name == "structured" and "--json-schema" in self.values:
            structured = fl.report()
        elif name != "noreport":
            fl.write_report()
        extra = {"structured_output": structured} if structured is not None else {}
        self.result("Done: fake turn.", **extra)


def main() -> None:
    argv = sys.argv[1:]
    if argv in (["--version"], ["-v"]):
        print(VERSION)
        return
    fl.log_start(CLI, argv)
    if fl.scenario(CLI, 0) == "exit1":
        fl.die(CLI, "Invalid API key · Please run /login", 1)
    session = Session(parse_args(argv))
    session.init()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            fl.die(CLI, f"stdin line is not JSON: {line[:80]!r}")
        fl.log(CLI, {"stdin": message})
        if message.get("type") == "user":
            session.turn(message)
        elif message.get("type") != "control_response":
            fl.die(CLI, f"unexpected stdin message type {message.get('type')!r}")


if __name__ == "__main__":
    main()
