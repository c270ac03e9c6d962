"""budget.disk: a new copy past it is refused; everything that needs no new copy goes on.

The budget bounds what the run's directory holds. A copy (`MakePlace` of a snapshot or an
overlay) is what makes it grow by a tree at a time, so that is what the gate refuses once
the run holds `budget.disk` bytes or more: turns waiting on the refused place are never
started (they wait on a place that is not made), while turns on places that exist (lane 1 on
the user's tree, lanes whose copies were made earlier) are admitted as before. The run ends
only once nothing else can happen, with the same one line the refusal was said in.

Measuring walks the run's directory. While the run is under the bound, each copy is judged
on what the run holds once the copies and removals under way are done (so with budget.disk
set, copies are made one at a time); a refusal is kept until a place is dropped (which may
give the room back).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from flamechase.events.run import Notice
from flamechase.flow import commands as cm
from flamechase.workspace.diskuse import size_text

__all__ = ["DiskGate", "Verdict"]

Verdict = Literal["make", "wait", "refuse"]


class DiskGate:
    def __init__(self, limit: int | None, measure: Callable[[], int]) -> None:
        self.limit = limit
        self._measure = measure
        self.over: int | None = None  # bytes under the run when a copy was last refused
        self._stale = True  # a refusal is measured again (after a drop)
        self._said = False
        self.refused: set[str] = set()  # places refused in the current round

    def round(self) -> None:
        """A new round of the flow's commands: what it still wants is refused again."""
        self.refused.clear()

    def dropped(self) -> None:
        """A place was dropped: the run may hold less now."""
        self._stale = True

    def verdict(self, c: cm.MakePlace, *, copying: bool) -> Verdict:
        """Whether copy `c` is made now, waits (`copying`: a copy or a removal is under way,
        so the run's size is not yet what it will be), or is refused."""
        if c.how == "empty" or self.limit is None:
            return "make"
        if self.over is not None and not self._stale:
            self.refused.add(c.name)
            return "refuse"
        if copying:
            return "wait"  # asked again once it is done: the loop wakes then
        used = self._measure()
        self._stale = False
        if used < self.limit:
            self.over = None
            return "make"
        self.over = used
        self.refused.add(c.name)
        return "refuse"

    def reason(self) -> str:
        """The one line of a refusal: what is held, the bound, what waits, the way out."""
        assert self.over is not None and self.limit is not None
        waiting = ", ".join(sorted(self.refused)) or "new places"
        return (
            f"budget.disk is spent: {size_text(self.over)} under the run, "
            f"budget.disk={size_text(self.limit)}; no new copy is made (waiting: {waiting}), "
            "turns on existing places go on; reclaim disk with `flamechase gc` or resume "
            "with a larger -p budget.disk=…"
        )

    def notice(self) -> Notice | None:
        """The refusal said once per session, when it first happens."""
        if self._said or not self.refused:
            return None
        self._said = True
        return Notice(message=self.reason())
