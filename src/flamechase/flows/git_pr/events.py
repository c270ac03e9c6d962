"""parallel_flame_chase:git_pr's event kinds (pull requests, merges, publication), and how
they show: marks on the lanes' tracks, and a panel of pull requests and one of main."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from flamechase.events import FlowEvent, register
from flamechase.events.present import Cell, Mark, Row, Seen, Shown, clip, num


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CentralReady(FlowEvent):
    """The central repository holds the source's baseline commit on main."""

    kind: ClassVar[str] = "central_ready"
    commit: str = ""
    files: int = 0
    allowed: list[str] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        return f"central repository seeded: {self.files} files at {self.commit[:12]}"

    def show(self, seen: Seen) -> Shown:
        return Shown(
            f"The runtime seeds the central repository with your tree's baseline "
            f"({self.files} files, {self.commit[:12]}); each lane gets its own clone.",
            "info",
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class MainMeasured(FlowEvent):
    """The runtime measured main (the baseline at the start): what candidates must beat."""

    kind: ClassVar[str] = "main_measured"
    commit: str = ""
    value: float | None = None
    error: str | None = None

    def describe(self) -> str:
        got = f"{self.value:g}" if self.value is not None else f"no value ({self.error})"
        return f"main {self.commit[:12]} measured: {got}"

    def show(self, seen: Seen) -> Shown:
        text = (
            f"Main at {self.commit[:12]} measures {num(self.value)}: what candidates must beat."
            if self.error is None
            else f"Main at {self.commit[:12]} could not be measured: {clip(self.error, 160)}."
        )
        return Shown(
            text,
            "info",
            rows=(Row("main", "main", {"commit": self.commit[:12], "value": self.value}),),
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PushRefused(FlowEvent):
    """A lane's push did not get through the central repository's hook."""

    kind: ClassVar[str] = "push_refused"
    ref: str = ""
    reason: str = ""

    def describe(self) -> str:
        return f"push to {self.ref} refused: {self.reason[:160]}"

    def show(self, seen: Seen) -> Shown:
        return Shown(
            f"{self.lane}'s push to {self.ref} is refused by the central repository's hook: "
            f"{clip(self.reason, 200)}.",
            "fail",
            mark=Mark("push refused", "bad"),
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PrOpened(FlowEvent):
    kind: ClassVar[str] = "pr_opened"
    pr: str = ""
    branch: str = ""
    head: str = ""
    title: str = ""

    def describe(self) -> str:
        return f"{self.pr} opened from {self.branch}: {self.title[:120]}"

    def show(self, seen: Seen) -> Shown:
        return Shown(
            f"{self.lane} opens {self.pr} from {self.branch}: “{clip(self.title, 120)}”.",
            "report",
            mark=Mark(f"{self.pr} opened"),
            rows=(_pr(self.pr, lane=self.lane, branch=self.branch, state="draft"),),
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PrRequestRefused(FlowEvent):
    """A `flamechase pr` request the runtime did not carry out, and why."""

    kind: ClassVar[str] = "pr_request_refused"
    op: str = ""
    reason: str = ""

    def describe(self) -> str:
        return f"pr {self.op or 'request'} refused: {self.reason[:160]}"

    def show(self, seen: Seen) -> Shown:
        return Shown(
            f"The runtime refuses {self.lane}'s `pr {self.op}`: {clip(self.reason, 200)}.",
            "fail",
            mark=Mark("PR request refused", "bad"),
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PrReady(FlowEvent):
    """The runtime measured a PR's head in a clean checkout: the PR is ready, with a receipt."""

    kind: ClassVar[str] = "pr_ready"
    pr: str = ""
    commit: str = ""
    value: float | None = None
    main_value: float | None = None

    def describe(self) -> str:
        return f"{self.pr} ready: measured {self.value} at {self.commit[:12]}"

    def show(self, seen: Seen) -> Shown:
        return Shown(
            f"{self.pr} of {self.lane} is ready: it measures {num(self.value)} at "
            f"{self.commit[:12]} (main: {num(self.main_value)}).",
            "info",
            mark=Mark(f"{self.pr} ready"),
            rows=(_pr(self.pr, state="ready", value=self.value),),
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PrReviewing(FlowEvent):
    """The runtime integrates a ready PR: the best one that beats main, or a stale one whose
    merge with main it measures."""

    kind: ClassVar[str] = "pr_reviewing"
    pr: str = ""
    value: float | None = None
    main_value: float | None = None
    stale: bool = False  # main moved since its base: its merge with main is what is judged

    def describe(self) -> str:
        return f"{self.pr} selected for integration ({self.value} vs main {self.main_value})"

    def show(self, seen: Seen) -> Shown:
        text = (
            f"{self.pr} of {self.lane} was made on an older main (its head alone measures "
            f"{num(self.value)}, main {num(self.main_value)}): the runtime merges it with "
            "main and measures the merge."
            if self.stale
            else f"{self.pr} of {self.lane} beats main ({num(self.value)} against "
            f"{num(self.main_value)}): the runtime merges it."
        )
        return Shown(
            text,
            "plan",
            rows=(_pr(self.pr, state="merging"),),
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PrMerged(FlowEvent):
    kind: ClassVar[str] = "pr_merged"
    pr: str = ""
    merge: str = ""
    value: float | None = None
    prior: float | None = None
    remeasured: bool = False  # the merge with a main that had moved was measured again

    def describe(self) -> str:
        return f"{self.pr} merged into main at {self.merge[:12]}: {self.prior} -> {self.value}"

    def show(self, seen: Seen) -> Shown:
        again = (
            ", measured again after merging it with a main that had moved"
            if self.remeasured
            else ""
        )
        return Shown(
            f"{self.pr} of {self.lane} is merged into main at {self.merge[:12]}: "
            f"{num(self.prior)} → {num(self.value)}{again}.",
            "best",
            mark=Mark(f"{self.pr} merged", "good"),
            rows=(
                _pr(self.pr, state="merged", value=self.value),
                Row("main", "main", {"commit": self.merge[:12], "value": self.value}),
            ),
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PrRejected(FlowEvent):
    kind: ClassVar[str] = "pr_rejected"
    pr: str = ""
    reason: str = ""

    def describe(self) -> str:
        return f"{self.pr} rejected: {self.reason[:160]}"

    def show(self, seen: Seen) -> Shown:
        return Shown(
            f"{self.pr} of {self.lane} is rejected: {clip(self.reason, 240)}.",
            "fail",
            mark=Mark(f"{self.pr} rejected", "bad"),
            rows=(_pr(self.pr, state="rejected"),),
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PrTampered(FlowEvent):
    """A PR changes the evaluator's frozen files: never measured, never merged."""

    kind: ClassVar[str] = "pr_tampered"
    pr: str = ""
    files: list[str] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        return f"{self.pr} tampered: it changes the frozen {', '.join(self.files)[:160]}"

    def show(self, seen: Seen) -> Shown:
        return Shown(
            f"{self.pr} of {self.lane} changes the evaluator's frozen files "
            f"({clip(', '.join(self.files), 200)}): it is tampered, never measured or merged.",
            "fail",
            mark=Mark(f"{self.pr} tampered", "bad"),
            rows=(_pr(self.pr, state="tampered"),),
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class MainPublished(FlowEvent):
    """Main's changed paths were written into the source tree (and committed, in git)."""

    kind: ClassVar[str] = "main_published"
    commit: str = ""
    paths: int = 0
    source_commit: str | None = None

    def describe(self) -> str:
        return f"main {self.commit[:12]} published to the source ({self.paths} paths)"

    def show(self, seen: Seen) -> Shown:
        committed = f", committed as {self.source_commit[:12]}" if self.source_commit else ""
        return Shown(
            f"Main ({self.commit[:12]}) is published to your tree: {self.paths} path(s)"
            f"{committed}.",
            "report",
        )


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PublicationHeld(FlowEvent):
    """Publication into the source stopped (a path edited outside the run); it is retried."""

    kind: ClassVar[str] = "publication_held"
    commit: str = ""
    reason: str = ""

    def describe(self) -> str:
        return f"publication of {self.commit[:12]} held: {self.reason[:160]}"

    def show(self, seen: Seen) -> Shown:
        return Shown(
            f"Publication of main ({self.commit[:12]}) to your tree is held: "
            f"{clip(self.reason, 240)}; it is tried again.",
            "warn",
        )


def _pr(pr: str, **cells: Cell) -> Row:
    """A row of the `pull requests` panel."""
    return Row("pull requests", pr, cells)
