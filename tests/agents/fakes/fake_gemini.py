#!/usr/bin/env python3
"""Fake `gemini`: Gemini CLI's headless mode with `--output-format stream-json`.

Reads the prompt from stdin (headless because stdin is not a terminal), prints `init`, the
user message, assistant deltas, a `tool_use`/`tool_result` pair for the report file it writes,
and a `result` with per-model stats; exits 0, or 1 on an API error. `--resume <id>` needs a
session an earlier run created. See __init__.py for the scenario variables.
"""

from __future__ import annotations

import json
import sys
import time
import uuid

import fakelib as fl

CLI = "gemini"
VERSION = "0.21.0"
QUOTA = (
    "Quota exceeded for quota metric 'Gemini 2.5 Pro Requests' and limit 'Gemini 2.5 Pro "
    "Requests per day per user per tier' of service 'cloudcode-pa.googleapis.com' for "
    "consumer 'project_number:681255809395'."
)
RATE = (
    '[API Error: got status: 429 Too Many Requests. {"error":{"code":429,'
    '"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}]'
)


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


def result(model: str, status: str = "success", error: dict[str, object] | None = None) -> None:
    stats = {
        "total_tokens": 1250,
        "input_tokens": 1200,
        "output_tokens": 50,
        "cached": 1000,
        "input": 200,
        "duration_ms": 5,
        "tool_calls": 1,
        "models": {
            model: {
                "total_tokens": 1250,
                "input_tokens": 1200,
                "output_tokens": 50,
                "cached": 1000,
                "input": 200,
            }
        },
    }
    body: dict[str, object] = {
        "type": "result",
        "timestamp": now(),
        "status": status,
        "stats": stats,
    }
    if error is not None:
        body["error"] = error
    fl.emit(body)


def main() -> None:
    argv = sys.argv[1:]
    if argv in (["--version"], ["-v"]):
        print(VERSION)
        return
    fl.log_start(CLI, argv)
    values, flags, positional = fl.take_flags(
        CLI,
        argv,
        valued={
            "--output-format",
            "-o",
            "--approval-mode",
            "--model",
            "-m",
            "--resume",
            "-r",
            "--prompt",
            "-p",
            "--include-directories",
        },
        boolean={"--yolo", "-y", "--debug"},
    )
    if positional:
        fl.die(CLI, f"positional prompts start interactive mode; got {positional!r}", 42)
    if values.get("--output-format", values.get("-o")) != "stream-json":
        fl.die(CLI, "this fake only speaks --output-format stream-json", 42)
    mode = values.get("--approval-mode", "default")
    if mode not in ("default", "auto_edit", "yolo", "plan"):
        fl.die(CLI, f"Invalid values: Argument: approval-mode, Given: {mode!r}", 42)
    if mode != "yolo" and "--yolo" not in flags:
        fl.die(CLI, "flamechase runs unattended: approval mode yolo expected", 42)
    if "--yolo" in flags and "--approval-mode" in values:
        fl.die(CLI, "Cannot use both --yolo (-y) and --approval-mode together.", 42)
    model = values.get("--model") or values.get("-m") or "gemini-2.5-pro"
    prompt = fl.read_stdin_text() + values.get("--prompt", values.get("-p", ""))
    fl.log(CLI, {"stdin": prompt})
    if not prompt.strip():
        fl.die(CLI, "No input provided via stdin.", 42)

    sessions = fl.state_dir(CLI)
    resume = values.get("--resume") or values.get("-r")
    if resume:
        state = sessions / f"{resume}.json"
        if not state.exists():
            # Gemini 0.61's wording, exit 42: a run whose request failed saved no session.
            fl.die(CLI, "Error resuming session: No previous sessions found for this project.", 42)
        sid = resume
    else:
        sid = str(uuid.uuid4())
    # Scenarios count every run of this fake (a retry after a failed first request is a
    # fresh run, not a resumed one).
    counter = sessions / "_runs"
    asks = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(asks + 1))
    name = fl.scenario(CLI, asks)
    if name not in ("ratelimit", "error", "limit", "exit1", "crash"):
        (sessions / f"{sid}.json").write_text(json.dumps({"asks": asks + 1}))

    if name == "exit1":
        fl.die(CLI, "Error when talking to Gemini API: Please set an Auth method", 1)
    if name.startswith("replay:"):
        for line in fl.replay_lines(name):
            fl.emit_raw(line + b"\n")
        return
    fl.emit({"type": "init", "timestamp": now(), "session_id": sid, "model": model})
    fl.emit({"type": "message", "timestamp": now(), "role": "user", "content": prompt[:200]})
    if name == "hang":
        fl.hang()
    if name == "garbage":
        fl.garbage()
    if name.startswith("sleep:"):
        time.sleep(fl.sleep_seconds(name))
    if name == "crash":
        fl.emit(
            {
                "type": "message",
                "timestamp": now(),
                "role": "assistant",
                "content": "Let me",
                "delta": True,
            }
        )
        sys.stderr.write(
            "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n"
        )
        raise SystemExit(134)
    if name in ("limit", "ratelimit", "error"):
        message = {"limit": QUOTA, "ratelimit": RATE, "error": "[API Error: 400 Bad Request]"}[name]
        fl.emit({"type": "error", "timestamp": now(), "severity": "error", "message": message})
        result(model, "error", {"type": "ApiError", "message": message})
        raise SystemExit(1)
    fl.emit(
        {
            "type": "message",
            "timestamp": now(),
            "role": "assistant",
            "content": "Writing the ",
            "delta": True,
        }
    )
    fl.emit(
        {
            "type": "message",
            "timestamp": now(),
            "role": "assistant",
            "content": "report.",
            "delta": True,
        }
    )
    if name != "noreport":
        path = fl.write_report()
        fl.emit(
            {
                "type": "tool_use",
                "timestamp": now(),
                "tool_name": "write_file",
                "tool_id": "t1",
                "parameters": {"file_path": path},
            }
        )
        fl.emit(
            {
                "type": "tool_result",
                "timestamp": now(),
                "tool_id": "t1",
                "status": "success",
                "output": "ok",
            }
        )
    result(model)


if __name__ == "__main__":
    main()
