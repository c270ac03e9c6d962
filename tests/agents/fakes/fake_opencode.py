#!/usr/bin/env python3
"""Fake `opencode`: `opencode run --format json`, the prompt on stdin.

Prints `step_start`, a `tool_use` for the report file it writes, `step_finish` (reason
`tool-calls`, with tokens and cost of that step), then `step_start`, `text`, `step_finish`
(`stop`) and exits 0; an API error is an `error` event and exit 1. `--session <id>` needs a
session an earlier run created. See __init__.py for the scenario variables.
"""

from __future__ import annotations

import json
import sys
import time
import uuid

import fakelib as fl

CLI = "opencode"
VERSION = "1.0.150"


def event(kind: str, sid: str, **fields: object) -> None:
    fl.emit({"type": kind, "timestamp": int(time.time() * 1000), "sessionID": sid, **fields})


def part(sid: str, kind: str, **fields: object) -> dict[str, object]:
    return {
        "id": f"prt_{uuid.uuid4().hex[:12]}",
        "sessionID": sid,
        "messageID": "msg_1",
        "type": kind,
        **fields,
    }


def finish(sid: str, reason: str, cost: float, inp: int, out: int, read: int) -> None:
    tokens = {"input": inp, "output": out, "reasoning": 0, "cache": {"read": read, "write": 0}}
    event(
        "step_finish", sid, part=part(sid, "step-finish", reason=reason, cost=cost, tokens=tokens)
    )


def main() -> None:
    argv = sys.argv[1:]
    if argv in (["--version"], ["-v"]):
        print(VERSION)
        return
    fl.log_start(CLI, argv)
    if not argv or argv[0] != "run":
        fl.die(CLI, f"this fake only knows `opencode run`, got {argv!r}")
    values, _flags, positional = fl.take_flags(
        CLI,
        argv[1:],
        valued={"--format", "--model", "-m", "--variant", "--session", "-s", "--agent"},
        boolean={"--dangerously-skip-permissions", "--continue", "-c", "--print-logs"},
    )
    if values.get("--format") != "json":
        fl.die(CLI, "this fake only speaks --format json")
    model = values.get("--model") or values.get("-m") or "anthropic/claude-sonnet-4-5"
    if "/" not in model:
        fl.die(CLI, f"model {model!r} is not provider/model", 1)
    prompt = " ".join(positional) + fl.read_stdin_text()
    fl.log(CLI, {"stdin": prompt})
    if not prompt.strip():
        fl.die(CLI, "You must provide a message or a command", 1)

    sessions = fl.state_dir(CLI)
    resume = values.get("--session") or values.get("-s")
    if resume:
        state = sessions / f"{resume}.json"
        if not state.exists():
            fl.die(CLI, "Session not found", 1)
        sid, asks = resume, json.loads(state.read_text())["asks"]
    else:
        sid, asks = f"ses_{uuid.uuid4().hex[:24]}", 0
    name = fl.scenario(CLI, asks)
    (sessions / f"{sid}.json").write_text(json.dumps({"asks": asks + 1}))

    if name == "exit1":
        fl.die(CLI, "Error: Model not found: " + model, 1)
    if name.startswith("replay:"):
        for line in fl.replay_lines(name):
            fl.emit_raw(line + b"\n")
        return
    event("step_start", sid, part=part(sid, "step-start", snapshot="0" * 40))
    if name == "hang":
        fl.hang()
    if name == "garbage":
        fl.garbage()
    if name.startswith("sleep:"):
        time.sleep(fl.sleep_seconds(name))
    if name == "crash":
        sys.stderr.write("panic: runtime error: invalid memory address\n")
        raise SystemExit(2)
    if name in ("limit", "ratelimit", "error"):
        data = {
            "limit": {
                "message": "You've hit your limit · resets 6:20pm (Europe/Berlin)",
                "statusCode": 429,
                "isRetryable": False,
            },
            "ratelimit": {"message": "Overloaded", "statusCode": 529, "isRetryable": True},
            "error": {"message": "invalid x-api-key", "statusCode": 401, "isRetryable": False},
        }[name]
        event("error", sid, error={"name": "APIError", "data": data})
        raise SystemExit(1)
    if name != "noreport":
        path = fl.write_report()
        state = {
            "status": "completed",
            "input": {"filePath": path},
            "output": "",
            "title": "report.json",
            "metadata": {},
        }
        event("tool_use", sid, part=part(sid, "tool", callID="c1", tool="write", state=state))
    finish(sid, "tool-calls", 0.002, 1000, 40, 0)
    event("step_start", sid, part=part(sid, "step-start", snapshot="1" * 40))
    event("text", sid, part=part(sid, "text", text="Done: fake turn.", time={"start": 1, "end": 2}))
    finish(sid, "stop", 0.001, 20, 10, 1000)


if __name__ == "__main__":
    main()
