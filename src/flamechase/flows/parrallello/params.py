"""parrallello's params: the plan (or a planner's lane slots), prep, checkpoints and pacing."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator

from flamechase.flow import CopyParams
from flamechase.flows.parrallello.decision import load_decisions
from flamechase.flows.parrallello.plan import PlanSpec, load_plan

__all__ = ["ParrallelloParams"]


class ParrallelloParams(CopyParams):
    plan: str | None = Field(
        default=None,
        min_length=1,
        max_length=4096,
        description="the plan file (YAML or JSON); without it a `planner` role writes one",
    )
    fronts: int = Field(
        default=3, ge=1, le=8, description="with a planner: the most fronts it may plan"
    )
    prep: bool = Field(
        default=True,
        description="a one-pass `prep` agent stages each front's gate, "
        "baseline and first tickets before it starts",
    )
    checkpoint: Literal["auto", "require", "off"] = Field(
        default="auto",
        description="commit and tag the source before the first wave: auto "
        "(when it is a git repository), require, off",
    )
    pacing_share: float = Field(
        default=0.09,
        gt=0,
        le=1,
        description="a block spending more than this share of a budget paces the next one",
    )
    paced_tickets: int = Field(
        default=4, ge=1, le=8, description="tickets per round in a paced block"
    )
    ceiling: int = Field(
        default=60,
        ge=5,
        le=1000,
        description="tool calls a builder is told it may make in a round "
        "(in its brief; not counted by the runtime)",
    )
    paced_ceiling: int = Field(
        default=40, ge=5, le=1000, description="the builders' ceiling in a paced block"
    )
    stop_share: float = Field(
        default=0.92, gt=0, le=1, description="above this share of a budget no new block starts"
    )

    lead: bool = Field(
        default=False,
        description="a fresh `lead` session decides between blocks (tickets, a note that "
        "binds the next block); without it the runtime's rules do",
    )

    lead_decision: dict[str, dict[str, Any]] | None = Field(
        default=None,
        description="a file of the lead decision's schema (one decision, with an optional "
        "`front`, or front id -> decision), typically on resume: validated like a lead's, "
        "taken once by each front it names at its next block end, recorded and shown",
    )

    usage_probe: str | None = Field(
        default=None,
        min_length=1,
        max_length=4096,
        description="a command printing account usage as JSON "
        '({"weekly": 0.93, "window_5h": 0.4, "extra_credit": 0.1}): weekly >= 92 % or the '
        "5 h window >= 95 % starts no new block, extra credit >= 90 % pauses at the round's end",
    )

    control_dir: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="a relative path in your tree: at each block end the plan and each "
        "front's contract, verdicts, tickets and baseline are written there (one commit of "
        "its own when the tree is git); off by default",
    )

    release_tag: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$",
        description="an approved run's final commit is tagged so (when the tree is git)",
    )

    _plan: PlanSpec | None = PrivateAttr(default=None)

    @field_validator("control_dir")
    @classmethod
    def _inside(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = value.replace("\\", "/").split("/")
        if value.startswith("/") or any(p in ("", ".", "..") or p.startswith(".") for p in parts):
            raise ValueError(f"{value!r} is not a plain relative path inside your tree (a/b)")
        return value

    @field_validator("lead_decision", mode="before")
    @classmethod
    def _decision(cls, value: object) -> dict[str, dict[str, Any]] | None:
        # Read here so that the file's content (not its path) is what the run stores and
        # its resume event carries: the decider never reads a file.
        return None if value is None else load_decisions(value)

    @field_validator("plan")
    @classmethod
    def _readable(cls, value: str | None) -> str | None:
        # Refused here, not in `_load`, so that the refusal names the param it is about
        # (`param plan=PLAN.yaml: ...`); `_load` then reads the file this found valid.
        return None if value is None else load_plan(value)[0]

    @model_validator(mode="after")
    def _load(self) -> ParrallelloParams:
        if self.plan is not None:
            self._plan = load_plan(self.plan)[1]
        return self

    @property
    def loaded_plan(self) -> PlanSpec | None:
        """The plan file's plan (read when the params were validated), if one was given."""
        return self._plan
