"""parrallello's contact sheets: "numbers first, eyes last: images only at the end and in at most
3 contact sheets (at most 1600 px)". A builder leaves images in `rt.SHEETS` of its copy (never
compared, never taken into the front's tree); once the critic's copy is synced, the runtime's
`tools/sheets` takes at most `rt.SHEETS_MAX` of them into the critic's copy, each decoded by its
content and written again at most `rt.SHEETS_PX` px, refusing links, bombs, non-images and the
rest (`rt.sheets`). Here: the line that counts them, and what the critic's brief says of them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from flamechase.events import FlowEvent, register
from flamechase.events.present import Seen, Shown, clip, plural
from flamechase.flow import Command, Emit
from flamechase.flows.parrallello import runtime as rt
from flamechase.flows.parrallello.state import FrontState, RoundState

__all__ = ["SheetsTaken", "brief", "said"]

LISTED = 20  # refusals named in the event (all are counted)


@register
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SheetsTaken(FlowEvent):
    """The contact sheets the runtime took to a round's critic: at most 3, each decoded and at
    most 1600 px, and what it refused (links, bombs, non-images, the 4th and on)."""

    kind: ClassVar[str] = "sheets_taken"
    front: str = ""
    round: int = 0
    taken: list[str] = dataclasses.field(default_factory=list)
    resized: int = 0
    refused: list[str] = dataclasses.field(default_factory=list)
    refused_count: int = 0
    error: str | None = None

    def describe(self) -> str:
        if self.error:
            return f"{self.front} round {self.round}: no contact sheets ({self.error})"
        text = f"{self.front} round {self.round}: {plural(len(self.taken), 'contact sheet')}"
        text += " taken to the critic"
        if self.resized:
            text += f" ({self.resized} downsized)"
        if self.refused_count:
            text += f", {self.refused_count} refused"
        return text

    def show(self, seen: Seen) -> Shown:
        if self.error:
            return Shown(
                f"Front {self.front}, round {self.round}: the critic gets no contact sheets "
                f"({clip(self.error, 120)}).",
                "warn",
            )
        text = (
            f"Front {self.front}, round {self.round}: "
            f"{plural(len(self.taken), 'contact sheet')} taken to the critic"
        )
        if self.resized:
            text += f", {self.resized} downsized to {rt.SHEETS_PX} px"
        if self.refused_count:
            text += f"; {self.refused_count} refused ({clip('; '.join(self.refused[:2]), 160)})"
        return Shown(text + ".", "warn" if self.refused_count else "info")


def said(front: FrontState, rs: RoundState, out: dict[str, Any]) -> list[Command]:
    """The contact sheets taken to the critic, counted in one line (none when no builder left
    an image and nothing failed)."""
    taken = list(out.get("taken") or [])
    refused = list(out.get("refused") or [])
    if not taken and not refused and not out.get("error"):
        return []
    event = SheetsTaken(
        lane=front.lane,
        front=front.id,
        round=rs.number,
        taken=[str(t.get("name")) for t in taken][: rt.SHEETS_MAX],
        resized=sum(1 for t in taken if t.get("resized_from")),
        refused=[f"{r.get('from')}/{r.get('file')}: {r.get('why')}" for r in refused][:LISTED],
        refused_count=len(refused),
        error=str(out["error"])[:300] if out.get("error") else None,
    )
    return [Emit(event)]


def brief(rs: RoundState) -> dict[str, Any]:
    """The images the runtime took into the critic's copy (paths relative to it)."""
    out = rs.sheets or {}
    return {
        "dir": rt.SHEETS,
        "files": [
            {k: t.get(k) for k in ("name", "from", "size", "resized_from")}
            for t in out.get("taken") or []
        ],
        "refused": len(out.get("refused") or []),
    }
