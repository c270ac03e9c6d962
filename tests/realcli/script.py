"""What the scripted model says: one decision per request, from the conversation so far.

The server parses each request into a `Conversation` (the dialect's job), asks the `Script`
for a `Step`, and renders that step in the dialect. The default script plays a well-behaved
agent: on a fresh prompt it writes the turn's report with the CLI's own file-write tool, and
once a tool result came back it ends with a short message. Tests change that per
conversation (`Script.plan`) and queue errors (`Script.fault`); a conversation is picked by a
substring of its prompts (a role, a lane, a path).

Pure data and decisions; no sockets here.
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
from collections.abc import Callable
from typing import Any, Literal

# Absolute paths of a turn's report file, as the prompts name them.
_REPORT = re.compile(r"(/[^\s\"'`<>]*?/report\.json)")
_PLAN_LANES = re.compile(r'"lane":\s*"(lane-\d+)"')


@dataclasses.dataclass(frozen=True)
class Usage:
    """Tokens the server reports for one response (input excludes both cache kinds)."""

    input: int = 1200
    output: int = 80
    cache_read: int = 3000
    cache_write: int = 400


@dataclasses.dataclass
class Conversation:
    """One request, reduced to what the script decides on."""

    dialect: str
    model: str
    prompts: list[str]  # user-typed texts, oldest first (tool results excluded)
    tool_results: list[str]  # tool results since the last prompt, oldest first
    tools: list[str]  # names of the tools the CLI offers
    wants_json: bool = False  # a side request asking for a JSON object (gemini's checks)
    raw: str = ""  # the whole request body, for tests that look for what a CLI said

    @property
    def main(self) -> bool:
        """A request of the agent loop (it offers tools), not a side request (a title...)."""
        return bool(self.tools)

    @property
    def text(self) -> str:
        return "\n".join(self.prompts)

    def report_path(self) -> str | None:
        for prompt in self.prompts:
            found = _REPORT.findall(prompt)
            if found:
                return str(found[-1])
        return None


# A step is what the model does next.
@dataclasses.dataclass(frozen=True)
class WriteFile:
    path: str
    content: str


@dataclasses.dataclass(frozen=True)
class Shell:
    command: str


@dataclasses.dataclass(frozen=True)
class CallTool:
    """A call to a tool by name with raw arguments (e.g. one the CLI does not have)."""

    name: str
    args: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Say:
    text: str


Step = WriteFile | Shell | CallTool | Say


FaultKind = Literal["rate_limit", "overloaded", "usage_limit", "cut", "server_error", "hang"]


@dataclasses.dataclass(frozen=True)
class Fault:
    """An error answer instead of a step. `retry_after` is seconds (rate limits);
    `reset_epoch` is when a usage limit reopens (Unix seconds); `hang` holds the request
    without a byte of answer until the server stops."""

    kind: FaultKind
    retry_after: int = 0
    reset_epoch: int = 0


def report_json(conv: Conversation, *, valid: bool = True) -> str:
    """The turn's report (or the coordinator's plan) the prompt asks for."""
    if "Write the plan as JSON to" in conv.text:
        lanes = list(dict.fromkeys(_PLAN_LANES.findall(conv.text))) or ["lane-1"]
        plan = {
            "lanes": [
                {
                    "lane": lane,
                    "mission": {
                        "title": f"mission of {lane}",
                        "objective": f"try one falsifiable direction in {lane}",
                        "success_criteria": ["the tests pass"],
                    },
                }
                for lane in lanes
            ]
        }
        return json.dumps(plan)
    if not valid:
        return json.dumps({"status": "progress"})  # no summary: the engine asks for a repair
    return json.dumps(
        {"status": "progress", "summary": f"scripted {conv.dialect} turn", "tests": ["none"]}
    )


Plan = Callable[[Conversation], Step]


def write_report(conv: Conversation) -> Step:
    """The default agent: write the report with the file tool, then say so."""
    path = conv.report_path()
    if conv.tool_results or path is None:
        return Say("I wrote the report.")
    return WriteFile(path, report_json(conv))


def shell_report(conv: Conversation) -> Step:
    """Like write_report, through the CLI's shell tool."""
    path = conv.report_path()
    if conv.tool_results or path is None:
        return Say("I wrote the report with the shell.")
    body = report_json(conv).replace("'", "'\\''")
    return Shell(f"printf '%s' '{body}' > {path}")


def repair_once(conv: Conversation) -> Step:
    """Write a report the engine refuses, then a valid one when asked to repair it (the
    repair arrives as a second prompt in the same conversation)."""
    path = conv.report_path()
    if conv.tool_results or path is None:
        return Say("Done.")
    return WriteFile(path, report_json(conv, valid=len(conv.prompts) > 1))


def refused_then_write(conv: Conversation) -> Step:
    """First a call to a tool the CLI does not have (it answers with an error), then the
    report with the real tool."""
    path = conv.report_path()
    if path is None:
        return Say("No report path.")
    if not conv.tool_results:
        return CallTool("launch_rockets", {"target": "moon"})
    if len(conv.tool_results) == 1:
        return WriteFile(path, report_json(conv))
    return Say("Recovered from the refused call.")


def silent(conv: Conversation) -> Step:
    """Answer without writing any report."""
    return Say("I did nothing.")


class Script:
    """Per-conversation plans and queued faults; thread-safe (the server is threaded)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._plans: list[tuple[str, Plan]] = []
        self._faults: list[tuple[str, Fault]] = []
        self._headers: list[tuple[str, dict[str, str]]] = []
        self.default: Plan = write_report

    def plan(self, match: str, plan: Plan) -> None:
        """Conversations whose prompts contain `match` follow `plan`."""
        with self._lock:
            self._plans.append((match, plan))

    def fault(self, match: str, fault: Fault, times: int = 1) -> None:
        """The next `times` main requests of conversations containing `match` fail so."""
        with self._lock:
            self._faults.extend([(match, fault)] * times)

    def headers(self, match: str, headers: dict[str, str]) -> None:
        """Streamed answers to conversations containing `match` carry these HTTP headers (an
        account's rate-limit figures, as a provider sends them)."""
        with self._lock:
            self._headers.append((match, headers))

    def headers_for(self, conv: Conversation) -> dict[str, str]:
        with self._lock:
            found = [h for match, h in self._headers if match in conv.text]
        return {k: v for h in found for k, v in h.items()}

    def faults_left(self) -> int:
        with self._lock:
            return len(self._faults)

    def take_fault(self, conv: Conversation) -> Fault | None:
        if not conv.main:
            return None
        with self._lock:
            for i, (match, fault) in enumerate(self._faults):
                if match in conv.text:
                    del self._faults[i]
                    return fault
        return None

    def step(self, conv: Conversation) -> Step:
        with self._lock:
            plans = list(self._plans)
        if not conv.main:
            return Say(
                '{"next_speaker": "user", "reasoning": "done"}'
                if conv.wants_json
                else "Scripted title"
            )
        for match, plan in plans:
            if match in conv.text:
                return plan(conv)
        return self.default(conv)
