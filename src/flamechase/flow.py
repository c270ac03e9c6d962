"""PUBLIC: the one import a flow needs. Built-in flows use exactly this API.

A flow declares its roles, params and lanes, and writes prompts; the engine does the rest
(turns, alternation, reports between lanes, artifacts, budgets, resume). A flow never writes
run state: its methods take frozen views and return values.

    class MyFlow(Flow):
        name = "my_flow"
        summary = "..."
        Params = FlowParams

        def lanes(self, params): return [LaneDef("lane-1", ("a", "b"), in_source=True)]
        def lane_prompt(self, view): return f"Objective: {view.objective}"

    FLOW = MyFlow()   # what `-f path/to/flow.py` loads
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Flow",
    "FlowParams",
    "LaneDef",
    "LaneView",
    "PlanView",
]


class FlowParams(BaseModel):
    """Params every flow accepts. Subclass to add a flow's own (with ranges)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rest_seconds: float = Field(default=1.0, ge=0.05, le=60.0,
                                description="pause between a lane's turns, seconds")
    resume_mode: Literal["auto", "fresh"] = Field(
        default="auto", description="auto: pick up a compatible run; fresh: always start anew")
    turn_timeout: float = Field(default=14400.0, gt=0, le=7 * 86400,
                                description="seconds a turn may take before it is cut")
    silence_timeout: float = Field(default=900.0, gt=0, le=86400,
                                   description="seconds without output before a turn is cut")
    kill_grace: float = Field(default=5.0, ge=0.1, le=300,
                              description="seconds between SIGTERM and SIGKILL for an agent")
    sandbox: Literal["auto", "bwrap", "landlock", "off"] = Field(
        default="auto", description="jail agents: bubblewrap where it runs, else Landlock; "
                                    "off (said explicitly) runs them unconfined")


@dataclasses.dataclass(frozen=True, slots=True)
class LaneDef:
    """One lane: two actors alternating, working in the source or in a private copy."""

    name: str  # "lane-1", ...
    actors: tuple[str, str]
    in_source: bool


@dataclasses.dataclass(frozen=True, slots=True)
class PlanView:
    """What a planning prompt may use."""

    objective: str
    lanes: Sequence[LaneDef]
    attempt: int
    previous_errors: Sequence[str]
    workspace_map: Mapping[str, Any]
    report_path: Path


@dataclasses.dataclass(frozen=True, slots=True)
class LaneView:
    """What a lane prompt may use: a frozen picture of the run at scheduling time."""

    run_id: str
    flow: str
    objective: str
    lane: LaneDef
    role: str
    actor: Literal["a", "b"]
    turn: int
    attempt: int
    mission: Mapping[str, Any] | None
    consecutive_failures: int
    last_error: str | None
    inbox: Sequence[Mapping[str, Any]]
    leaderboard: Mapping[str, Any]
    workspace: Path
    workspace_map: Mapping[str, Any]
    report_path: Path
    inbox_path: Path
    artifact_root: Path
    checkpoint_path: Path
    checkpoint_identity: Mapping[str, Any]
    repair_reason: str | None = None


class Flow(abc.ABC):
    """A flow: roles, params, lanes and prompts. Subclass and instantiate once."""

    name: ClassVar[str]
    summary: ClassVar[str]
    Params: ClassVar[type[FlowParams]] = FlowParams
    #: Role that plans once before the lanes start (None: no planning).
    planner: ClassVar[str | None] = None
    #: Two failed turns in a row hold a lane; a `blocked` report holds it too.
    holds_lanes: ClassVar[bool] = False
    #: Lanes exchange reports (each lane's inbox holds the other lanes' reports).
    shares_reports: ClassVar[bool] = True

    def roles(self, params: FlowParams) -> list[str]:
        """Every role in the order positional -a fills them."""
        out = [self.planner] if self.planner else []
        for lane in self.lanes(params):
            out.extend(lane.actors)
        return out

    @abc.abstractmethod
    def lanes(self, params: FlowParams) -> list[LaneDef]:
        """The lanes of a run with these params."""

    @abc.abstractmethod
    def lane_prompt(self, view: LaneView) -> str:
        """The prompt of one lane turn."""

    def repair_prompt(self, view: LaneView, reason: str) -> str:
        """Ask the same session for a corrected report."""
        return (
            f"Your turn report was rejected: {reason}\n"
            f"Write a corrected JSON report for the work you just did to {view.report_path} "
            "(do not start new work). Required: status (progress, deliverable_ready, "
            "no_result or blocked) and a non-empty summary; optional lists changes, evidence, "
            "tests, risks; next_step; deliverable only with status deliverable_ready; "
            "submission only with a deliverable. No other keys."
        )

    def plan_prompt(self, view: PlanView) -> str:
        """The planner's prompt (flows with a planner)."""
        raise NotImplementedError

    def validate_plan(self, data: Any, lanes: Sequence[LaneDef]) -> dict[str, Any]:
        """Check a decoded plan; return it normalised or raise ValueError (one line)."""
        raise NotImplementedError

    def mission(self, plan: Mapping[str, Any] | None, lane: str) -> Mapping[str, Any] | None:
        """The lane's mission from the plan."""
        if not plan:
            return None
        for entry in plan.get("lanes", []):
            if entry.get("lane") == lane:
                m = entry.get("mission")
                return m if isinstance(m, Mapping) else None
        return None

    def copies_needed(self, params: FlowParams, *, fresh: bool, revised: bool) -> int:
        """How many copies of the source a start makes (for the large-copy warning)."""
        private = sum(1 for lane in self.lanes(params) if not lane.in_source)
        planning = 1 if self.planner else 0
        if fresh:
            return private + planning
        return planning if revised else 0
