"""parallel_flame_chase_mission's params: parallel_flame_chase's, and the audits' clock and
the external events file."""

from __future__ import annotations

from pydantic import Field, field_validator

from flamechase.flow.globs import parse
from flamechase.flows.parallel_flame_chase import ParallelParams

__all__ = ["MissionParams"]


class MissionParams(ParallelParams):
    global_audit_hours: float = Field(
        default=6.0,
        ge=0,
        le=168,
        description="hours between periodic global audits (0: none)",
    )
    external_events: str | None = Field(
        default=None,
        min_length=1,
        max_length=4096,
        description="an adapter's JSONL file of events (evidence, review requests), read as "
        "it grows; they never act",
    )
    protected_paths: list[str] = Field(
        default_factory=list,
        max_length=100,
        description="globs of files lanes must not change (the evaluator, its data): a turn "
        "after which they differ in its lane's tree opens an audit on that lane",
    )

    @field_validator("protected_paths")
    @classmethod
    def _globs(cls, v: list[str]) -> list[str]:
        for g in v:
            parse(g)  # a GlobError (a ValueError) says which glob names nothing
        return v
