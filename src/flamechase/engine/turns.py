"""One turn job, start to end, where the executor runs it: open a fresh session, ask, repair
in the same session, fall back on a checkpoint. Returns a `TurnResult`; writes no run state.

Files it writes (the prompt, agent inputs) are inputs for the agent and are rewritten if the
turn is taken again, so a crash between them and the loop's commit loses nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path
from typing import Any

from flamechase.agents.backend import Answer, Backend, Usage
from flamechase.engine.clock import iso
from flamechase.engine.executor import TurnJob, TurnResult
from flamechase.engine.portwatch import PortWatch
from flamechase.flow.commands import ResultModelBroke
from flamechase.fsutil import FileRefused, read_regular_file
from flamechase.procs import boot_ticks
from flamechase.workspace.checkpoints import read_checkpoint

REPORT_LIMIT = 4 * 1024 * 1024
REQUESTS_LIMIT = 1024 * 1024  # bytes of a turn's requests file read
REQUESTS_MAX = 200  # requests taken from one turn


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


def _take(answer: Answer, job: TurnJob) -> tuple[dict[str, Any] | None, str]:
    """(validated result, "") or (None, why not)."""
    data: Any
    if answer.structured is not None:
        data, problem = answer.structured, None
    else:
        data, problem = read_result_file(job.request.report_path)
    if problem is not None:
        return None, problem
    try:
        return job.result.validate(data), ""
    except ValueError as exc:
        return None, f"{job.result.noun} rejected: {exc}"


def _recover(job: TurnJob) -> dict[str, Any] | None:
    if job.checkpoint is None:
        return None
    data = read_checkpoint(job.checkpoint, dict(job.checkpoint_identity))
    if data is None:
        return None
    try:
        return job.result.validate(data)
    except ValueError:
        return None


def read_requests(path: Path | None) -> tuple[list[dict[str, Any]], list[str]]:
    """The JSON objects the agent appended to its requests file, and why lines were refused.

    Read like a report (no link, a regular file, bounded); a line that is not a JSON object
    is refused with its number, never the run.
    """
    if path is None:
        return [], []
    try:
        raw = read_regular_file(path, REQUESTS_LIMIT)
    except FileNotFoundError:
        return [], []
    except FileRefused as exc:
        return ([], []) if exc.reason == "does not exist" else ([], [f"requests file: {exc}"])
    except (OSError, ValueError) as exc:
        return [], [f"requests file: {exc}"]
    taken: list[dict[str, Any]] = []
    refused: list[str] = []
    for n, line in enumerate(raw.decode("utf-8", "replace").splitlines(), start=1):
        if not line.strip():
            continue
        if len(taken) >= REQUESTS_MAX:
            refused.append(f"line {n}: more than {REQUESTS_MAX} requests in one turn")
            break
        try:
            value = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            refused.append(f"line {n}: not JSON")
            continue
        if isinstance(value, dict):
            taken.append(value)
        else:
            refused.append(f"line {n}: not a JSON object")
    return taken, refused


# long: ask, repair, recover and the outcome are one state machine.
async def run_job(backend: Backend, job: TurnJob, cut: asyncio.Event) -> TurnResult:
    """Run one turn to its outcome. Never raises for agent misbehaviour."""
    started = iso(time.time())
    t0 = time.monotonic()
    since = boot_ticks()
    spawned: list[tuple[int, str]] = []
    request = job.request
    request.io_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    ports = PortWatch.of(request.env, request.io_dir, since)

    def on_spawn(pgid: int, token: str) -> None:
        spawned.append((pgid, token))
        if ports is not None:
            ports.spawned(pgid)

    session = backend.open(request, on_spawn)

    async def watch_cut() -> None:
        await cut.wait()
        await session.cut()

    watcher = asyncio.ensure_future(watch_cut())
    listeners = asyncio.ensure_future(ports.run()) if ports is not None else None
    usage = Usage()
    repairs = 0
    fields: dict[str, Any] = {"status": "failed"}
    try:
        answer = await session.ask(request.prompt)
        usage = usage + answer.usage
        result, problem = None, ""
        if answer.status == "finished":
            result, problem = _take(answer, job)
            while result is None and repairs < job.max_repairs:
                repairs += 1
                before, after = job.repair
                answer = await session.ask(before + problem + after, repair=problem)
                usage = usage + answer.usage
                if answer.status != "finished":
                    break
                result, problem = _take(answer, job)
        fields.update(
            exit_code=answer.exit_code,
            transcript=str(answer.transcript) if answer.transcript else None,
        )
        if answer.status == "interrupted":
            fields.update(status="interrupted", error=answer.error or "turn cut by a stop")
        elif answer.status == "limited":
            fields.update(
                status="limited",
                error=answer.error or "usage limit reached",
                resets_at=iso(answer.resets_at.timestamp()) if answer.resets_at else None,
            )
        elif result is not None:
            fields.update(status="valid", result=result)
        else:
            recovered = _recover(job)
            if recovered is not None:
                fields.update(status="valid", result=recovered, recovered_from_checkpoint=True)
            elif answer.status == "finished":
                fields["error"] = problem or "the agent returned no report"
            else:
                fields["error"] = answer.error or f"the agent {answer.status}"
    except ResultModelBroke as exc:
        fields.update(status="failed", error=str(exc), flow_error=exc.detail)
    finally:
        for task in (watcher, listeners):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        with contextlib.suppress(Exception):
            await session.close()
    if fields.get("error") is not None:
        fields["error"] = str(fields["error"])[:4000]
    requests, refused = read_requests(job.requests)
    return TurnResult(
        started=started,
        ended=iso(time.time()),
        duration=time.monotonic() - t0,
        usage=usage,
        repairs=repairs,
        spawned=tuple(spawned),
        since=since,
        requests=tuple(requests),
        requests_refused=tuple(refused),
        ports_outside=tuple(sorted(ports.outside)) if ports is not None else (),
        own_netns=ports.own_netns if ports is not None else False,
        **fields,
    )
