"""What an audit's coordinator is shown (a bounded packet) and checked against (the
decision's validation context), and what `status` and the views are told of the missions.

Claims are shown beside what the runtime measured: a report's `submission` value next to the
evaluator's own run on the leaderboard (`measured`, `verified`), never instead of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from flamechase import events as ev
from flamechase.flows.parallel_flame_chase_mission import decisions
from flamechase.flows.parallel_flame_chase_mission.audits import Audit
from flamechase.flows.parallel_flame_chase_mission.missions import Mission, Missions
from flamechase.flows.parallel_flame_chase_mission.queue import Item

if TYPE_CHECKING:
    from flamechase.flows.parallel_flame_chase_mission.flow import MissionState

LANE1 = "lane-1"
RECENT_AUDITS = 10
MAX_TEXT = 2000  # characters of any one agent-written text in the packet


def _clip(text: object, limit: int = MAX_TEXT) -> str:
    s = str(text or "")
    return s if len(s) <= limit else s[: limit - 1] + "…"


def report(rid: str, e: ev.TurnValid, mission_id: str | None) -> dict[str, Any]:
    """A lane's report as the missions keep it: bounded, with its frozen package."""
    r = e.result
    sub = r.get("submission") or None
    return {
        "report_id": rid,
        "mission_id": mission_id,
        "status": e.report_status,
        "summary": _clip(r.get("summary")),
        "evidence": [_clip(x, 500) for x in (r.get("evidence") or [])[:10]],
        "tests": [_clip(x, 300) for x in (r.get("tests") or [])[:10]],
        "deliverable": r.get("deliverable"),
        "claimed": None
        if sub is None
        else {"metric": sub.get("metric"), "value": sub.get("value")},
        "artifacts": [
            {k: a.get(k) for k in ("path", "sha256", "size", "blob")} for a in e.artifacts
        ],
        "at": e.at,
    }


def decision_context(a: Audit, ms: Missions) -> dict[str, Any]:
    lanes: dict[str, dict[str, Any]] = {}
    for t in a.targets:
        m = ms.of(t)
        # Only an ended mission's outcome can be accepted (not one accepted already).
        ended = m is not None and m.status in ("completed", "blocked")
        outcome = (m.outcome or {}) if m and ended else {}
        lanes[t] = {
            "outcome": outcome.get("status"),
            "spec": dict(m.spec) if m else {},
            "package": bool(outcome.get("artifacts")),
            "lane1": t == LANE1,
        }
    return decisions.context(a.id, a.revision, list(a.targets), lanes)


def integration_spec(item: Item) -> dict[str, Any]:
    d = item.directive
    return {
        "title": _clip(f"Integrate {item.source_lane}'s {item.source_mission_id} ({item.id})", 200),
        "objective": d.get("objective") or "Integrate the accepted package.",
        "success_criteria": list(d.get("success_criteria") or ["the package is integrated"]),
        "kind": "integration",
        "approach_class": "integration",
        "change_scale": "integration",
        "information_question": "Does integrating this package regress anything the tree "
        "already does?",
    }


def _mission(m: Mission) -> dict[str, Any]:
    return {
        "id": m.id,
        "lane": m.lane,
        "status": m.status,
        "origin": m.origin,
        "spec": m.spec,
        "turns_since_dispatch": m.turns_since_dispatch,
        "outcome": m.outcome,
        "transitions": [t.model_dump() for t in m.transitions[-5:]],
    }


def _measured(state: MissionState) -> dict[str, dict[str, Any]]:
    return {
        str(c.get("report_id")): {
            "claimed": c.get("claimed"),
            "measured": c.get("measured"),
            "verified": c.get("verified"),
        }
        for c in state.pfc.candidates
    }


def packet(objective: str, a: Audit, state: MissionState) -> dict[str, Any]:
    measured = _measured(state)
    latest = {}
    for lane, r in state.latest.items():
        latest[lane] = {**r, "runtime": measured.get(str(r.get("report_id")))}
    return {
        "objective": _clip(objective, 8000),
        "audit": {
            "audit_id": a.id,
            "revision": a.revision,
            "scope": a.scope,
            "targets": list(a.targets),
            "triggers": [t.model_dump() for t in a.triggers[-10:]],
            "earlier_sessions": list(a.errors),
        },
        "missions": [
            {**_mission(m), "protected_writes": state.protect.of(lane)}
            for lane in a.targets
            if (m := state.missions.of(lane))
        ],
        "other_lanes": {
            lane: {"mission": m.id, "title": m.title, "status": m.status}
            for lane in state.missions.current
            if lane not in a.targets and (m := state.missions.of(lane))
        },
        "latest_reports": latest,
        "recent_audits": [
            {
                "audit_id": d.id,
                "scope": d.scope,
                "targets": list(d.targets),
                "verdicts": list(d.verdicts),
            }
            for d in state.audits.done[-RECENT_AUDITS:]
        ],
        "integration_queue": [_item(i) for i in state.queue.items.values()][-20:],
    }


def _item(i: Item) -> dict[str, Any]:
    return {
        "id": i.id,
        "from": i.source_lane,
        "mission": i.source_mission_id,
        "priority": i.priority,
        "status": i.status,
        "artifacts": len(i.artifacts),
        "reason": i.reason,
    }


def describe(state: MissionState) -> dict[str, Any]:
    """The missions, the open and past audits and the queue, for `status` and `--json`."""
    ms = state.missions
    a = state.audits.open
    lanes: dict[str, Mapping[str, Any]] = {}
    for lane in state.pfc.book.lanes:
        m = ms.of(lane)
        paused = a is not None and lane in a.targets
        lanes[lane] = {
            "next_role": state.pfc.book.get(lane).next_role,
            "mission": f"{m.id} {m.status}{' (audit)' if paused else ''}" if m else None,
        }
    return {
        "lanes": lanes,
        "missions": [_mission(m) for m in ms.items.values()][-30:],
        "audit": None
        if a is None
        else {
            "audit_id": a.id,
            "revision": a.revision,
            "scope": a.scope,
            "targets": list(a.targets),
            "status": a.status,
        },
        "audits": [
            {"audit_id": d.id, "scope": d.scope, "verdicts": list(d.verdicts)}
            for d in state.audits.done[-RECENT_AUDITS:]
        ],
        "integration_queue": [_item(i) for i in state.queue.items.values()][-20:],
    }


def verdict(v: Mapping[str, Any]) -> dict[str, Any]:
    """A decision's verdict as its event tells it."""
    said = {"lane": v["lane"], "verdict": v["verdict"], "reason": str(v["reason"])[:500]}
    if v.get("next_mission"):
        said["next_mission"] = v["next_mission"].get("title")
    return said
