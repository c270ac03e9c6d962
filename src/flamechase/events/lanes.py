"""Lanes, reports and measurements: holds, pauses, places, reports, receipts."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from flamechase.events.base import Event, register
from flamechase.events.present import Score, Seen, Shown, and_, clip, plural, secs


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LaneHeld(Event):
    kind: ClassVar[str] = "lane_held"
    reason: str = ""
    remedy: str = ""  # what releases the lane, in its flow's words

    def describe(self) -> str:
        return f"HELD: {self.reason[:160]}" + (f"; {self.remedy}" if self.remedy else "")

    def show(self, seen: Seen) -> Shown:
        remedy = f" {self.remedy[:1].upper()}{self.remedy[1:]}." if self.remedy else ""
        return Shown(f"{self.lane} is HELD: {clip(self.reason, 200)}.{remedy}", "fail")


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LaneReleased(Event):
    kind: ClassVar[str] = "lane_released"
    reason: str = ""

    def describe(self) -> str:
        return f"released: {self.reason[:160]}"

    def show(self, seen: Seen) -> Shown:
        return Shown(f"{self.lane} goes on: {clip(self.reason, 200)}.", "plan")


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

    def show(self, seen: Seen) -> Shown:
        lane = self.lane or ""
        rid = self.report_id
        if lane.startswith("system:"):
            return Shown(
                f"The runtime reports to {lane.removeprefix('system:')}: "
                f"{self.report_kind.replace('_', ' ')} [{rid}].",
                "info",
            )
        what = f"a report ({self.report_status})"
        if self.artifacts:
            names = ", ".join(str(a.get("path")) for a in self.artifacts[:3])
            more = ", …" if len(self.artifacts) > 3 else ""
            what += f" and {plural(len(self.artifacts), 'artifact')} ({names}{more})"
        who = self.actor or lane
        return Shown(f"{who} files {what} in {lane}'s reports [{rid}].", "report")


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Measured(Event):
    """The runtime ran a measurement (an evaluator, a gate) and kept its receipt."""

    kind: ClassVar[str] = "measured"
    key: str = ""
    receipt: dict[str, Any] = dataclasses.field(default_factory=dict)
    # What the flow called it, and, when the flow ranks it (`Measure(metric=...)`), the metric
    # and its direction: the measurement is then a candidate on the leaderboard.
    label: str = ""
    metric: str | None = None
    direction: str | None = None

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

    def show(self, seen: Seen) -> Shown:
        what = self.label or self.key
        got = f"{self.value:g}" if self.value is not None else "no value"
        err = f" ({clip(self.error, 160)})" if self.error else ""
        name = f"{self.metric} " if self.metric else ""
        score = None
        if self.metric and self.value is not None and self.direction in ("minimize", "maximize"):
            score = Score(
                ref=self.key,
                lane=self.lane or "",
                metric=self.metric,
                direction=self.direction,  # type: ignore[arg-type]
                value=self.value,
            )
        return Shown(f"The runtime measures {what}: {name}{got}{err}.", "info", score=score)


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Ran(Event):
    """The runtime ran a program a flow asked for (`Run`) and kept its receipt."""

    kind: ClassVar[str] = "ran"
    key: str = ""
    receipt: dict[str, Any] = dataclasses.field(default_factory=dict)
    label: str = ""  # what the flow called the program (`Run(label=...)`)

    @property
    def ok(self) -> bool:
        return not self.receipt.get("error")

    @property
    def output(self) -> str:
        return str(self.receipt.get("output") or "")

    def describe(self) -> str:
        error = self.receipt.get("error")
        return f"ran {self.key}" + (f": {str(error)[:160]}" if error else "")

    def show(self, seen: Seen) -> Shown:
        what = self.label or program_words(self.receipt.get("argv"))
        took = secs(self.receipt.get("duration"))
        error = self.receipt.get("error")
        if error:
            return Shown(f"The runtime runs {what} ({took}): {clip(error, 200)}.", "warn")
        return Shown(f"The runtime runs {what} ({took}).", "info")


def program_words(argv: Any) -> str:
    """A program as a reader knows it: `treesync diff`, not an interpreter's path and flags."""
    if not isinstance(argv, list | tuple) or not argv:
        return "a program"
    words = [str(a) for a in argv]
    if "-m" in words:
        i = words.index("-m")
        module = words[i + 1].rsplit(".", 1)[-1] if i + 1 < len(words) else "python"
        rest = [w for w in words[i + 2 : i + 3] if not w.startswith("-")]
        return and_([" ".join([module, *rest])])
    return clip(" ".join(words[:3]), 60)
