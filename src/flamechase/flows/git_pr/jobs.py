"""Runtime jobs the flow is waiting for, instant commands it owes, and system reports.

A job is planned in `evolve` (so its key is in the state before anything runs and survives a
crash), returned by `decide` until its `Ran`/`Measured` event arrives, and then taken out of
the state with its result. Jobs in the same place run one at a time, oldest first (a clean
checkout must not be wiped under a measurement; pushes into the central repository follow
each other). A job whose place, or a place it reads, is not made yet waits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from flamechase.flow import Command, MakePlace, PublishReport
from flamechase.flows.git_pr.model import GitState, Job, place_label

__all__ = ["add", "owe", "runnable", "system_report", "take"]


def add(
    state: GitState,
    purpose: str,
    *,
    place: str,
    subject: str = "",
    lane: str | None = None,
    reads: tuple[str, ...] = (),
    argv: tuple[str, ...] = (),
    env: Mapping[str, str] | None = None,
    command: str = "",
    pattern: str = "",
    timeout: float = 600.0,
) -> GitState:
    n = state.ops + 1
    job = Job(
        key=f"{purpose}/{n}",
        purpose=purpose,
        subject=subject,
        place=place,
        lane=lane,
        reads=reads,
        argv=argv,
        env=dict(env or {}),
        command=command,
        pattern=pattern,
        timeout=timeout,
    )
    return state.replace(ops=n, jobs={**state.jobs, job.key: job})


def take(state: GitState, key: str) -> tuple[GitState, Job | None]:
    job = state.jobs.get(key)
    if job is None:
        return state, None
    rest = {k: v for k, v in state.jobs.items() if k != key}
    return state.replace(jobs=rest), job


def runnable(state: GitState) -> list[Command]:
    """The oldest job of each place whose places exist; the places still missing (empty)."""
    out: list[Command] = []
    busy: set[str] = set()
    for job in sorted(state.jobs.values(), key=lambda j: int(j.key.rsplit("/", 1)[1])):
        if job.place in busy:
            continue
        busy.add(job.place)
        missing = [p for p in (job.place, *job.reads) if p != "source" and p not in state.places]
        out += [MakePlace(p, how="empty", label=place_label(p)) for p in missing]
        if not missing:
            out.append(job.command_of())
    return out


def owe(state: GitState, *commands: Command) -> GitState:
    return state.replace(outbox=state.outbox.add(*commands))


def system_report(
    state: GitState,
    lanes: Iterable[str],
    kind: str,
    summary: str,
    at: str,
    payload: Mapping[str, Any] | None = None,
) -> GitState:
    """A report from the runtime to each of `lanes`, delivered with the lane's next turn
    (from the source `system:LANE`) and redelivered until a valid turn acknowledges it."""
    commands: list[Command] = []
    n = state.system_reports
    for lane in dict.fromkeys(lanes):
        n += 1
        rid = f"system.{lane}.{n:05d}"
        record = {
            "version": 1,
            "report_id": rid,
            "at": at,
            "lane": "system",
            "kind": kind,
            "status": kind,
            "summary": summary[:4000],
            "payload": dict(payload or {}),
            "audience": [lane],
        }
        commands.append(
            PublishReport(lane=f"system:{lane}", report_id=rid, record=record, kind=kind)
        )
    return owe(state, *commands).replace(system_reports=n)
