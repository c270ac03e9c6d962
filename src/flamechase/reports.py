"""The turn report: what every lane turn of every flow must end with.

One schema for all flows, so an `exec:` script written for flame_chase works in
parallel_flame_chase. Validation errors are flattened to one line naming the field.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

ReportStatus = Literal["progress", "deliverable_ready", "no_result", "blocked"]
MAX_REPORT_FILE = 4 * 1024 * 1024  # a report file over this is refused unread


class _Strict(BaseModel):
    # Validators built at the first report read, not at import: a run's first agent starts
    # before any report is, and building these five took about 10 ms of every start.
    model_config = ConfigDict(
        extra="forbid", frozen=True, str_strip_whitespace=False, defer_build=True
    )


class ArtifactRef(_Strict):
    path: str = Field(min_length=1, max_length=1000)
    description: str = Field(default="", max_length=2000)

    @field_validator("path")
    @classmethod
    def _relative_posix(cls, v: str) -> str:
        if "\0" in v:
            raise ValueError("artifact path contains NUL")
        if "\\" in v:
            raise ValueError(f"artifact path {v!r} contains a backslash; use /")
        if v.startswith("/"):
            raise ValueError(f"artifact path {v!r} is absolute; make it relative to the root")
        if v.endswith("/"):
            raise ValueError(f"artifact path {v!r} names a directory")
        parts = v.split("/")
        if ".." in parts:
            raise ValueError(f"artifact path {v!r} contains '..'")
        if any(p in ("", ".") for p in parts):
            raise ValueError(f"artifact path {v!r} has an empty or '.' component")
        return v


class Deliverable(_Strict):
    title: str = Field(min_length=1, max_length=200)
    artifacts: list[ArtifactRef] = Field(min_length=1, max_length=20)
    integration_notes: str = Field(min_length=1, max_length=8000)
    approach_class: str | None = Field(default=None, max_length=200)
    validation: list[str] = Field(default_factory=list, max_length=30)


class Submission(_Strict):
    title: str = Field(min_length=1, max_length=200)
    metric: str = Field(min_length=1, max_length=200)
    value: float
    direction: Literal["minimize", "maximize"]
    evaluator: str = Field(min_length=1, max_length=1000)
    evidence: list[str] = Field(default_factory=list, max_length=30)

    @field_validator("value", mode="before")
    @classmethod
    def _finite_number(cls, v: Any) -> Any:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ValueError("submission value must be a number")
        if not math.isfinite(v):
            raise ValueError("submission value must be finite")
        return v

    @field_validator("title", "metric", "evaluator")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be blank")
        return v.strip()


class TurnReport(_Strict):
    status: ReportStatus
    summary: str = Field(min_length=1, max_length=8000)
    changes: list[str] = Field(default_factory=list, max_length=50)
    evidence: list[str] = Field(default_factory=list, max_length=50)
    tests: list[str] = Field(default_factory=list, max_length=50)
    risks: list[str] = Field(default_factory=list, max_length=30)
    next_step: str = Field(default="", max_length=4000)
    deliverable: Deliverable | None = None
    submission: Submission | None = None

    @field_validator("summary")
    @classmethod
    def _summary_not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("summary must not be blank")
        return v

    @field_validator("changes", "evidence", "tests", "risks")
    @classmethod
    def _items_bounded(cls, v: list[str]) -> list[str]:
        for item in v:
            if len(item) > 2000:
                raise ValueError("list items are at most 2000 characters")
        return v

    @model_validator(mode="after")
    def _cross_field(self) -> TurnReport:
        if self.status == "deliverable_ready" and self.deliverable is None:
            raise ValueError("status deliverable_ready requires a deliverable")
        if self.deliverable is not None and self.status != "deliverable_ready":
            raise ValueError("only status deliverable_ready may carry a deliverable")
        if self.submission is not None and self.deliverable is None:
            raise ValueError("a submission requires a deliverable with its artifacts")
        return self

    def declared_artifacts(self) -> list[tuple[str, str]]:
        """(path, description) of the files the runtime freezes with this report."""
        if self.deliverable is None:
            return []
        return [(a.path, a.description) for a in self.deliverable.artifacts]


def one_line(exc: ValidationError, noun: str = "report") -> str:
    """A pydantic error as one line: `field.path: message; ...` (`noun` when no field)."""
    parts = []
    for err in exc.errors()[:5]:
        # A key of the agent's JSON may hold a newline: show such a key quoted.
        loc = ".".join(str(p) if str(p).isprintable() else repr(p) for p in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        parts.append(f"{loc or noun}: {msg}")
    more = len(exc.errors()) - 5
    if more > 0:
        parts.append(f"and {more} more")
    return " ".join("; ".join(parts).split())


def parse_report(data: Any) -> TurnReport:
    """Validate a decoded JSON value as a TurnReport; ValueError with one line on failure."""
    if not isinstance(data, dict):
        raise ValueError(f"report must be a JSON object, got {type(data).__name__}")
    try:
        return TurnReport.model_validate(data)
    except ValidationError as exc:
        raise ValueError(one_line(exc)) from None


_SCHEMA: dict[str, Any] = {}


def report_schema() -> dict[str, Any]:
    """The JSON schema of TurnReport (built on first use: it costs ~50 ms)."""
    if not _SCHEMA:
        _SCHEMA.update(TurnReport.model_json_schema())
    return _SCHEMA


def turn_record(
    *,
    run_id: str,
    report_id: str,
    lane: str,
    role: str,
    actor: str,
    turn: int,
    attempt: int,
    at: str,
    report: dict[str, Any],
    artifacts: list[dict[str, Any]],
    recovered_from_checkpoint: bool,
) -> dict[str, Any]:
    """The published record of a valid turn: who, when, the report and its frozen files."""
    return {
        "report_id": report_id,
        "run_id": run_id,
        "lane": lane,
        "role": role,
        "actor": actor,
        "turn": turn,
        "attempt": attempt,
        "at": at,
        "recovered_from_checkpoint": recovered_from_checkpoint,
        **report,
        "artifacts": artifacts,
    }


def failed_turn_record(
    *,
    run_id: str,
    report_id: str,
    lane: str,
    role: str,
    actor: str,
    turn: int,
    attempt: int,
    at: str,
    error: str,
) -> dict[str, Any]:
    """The report published for a failed turn, so the partner and other lanes see it."""
    return {
        "report_id": report_id,
        "run_id": run_id,
        "lane": lane,
        "role": role,
        "actor": actor,
        "turn": turn,
        "attempt": attempt,
        "at": at,
        "status": "turn_failed",
        "summary": (error or "turn failed")[:2000],
        "changes": [],
        "evidence": [],
        "tests": [],
        "risks": [],
        "next_step": "Retry with the alternating partner or report a concrete blocker.",
        "deliverable": None,
        "submission": None,
        "artifacts": [],
    }
