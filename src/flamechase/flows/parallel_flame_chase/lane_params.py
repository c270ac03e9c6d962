"""Params shared by the flows whose lanes' work an evaluator command measures
(parallel_flame_chase and its git_pr variant): how many lanes, and how a score is read from
the evaluator's output. Each flow adds its own `evaluator` (optional or required)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, model_validator

from flamechase.flow import CopyParams

SCORE_PATTERN = r"SCORE:\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"


class MeasuredLaneParams(CopyParams):
    lanes: int = Field(default=3, ge=1, le=8, description="number of lanes")
    metric_pattern: str = Field(
        default=SCORE_PATTERN,
        description="regex with one group: the value in the evaluator's output",
    )
    metric: str = Field(default="score", min_length=1, max_length=200)
    direction: Literal["minimize", "maximize"] = "minimize"
    evaluator_timeout: float = Field(default=600.0, gt=0, le=86400)

    @model_validator(mode="after")
    def _pattern_compiles(self) -> MeasuredLaneParams:
        try:
            compiled = re.compile(self.metric_pattern)
        except re.error as exc:
            raise ValueError(f"metric_pattern does not compile: {exc}") from None
        if compiled.groups != 1:
            raise ValueError("metric_pattern must have exactly one group")
        return self
