"""Candidates of parallel_flame_chase: a submission, measured by the runtime, then ranked.

Pure: the flow asks the engine to `Measure` a submission in its lane's place, and folds the
receipt here into a candidate row and the events the views show.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flamechase import events as ev
from flamechase.flow import leaderboard as lb
from flamechase.flows.parallel_flame_chase import events as pev

NO_EVALUATOR = "no evaluator configured; value is the agent's claim"


def declared(params: Mapping[str, Any]) -> dict[str, str] | None:
    """The metric a run measures, if it has an evaluator."""
    if params.get("evaluator") and params.get("direction"):
        return {
            "metric": str(params.get("metric") or "score"),
            "direction": str(params["direction"]),
        }
    return None


def board(rows: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> dict[str, Any]:
    return lb.board(
        [dict(r) for r in rows], declared(params), evaluator=bool(params.get("evaluator"))
    )


def judge(
    sub: Mapping[str, Any],
    receipt: Mapping[str, Any] | None,
    params: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
) -> tuple[float | None, bool, str | None]:
    """(measured value, verified, why not) of a submission given the evaluator's receipt."""
    if receipt is None:
        return None, False, NO_EVALUATOR
    measured = receipt.get("value")
    problem = receipt.get("error")
    primary = board(rows, params)["primary"]
    if (
        problem is None
        and primary
        and (
            lb.metric_key(str(sub["metric"])) != primary["metric"]
            or sub["direction"] != primary["direction"]
        )
    ):
        problem = (
            f"submission is for {sub['metric']}/{sub['direction']}, the run measures "
            f"{primary['metric']}/{primary['direction']}"
        )
    if (
        problem is None
        and measured is not None
        and not lb.claim_matches(float(sub["value"]), float(measured))
    ):
        problem = f"claimed {float(sub['value']):g} but the evaluator measured {measured:g}"
    return (float(measured) if measured is not None else None), problem is None, problem


def record(
    rows: Sequence[Mapping[str, Any]],
    params: Mapping[str, Any],
    *,
    report_id: str,
    lane: str,
    role: str | None,
    at: str,
    sub: Mapping[str, Any],
    receipt: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], list[ev.FlowEvent]]:
    """The candidate row of a submission and the events that announce it."""
    measured, verified, problem = judge(sub, receipt, params, rows)
    row = {
        "report_id": report_id,
        "lane": lane,
        "at": at,
        "metric": sub["metric"],
        "direction": sub["direction"],
        "claimed": float(sub["value"]),
        "measured": measured,
        "verified": verified,
        "receipt": receipt,
    }
    before = board(rows, params)["best"]
    after = board([*rows, row], params)["best"]
    runtime = bool(params.get("evaluator"))
    out: list[ev.FlowEvent] = [
        pev.CandidateSubmitted(
            lane=lane,
            actor=role,
            report_id=report_id,
            metric=str(sub["metric"]),
            direction=str(sub["direction"]),
            claimed=float(sub["value"]),
            measured=measured,
            verified=verified,
            ranked=verified if runtime else True,
            unverified_reason=problem,
        )
    ]
    if after is not None and (before is None or after["report_id"] != before["report_id"]):
        out.append(
            pev.CandidateBestUpdated(
                lane=lane,
                actor=role,
                report_id=report_id,
                metric=str(sub["metric"]),
                direction=str(sub["direction"]),
                value=after["value"],
            )
        )
    return row, out
