"""The live terminal view `flamechase exec` shows on a TTY.

`LiveObserver(prepared)` folds each committed event into a `RunFold` and lets rich's `Live`
redraw a dashboard in place a few times a second (so elapsed times move between events, and
a resized terminal is re-measured on the next frame). The engine calls `event()` from its
loop thread while `Live` renders from its refresh thread; a lock keeps the two apart and the
renderer only ever sees a frozen snapshot.

On a resumed run the fold first reads the run's earlier events (read-only) so turn counts,
pending reports and spend are the run's, not this session's.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console, RenderableType
from rich.live import Live

from flamechase.errors import StoreError
from flamechase.view.renderables import dashboard
from flamechase.view.state import END_KINDS, Change, RunFold

__all__ = ["LiveObserver", "event_line", "fold_for"]


def event_line(ev: Mapping[str, Any], change: Change) -> str:
    """`HH:MM:SS sentence`: how `ev` shows itself (`change`: what folding it gave)."""
    return f"{str(ev.get('at') or '')[11:19]} {change.shown.text}"


def fold_for(prepared: Any) -> RunFold:
    """A fold shaped by what `prepare` decided: lanes, roles, budget."""
    flow = prepared.flow
    params = prepared.params
    return RunFold(
        flow=str(flow.name),
        lanes=[(ln.name, ln.roles) for ln in flow.lanes(params)],
        budget=prepared.budget.to_json(),
        run_id=prepared.resume_from.name if prepared.resume_from is not None else "",
    )


class LiveObserver:
    """Engine observer drawing the dashboard; `close()` leaves the last frame on screen."""

    def __init__(
        self,
        prepared: Any,
        *,
        console: Console | None = None,
        refresh_per_second: float = 4.0,
        recent: int = 6,
        start: bool = True,
    ) -> None:
        self.prepared = prepared
        self.fold = fold_for(prepared)
        self.workspace = str(prepared.workspace)
        self.recent: collections.deque[str] = collections.deque(maxlen=recent)
        self._lock = threading.Lock()
        self._seen = 0  # events up to this seq are folded already (a resume's history)
        if prepared.resume_from is not None:
            self._preload(Path(prepared.resume_from))
        self.console = console or Console()
        self.live = Live(
            console=self.console,
            get_renderable=self.renderable,
            refresh_per_second=refresh_per_second,
            transient=False,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._started = False
        if start:
            self.live.start()
            self._started = True

    def _preload(self, run_dir: Path) -> None:
        from flamechase.store.db import DB_NAME
        from flamechase.store.reader import Reader

        try:
            with Reader(run_dir / DB_NAME) as r:
                while True:
                    batch = r.events(after=self._seen, limit=5000)
                    for ev in batch:
                        self.fold.apply(ev)
                        self._seen = int(ev["seq"])
                    if len(batch) < 5000:
                        break
        except StoreError:
            pass  # a view must never stop a run; the dashboard starts from this session

    def renderable(self, now: datetime | None = None) -> RenderableType:
        with self._lock:
            snap = self.fold.snapshot(now or datetime.now(UTC))
            recent = list(self.recent)
        return dashboard(snap, now or datetime.now(UTC), recent, workspace=self.workspace)

    def event(self, ev: dict[str, Any]) -> None:
        seq = int(ev.get("seq") or 0)
        if seq and seq <= self._seen:
            return
        with self._lock:
            change = self.fold.apply(ev)
            self._seen = max(self._seen, seq)
            if ev.get("kind") not in END_KINDS:
                # The status in the title says it ended; its one line is exec's, on stderr.
                self.recent.append(event_line(ev, change))
            if not self.fold.run_id and ev.get("kind") == "run_created":
                self.fold.run_id = self._run_id()
        if self._started and ev.get("kind") != "turn_started":
            # Turn ends and run ends should show at once, not on the next tick.
            self.live.refresh()

    def _run_id(self) -> str:
        """The fresh run's id: events carry none, but the source lock names its owner."""
        from flamechase.store.home import locks_dir
        from flamechase.workspace.locks import owner

        try:
            held = owner(locks_dir(), Path(self.prepared.workspace))
        except OSError:
            return ""
        return str((held or {}).get("run_id") or "")

    def close(self) -> None:
        if self._started:
            self._started = False
            self.live.refresh()
            self.live.stop()
