"""Helpers for agent backend tests (fixtures live in conftest.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import json
from collections.abc import Coroutine
from typing import Any, TypeVar

from flamechase.agents.backend import Answer, Backend, TurnRequest
from flamechase.agents.limits import RetryPolicy
from flamechase.agents.spec import AgentSpec, parse_spec

T = TypeVar("T")


@dataclasses.dataclass
class Spawns:
    """Records the on_spawn calls a session makes."""

    calls: list[tuple[int, str]] = dataclasses.field(default_factory=list)

    def __call__(self, pgid: int, token: str) -> None:
        self.calls.append((pgid, token))


class NoSleep:
    """An injectable back-off sleep that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def backend(cls: type[Backend], spec: str, sleep: NoSleep | None = None) -> Any:
    """`cls(parse_spec(spec))` with a retry policy that does not wait."""
    retry = RetryPolicy(sleep=sleep or NoSleep())
    return cls(parse_spec(spec), retry=retry)  # type: ignore[call-arg]


def spec(text: str) -> AgentSpec:
    return parse_spec(text)


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


async def ask_once(
    b: Backend, request: TurnRequest, spawns: Spawns, *, repairs: tuple[str, ...] = ()
) -> list[Answer]:
    """Open a session, ask (and repair), close; every answer in order."""
    session = b.open(request, spawns)
    try:
        answers = [await session.ask(request.prompt)]
        for reason in repairs:
            answers.append(await session.ask(f"Fix your report: {reason}", repair=reason))
        return answers
    finally:
        await session.close()


def transcript_lines(answer: Answer) -> list[bytes]:
    assert answer.transcript is not None
    return gzip.decompress(answer.transcript.read_bytes()).splitlines()


def report_of(request: TurnRequest) -> Any:
    return json.loads(request.report_path.read_text())
