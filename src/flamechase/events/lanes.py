"""Lanes, reports and measurements: holds, pauses, places, reports, receipts."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from flamechase.events.base import Event, register


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LaneHeld(Event):
    kind: ClassVar[str] = "lane_held"
    reason: str = ""

    def describe(self) -> str:
        return f"HELD: {self.reason[:160]}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LaneReleased(Event):
    kind: ClassVar[str] = "lane_released"
    reason: str = ""

    def describe(self) -> str:
        return f"released: {self.reason[:160]}"


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ReportPublished(Event):
    """A report entered the run's report log (seq = its position), with frozen artifacts."""

    kind: ClassVar[str] = "report_published"
    report_id: str = ""
    report_seq: int = 0
    report_status: str | None = None
    report_kind: str = "report"
    artifacts: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        n = len(self.artifacts)
        return f"report {self.report_id} published" + (f" with {n} frozen artifact(s)" if n else "")


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Measured(Event):
    """The runtime ran a measurement (an evaluator, a gate) and kept its receipt."""

    kind: ClassVar[str] = "measured"
    key: str = ""
    receipt: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def value(self) -> float | None:
        v = self.receipt.get("value")
        return float(v) if isinstance(v, int | float) else None

    @property
    def error(self) -> str | None:
        e = self.receipt.get("error")
        return str(e) if e else None

    def describe(self) -> str:
        if self.error:
            return f"measured {self.key}: {self.error[:160]}"
        return (
            f"measured {self.key}: {self.value:g}"
            if self.value is not None
            else (f"measured {self.key}")
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Ran(Event):
    """The runtime ran a program a flow asked for (`Run`) and kept its receipt."""

    kind: ClassVar[str] = "ran"
    key: str = ""
    receipt: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.receipt.get("error")

    @property
    def output(self) -> str:
        return str(self.receipt.get("output") or "")

    def describe(self) -> str:
        error = self.receipt.get("error")
        return f"ran {self.key}" + (f": {str(error)[:160]}" if error else "")
