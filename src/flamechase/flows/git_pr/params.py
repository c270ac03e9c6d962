"""What parallel_flame_chase:git_pr takes, and which paths a task lets the lanes change."""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from flamechase.flows.parallel_flame_chase.lane_params import MeasuredLaneParams
from flamechase.globs import GlobError, parse

NEEDS_EVALUATOR = (
    "parallel_flame_chase:git_pr needs -p evaluator='COMMAND': the runtime "
    "runs it on main and on every candidate to decide what is merged"
)


class GitPrParams(MeasuredLaneParams):
    evaluator: str = Field(
        default="",
        max_length=1000,
        validate_default=True,
        description="shell command the runtime runs in a clean checkout of each candidate "
        "(and of main at the start); required",
    )
    evaluator_files: list[str] = Field(
        default_factory=list,
        max_length=100,
        description="globs of files the evaluator uses besides those its command names; "
        "frozen from the baseline at the start, a PR that changes one is tampered",
    )
    allowed_paths: list[str] = Field(
        default_factory=list,
        max_length=200,
        description="globs of the paths PRs may change (JSON list); empty: any path but "
        ".git, unless the task says which",
    )

    @field_validator("evaluator")
    @classmethod
    def _evaluator_given(cls, value: str) -> str:
        if not value.strip():
            raise PydanticCustomError("evaluator_missing", NEEDS_EVALUATOR)
        return value

    @model_validator(mode="after")
    def _paths_relative(self) -> GitPrParams:
        for name in ("allowed_paths", "evaluator_files"):
            bad = [p for p in getattr(self, name) if not _relative(p)]
            if bad:
                raise ValueError(f"{name} must be relative paths or globs, not {bad[0]!r}")
        for pattern in self.evaluator_files:
            try:
                parse(pattern)
            except GlobError as exc:
                raise ValueError(f"evaluator_files: {exc}") from None
        return self


def _relative(pattern: str) -> bool:
    return bool(pattern) and not pattern.startswith(("/", "../")) and "\0" not in pattern


# "MUST NOT modify any file except `X`" / "MUST (only) modify `X`": the task names the paths.
_TASK_PATHS = re.compile(
    r"MUST\s+(?:NOT\s+modify\s+any\s+file\s+except|(?:only\s+)?modify)"
    r"\s+`([^`\n]+)`",
    re.IGNORECASE,
)


def task_paths(objective: str) -> list[str]:
    """Paths (globs) the objective restricts changes to; a trailing `/` means the tree."""
    out: list[str] = []
    for found in _TASK_PATHS.findall(objective):
        path = found.strip()
        if not _relative(path):
            continue
        out.append(path + "**" if path.endswith("/") else path)
    return list(dict.fromkeys(out))


def allowed_globs(params: GitPrParams, objective: str) -> tuple[str, ...]:
    """What PRs may change: the param, else what the task says, else anything (empty)."""
    return tuple(params.allowed_paths) or tuple(task_paths(objective))
