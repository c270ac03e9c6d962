"""External ingress (`-p external_events=PATH`): an adapter's JSONL events, read a bounded pass
at a time by `flamechase.tools.ingress` (a `Run`, every POLL_SECONDS), each checked here.

They only add evidence (a lane's outcome, as the adapter saw it, beside its latest report in
the audit packet) or request a review (`review_requested` opens or joins an audit); they never
act. Another run's events, events already seen (the last KEEP_SEEN ids) and invalid ones are
ignored, the invalid ones said in an event.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from flamechase import events as ev
from flamechase.flow import Command, FlowState, Run, WaitUntil, runtime_module
from flamechase.flows.parallel_flame_chase_mission.audits import Trigger
from flamechase.reports import one_line

__all__ = ["POLL_SECONDS", "ExternalEvent", "Ingress", "parse"]

POLL_SECONDS = 10.0
KEEP_SEEN = 1000
KEY = "ingress:"


class ExternalEvent(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1]
    event_id: str = Field(min_length=1, max_length=200)
    run_id: str = Field(min_length=1, max_length=200)
    at: str = Field(default="", max_length=100)
    kind: Literal["progress", "deliverable_ready", "no_result", "blocked", "review_requested"]
    lane: str | None = Field(default=None, max_length=40)
    scope: Literal["targeted", "global"] | None = None
    targets: list[str] = Field(default_factory=list, max_length=3)
    summary: str = Field(min_length=1, max_length=4000)
    evidence: list[str] = Field(default_factory=list, max_length=30)
    details: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _shape(self) -> ExternalEvent:
        if len(set(self.targets)) != len(self.targets):
            raise ValueError("targets repeat a lane")
        if self.kind != "review_requested":
            if self.lane is None or self.scope is not None or self.targets:
                raise ValueError(f"a {self.kind} event names its lane and no scope or targets")
        elif self.scope is None:
            raise ValueError("review_requested needs a scope")
        elif self.scope == "targeted" and not self.targets:
            raise ValueError("a targeted review_requested lists its targets")
        elif self.scope == "global" and self.targets:
            raise ValueError("a global review_requested lists no targets")
        return self


class Ingress(FlowState):
    polls: int = 0
    next_at: float = 0.0
    offset: int = 0
    identity: str = ""
    seen: tuple[str, ...] = ()


def commands(ing: Ingress, path: str, now: float) -> list[Command]:
    if now < ing.next_at:
        return [WaitUntil(ing.next_at)]
    argv = runtime_module("flamechase.tools.ingress", path, str(ing.offset), ing.identity)
    return [
        Run(
            key=f"{KEY}{ing.polls}",
            place="source",
            argv=argv,
            jailed=False,
            label="the external events' next lines",
        )
    ]


def parse(
    ing: Ingress, e: ev.Ran, run_id: str, lanes: list[str], at: float
) -> tuple[Ingress, list[ExternalEvent], list[str]]:
    """The ingress after pass `e`, the new events of this run, and what was wrong."""
    ing = ing.replace(polls=ing.polls + 1, next_at=at + POLL_SECONDS)
    try:
        out = json.loads((e.output.strip().splitlines() or ["{}"])[-1])
        assert isinstance(out, dict) and not out.get("error")
    except (ValueError, AssertionError):
        return ing, [], [f"the ingress pass failed: {e.receipt.get('error') or 'no output'}"]
    cursor = out.get("cursor") or {}
    ing = ing.replace(
        offset=int(cursor.get("offset") or 0), identity=str(cursor.get("identity") or "")
    )
    errors = [str(x)[:300] for x in out.get("errors") or []]
    new: list[ExternalEvent] = []
    seen = list(ing.seen)
    for raw in out.get("events") or []:
        try:
            got = ExternalEvent.model_validate(raw)
        except ValidationError as exc:
            errors.append("an external event is invalid: " + one_line(exc, "event"))
            continue
        if got.run_id != run_id or got.event_id in seen:
            continue
        named = [got.lane] if got.lane else list(got.targets)
        if any(n not in lanes for n in named):
            errors.append(f"external event {got.event_id} names a lane this run does not have")
            continue
        seen.append(got.event_id)
        new.append(got)
    return ing.replace(seen=tuple(seen[-KEEP_SEEN:])), new, errors


def absorb(
    latest: dict[str, dict[str, Any]], got: ExternalEvent
) -> tuple[dict[str, dict[str, Any]], list[Trigger]]:
    """What an accepted event does: evidence beside its lane's latest report, or a review."""
    if got.kind == "review_requested":
        why = f"external review requested: {got.summary[:300]}"
        lanes: list[str | None] = list(got.targets) if got.scope == "targeted" else [None]
        return latest, [
            Trigger(
                id=f"external:{got.event_id}:{n or ''}",
                kind="review_requested",
                scope=got.scope or "global",
                lane=n,
                why=why,
                at=got.at,
            )
            for n in lanes
        ]
    lane = got.lane or ""
    said = {
        "event_id": got.event_id,
        "kind": got.kind,
        "summary": got.summary[:500],
        "evidence": [x[:300] for x in got.evidence[:5]],
        "at": got.at,
    }
    entry = dict(latest.get(lane) or {})
    entry["external"] = [*(entry.get("external") or []), said][-5:]
    return {**latest, lane: entry}, []
