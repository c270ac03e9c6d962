"""One turn, start to end: open a fresh session, ask, repair, recover, finalize.

Runs as an asyncio task beside the control loop and returns a `TurnOutcome` value; it writes
no run state. Files it writes (prompt, inbox, frozen blobs) are either inputs for the agent
or content-addressed and idempotent, so a crash between them and the commit loses nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from flamechase.agents.backend import Answer, Backend, SpawnHook, TurnRequest, Usage
from flamechase.fsutil import FileRefused, read_regular_file
from flamechase.store.db import now_iso

OutcomeStatus = Literal["valid", "failed", "interrupted", "limited"]
MAX_REPAIRS = 2
REPORT_LIMIT = 4 * 1024 * 1024


@dataclasses.dataclass(slots=True)
class TurnOutcome:
    status: OutcomeStatus
    started: str
    ended: str = ""
    duration: float = 0.0
    result: Any = None  # the validated, normalised result (report or plan)
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)  # artifacts, receipts
    error: str | None = None
    exit_code: int | None = None
    usage: Usage = dataclasses.field(default_factory=Usage)
    recovered_from_checkpoint: bool = False
    resets_at: datetime | None = None
    transcript: Path | None = None
    repairs: int = 0


Validator = Callable[[Any], Any]  # raises ValueError (one line) when invalid
Finalizer = Callable[[Any], Awaitable[tuple[dict[str, Any], str | None]]]
Recover = Callable[[], Any]  # a checkpointed result, or None
RepairPrompt = Callable[[str], str]


def read_result_file(path: Path) -> tuple[Any, str | None]:
    """Decode the agent's JSON result file; (None, reason) when absent or unusable."""
    try:
        raw = read_regular_file(path, REPORT_LIMIT)
    except FileNotFoundError:
        return None, f"no report was written to {path}"
    except FileRefused as exc:
        if exc.reason == "does not exist":  # read_regular_file reports absence this way
            return None, f"no report was written to {path}"
        return None, f"report file refused: {exc}"
    except (OSError, ValueError) as exc:
        return None, f"report file refused: {exc}"
    try:
        return json.loads(raw.decode("utf-8")), None
    except UnicodeDecodeError:
        return None, "report is not UTF-8"
    except json.JSONDecodeError as exc:
        return None, f"report is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    except RecursionError:
        return None, "report is not usable JSON: nested too deeply"


def _take_result(answer: Answer, request: TurnRequest, validate: Validator) -> tuple[Any, str]:
    """(validated result, "") or (None, why not)."""
    data: Any
    if answer.structured is not None:
        data, problem = answer.structured, None
    else:
        data, problem = read_result_file(request.report_path)
    if problem is not None:
        return None, problem
    try:
        return validate(data), ""
    except ValueError as exc:
        return None, f"report rejected: {exc}"


async def run_turn(
    backend: Backend,
    request: TurnRequest,
    *,
    on_spawn: SpawnHook,
    validate: Validator,
    repair_prompt: RepairPrompt,
    recover: Recover | None = None,
    finalize: Finalizer | None = None,
    register_cut: Callable[[Callable[[], Awaitable[None]] | None], None] | None = None,
) -> TurnOutcome:
    """Run one turn to its outcome. Never raises for agent misbehaviour."""
    started_wall = now_iso()
    t0 = time.monotonic()
    out = TurnOutcome(status="failed", started=started_wall)
    request.io_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    session = backend.open(request, on_spawn)
    if register_cut is not None:
        register_cut(session.cut)
    usage = Usage()
    try:
        answer = await session.ask(request.prompt)
        usage = usage + answer.usage
        result, problem = None, ""
        if answer.status == "finished":
            result, problem = _take_result(answer, request, validate)
            while result is None and out.repairs < MAX_REPAIRS:
                out.repairs += 1
                answer = await session.ask(repair_prompt(problem), repair=problem)
                usage = usage + answer.usage
                if answer.status != "finished":
                    break
                result, problem = _take_result(answer, request, validate)
        out.exit_code = answer.exit_code
        out.transcript = answer.transcript
        if answer.status == "interrupted":
            out.status, out.error = "interrupted", answer.error or "turn cut by a stop"
        elif answer.status == "limited":
            out.status, out.resets_at = "limited", answer.resets_at
            out.error = answer.error or "usage limit reached"
        elif result is not None:
            out.status, out.result = "valid", result
        else:
            recovered = recover() if recover is not None else None
            if recovered is not None:
                out.status, out.result, out.recovered_from_checkpoint = "valid", recovered, True
            elif answer.status == "finished":
                out.error = problem or "the agent returned no report"
            else:
                out.error = answer.error or f"the agent {answer.status}"
        if out.status == "valid" and finalize is not None:
            extra, refusal = await finalize(out.result)
            if refusal is not None:
                out.status, out.error, out.result = "failed", refusal, None
            else:
                out.extra = extra
    finally:
        if register_cut is not None:
            register_cut(None)
        with contextlib.suppress(Exception):
            await session.close()
        out.usage = usage
        out.ended = now_iso()
        out.duration = time.monotonic() - t0
    if out.error is not None:
        out.error = out.error[:4000]
    return out
