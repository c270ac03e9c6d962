"""parallel_flame_chase's event kinds (its planning and its leaderboard), and how they show.

Its git_pr variant journals the same planning kinds."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from flamechase.events import FlowEvent, register
from flamechase.events.present import Ranking, Row, Score, Seen, Shown, and_, clip, money, num, secs


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PlanningStarted(FlowEvent):
    kind: ClassVar[str] = "planning_started"
    revision: int = 1
    workspace: str = ""

    def describe(self) -> str:
        return f"planning (revision {self.revision})"

    def show(self, seen: Seen) -> Shown:
        return Shown(
            f"{self.actor or 'The planner'} starts planning (revision {self.revision}) in a "
            "fresh session on a copy of your tree.",
            "turn",
            phase="planning",
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PlanAttempt(FlowEvent):
    kind: ClassVar[str] = "plan_attempt"
    attempt: int = 1
    status: str = ""
    error: str | None = None
    cost_usd: float = 0.0
    output_tokens: int = 0
    duration: float = 0.0

    def describe(self) -> str:
        return f"planning attempt {self.attempt}: {self.status}" + (
            f" ({self.error})" if self.error else ""
        )

    def show(self, seen: Seen) -> Shown:
        err = f": {clip(self.error, 160)}" if self.error else ""
        return Shown(
            f"{self.actor or 'The planner'}'s planning session {self.attempt} ends "
            f"{self.status} ({secs(self.duration)}, {money(self.cost_usd)}){err}.",
            "end" if self.status == "valid" else "fail",
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Planned(FlowEvent):
    kind: ClassVar[str] = "planned"
    revision: int = 1
    plan: dict[str, Any] = dataclasses.field(default_factory=dict)
    released: list[str] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        return f"planned (revision {self.revision})"

    def show(self, seen: Seen) -> Shown:
        entries = self.plan.get("lanes") or () if isinstance(self.plan, Mapping) else ()
        missions = []
        for entry in entries:
            if isinstance(entry, Mapping):
                title = (entry.get("mission") or {}).get("title")
                missions.append(f"{entry.get('lane')} “{clip(title, 60)}”")
        who = and_(missions) if missions else "every lane"
        return Shown(
            f"{self.actor or 'The planner'} hands each lane its mission as words: {who}; "
            "then leaves.",
            "plan",
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ObjectiveReplanned(FlowEvent):
    kind: ClassVar[str] = "objective_replanned"
    revision: int = 1
    task_fingerprint: str = ""
    released: list[str] = dataclasses.field(default_factory=list)

    def show(self, seen: Seen) -> Shown:
        return Shown(f"The objective changed: re-planned (revision {self.revision}).", "plan")


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LeaderboardDeclared(FlowEvent):
    """The metric a run ranks by, and whether the runtime measures it (else claims rank)."""

    kind: ClassVar[str] = "leaderboard_declared"
    metric: str | None = None
    direction: str | None = None
    measured_by_runtime: bool = False
    command: str | None = None  # what the runtime measures with

    def show(self, seen: Seen) -> Shown:
        ranking = None
        if self.metric and self.direction in ("minimize", "maximize"):
            by = (self.command or "the evaluator") if self.measured_by_runtime else None
            ranking = Ranking(self.metric, self.direction, by)  # type: ignore[arg-type]
        if not self.measured_by_runtime:
            return Shown(
                "Candidates are ranked by what their reports claim: no evaluator measures them.",
                "info",
                ranking=ranking,
            )
        return Shown(
            f"Candidates are ranked by {self.metric} ({self.direction}), measured by the "
            f"runtime with `{clip(self.command, 120)}`.",
            "info",
            ranking=ranking,
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CandidateSubmitted(FlowEvent):
    kind: ClassVar[str] = "candidate_submitted"
    report_id: str = ""
    metric: str = ""
    direction: str = ""
    claimed: float = 0.0
    measured: float | None = None
    verified: bool = False
    ranked: bool = True
    unverified_reason: str | None = None

    def describe(self) -> str:
        v = "verified" if self.verified else f"unverified ({self.unverified_reason})"
        return f"submitted {self.metric}={self.claimed} {v}"

    def show(self, seen: Seen) -> Shown:
        how = (
            "verified by the runtime"
            if self.verified
            else f"not verified: {clip(self.unverified_reason, 120)}"
        )
        got = f", measured {self.measured:g}" if self.measured is not None else ""
        score = None
        if self.direction in ("minimize", "maximize"):
            score = Score(
                ref=self.report_id,
                lane=self.lane or self.report_id,
                metric=self.metric,
                direction=self.direction,  # type: ignore[arg-type]
                value=float(self.measured if self.measured is not None else self.claimed),
                claimed=float(self.claimed),
                verified=self.verified,
                ranked=self.ranked,
            )
        # A candidate of no lane is what the run started from (a flow's baseline, `main`).
        who = (
            f"{self.lane} submits a candidate"
            if self.lane
            else f"{self.report_id} enters the leaderboard"
        )
        return Shown(
            f"{who}: {self.metric} = {self.claimed:g}{got} ({how}).",
            "info",
            score=score,
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CandidateBestUpdated(FlowEvent):
    kind: ClassVar[str] = "candidate_best_updated"
    report_id: str = ""
    metric: str = ""
    direction: str = ""
    value: float | None = None

    def describe(self) -> str:
        return f"new best {self.metric} = {self.value} ({self.report_id})"

    def show(self, seen: Seen) -> Shown:
        where = f" from {self.lane}" if self.lane else ""
        return Shown(
            f"New best: {self.metric} = {num(self.value)}{where} ({self.report_id}).", "best"
        )


# ---- how current lane reports are (explorer lanes kept fresh) -------------------------------

FRESHNESS = "report freshness"  # the views' panel


def _against(turns: int, tree: str) -> str:
    at = f"lane-1 after {turns} valid turn" + ("" if turns == 1 else "s")
    return at + (f" (tree {tree[:10]})" if tree else "")


def _cell(turns: int, tree: str) -> str:
    # Short, and never ending in a word a budget line ends with ("turns"): a panel's cell
    # wraps at 80 columns.
    return f"{turns} valid" + (f" · {tree[:7]}" if tree else "")


def _behind(words: str) -> str:
    return words.replace(" lane-1 turns", "").replace(" lane-1 turn", "")


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ReportDated(FlowEvent):
    """A lane 2..N report (and the artifacts it carries) was written against this lane-1
    tree: lane 1's count of valid turns its copy was on, and that tree's commit in the run's
    refresh repository ("" when the copy was never recorded there)."""

    kind: ClassVar[str] = "report_dated"
    report_id: str = ""
    lane_1_turns: int = 0
    lane_1_tree: str = ""
    behind: int = 0  # lane-1 turns since, when it was written

    def describe(self) -> str:
        return f"{self.report_id} written against {_against(self.lane_1_turns, self.lane_1_tree)}"

    def show(self, seen: Seen) -> Shown:
        now = "fresh" if not self.behind else f"already stale by {self.behind}"
        cells = {"lane": self.lane, "lane 1 at": _cell(self.lane_1_turns, self.lane_1_tree)}
        row = Row(FRESHNESS, self.report_id, cells)
        return Shown(
            f"{self.lane}'s report {self.report_id} was written against "
            f"{_against(self.lane_1_turns, self.lane_1_tree)} ({now}).",
            "report",
            rows=(row,),
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class InboxMarked(FlowEvent):
    """Lane 1's turn got these lane reports in its inbox, each marked as its prompt said:
    `fresh`, or `stale by N lane-1 turns` (report id -> words)."""

    kind: ClassVar[str] = "inbox_marked"
    turn: int = 0
    marks: dict[str, str] = dataclasses.field(default_factory=dict)

    def describe(self) -> str:
        return f"turn {self.turn}'s inbox: " + ", ".join(f"{k} {v}" for k, v in self.marks.items())

    def show(self, seen: Seen) -> Shown:
        stale = sum(1 for v in self.marks.values() if v != "fresh")
        rows = tuple(
            Row(FRESHNESS, rid, {"read by lane 1": f"{_behind(words)} at turn {self.turn}"})
            for rid, words in self.marks.items()
        )
        said = "; ".join(f"{rid} {words}" for rid, words in self.marks.items())
        return Shown(
            f"{self.lane}'s turn {self.turn} reads {len(self.marks)} lane report(s), "
            f"{stale} stale: {clip(said, 240)}.",
            "warn" if stale else "report",
            rows=rows,
        )
