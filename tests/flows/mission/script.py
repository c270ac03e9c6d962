"""Scripted turns for parallel_flame_chase_mission's tests (`flamechase.testing`): the
coordinator's plan and decisions, and lane turns that progress, fail or deliver a package."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from flamechase.engine.executor import TurnJob
from flamechase.testing import FakeTurn

Decide = Callable[[Mapping[str, Any]], dict[str, Any]]
Lane = Callable[[TurnJob], FakeTurn]


def mission(title: str, **more: Any) -> dict[str, Any]:
    return {"title": title, "objective": f"do {title}", "success_criteria": ["shown"], **more}


def plan(lanes: int = 2, **limits: int) -> dict[str, Any]:
    """One mission per lane; `lane_2=3` gives lane-2 max_turns_without_outcome 3."""
    return {
        "lanes": [
            {
                "lane": f"lane-{n}",
                "mission": mission(f"m{n}", max_turns_without_outcome=limits.get(f"lane_{n}", 6)),
            }
            for n in range(1, lanes + 1)
        ]
    }


def progress(job: TurnJob) -> FakeTurn:
    return FakeTurn(report={"status": "progress", "summary": f"turn {job.request.turn}"})


def ready(job: TurnJob, name: str = "patch.txt", text: str = "the fix\n") -> FakeTurn:
    """A deliverable_ready report with one artifact, written to the turn's artifact root."""
    root = Path(job.request.env["FLAMECHASE_ARTIFACTS"])
    path = f"t{job.request.turn}-{job.request.attempt}/{name}"
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(text)
    return FakeTurn(
        report={
            "status": "deliverable_ready",
            "summary": "ready",
            "evidence": ["ran the check: it passes"],
            "deliverable": {
                "title": "the fix",
                "artifacts": [{"path": path, "description": "the fix"}],
                "integration_notes": "apply it",
            },
        }
    )


def verdict(lane: str, verdict: str, **more: Any) -> dict[str, Any]:
    return {"lane": lane, "verdict": verdict, "reason": f"{verdict} it", **more}


def answer(ctx: Mapping[str, Any], *verdicts: dict[str, Any]) -> dict[str, Any]:
    return {"audit_id": ctx["audit_id"], "revision": ctx["revision"], "lanes": list(verdicts)}


def integration() -> dict[str, Any]:
    return {"priority": 10, "objective": "integrate the fix", "success_criteria": ["green"]}


def team(
    decide: Decide, lanes: Mapping[str, Lane], the_plan: dict[str, Any] | None = None
) -> Callable[[TurnJob], FakeTurn]:
    """The script: the plan, `decide(context)` for each audit, `lanes[lane](job)` per lane."""

    def script(job: TurnJob) -> FakeTurn:
        if not job.request.lane:
            if job.request.turn < 1000:
                return FakeTurn(report=the_plan or plan(), duration=30)
            return FakeTurn(report=decide(job.result.context), duration=30)
        return lanes.get(job.request.lane, progress)(job)

    return script
