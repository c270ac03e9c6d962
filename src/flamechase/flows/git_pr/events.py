"""parallel_flame_chase:git_pr: pull requests, merges, publication."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from flamechase.events import FlowEvent, register


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


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PushRefused(FlowEvent):
    """A lane's push did not get through the central repository's hook."""

    kind: ClassVar[str] = "push_refused"
    ref: str = ""
    reason: str = ""

    def describe(self) -> str:
        return f"push to {self.ref} refused: {self.reason[:160]}"


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


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PrRequestRefused(FlowEvent):
    """A `flamechase pr` request the runtime did not carry out, and why."""

    kind: ClassVar[str] = "pr_request_refused"
    op: str = ""
    reason: str = ""

    def describe(self) -> str:
        return f"pr {self.op or 'request'} refused: {self.reason[:160]}"


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


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PrReviewing(FlowEvent):
    """The best ready PR beats main: the runtime integrates it."""

    kind: ClassVar[str] = "pr_reviewing"
    pr: str = ""
    value: float | None = None
    main_value: float | None = None

    def describe(self) -> str:
        return f"{self.pr} selected for integration ({self.value} vs main {self.main_value})"


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


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PrRejected(FlowEvent):
    kind: ClassVar[str] = "pr_rejected"
    pr: str = ""
    reason: str = ""

    def describe(self) -> str:
        return f"{self.pr} rejected: {self.reason[:160]}"


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


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PublicationHeld(FlowEvent):
    """Publication into the source stopped (a path edited outside the run); it is retried."""

    kind: ClassVar[str] = "publication_held"
    commit: str = ""
    reason: str = ""

    def describe(self) -> str:
        return f"publication of {self.commit[:12]} held: {self.reason[:160]}"
