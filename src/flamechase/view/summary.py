"""What a run amounted to, in a few lines: `demo`, `simulate` and `show RUN` print it.

Derived from the run's events through the same fold as every other view.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from flamechase.store.db import DB_NAME
from flamechase.store.reader import Reader
from flamechase.view.board import Panel
from flamechase.view.state import RunFold

__all__ = [
    "Summary",
    "fold_run",
    "fold_shown",
    "panels_json",
    "shown_skip",
    "summarize",
    "summarize_fold",
]


@dataclasses.dataclass(frozen=True, slots=True)
class Summary:
    """What a run amounted to, from its events: the lines `demo` and `show` print."""

    run_id: str
    flow: str
    status: str
    lanes: tuple[tuple[str, int, int, int], ...]  # lane, turns, valid, failed
    solo: tuple[tuple[str, int, int, int], ...]  # the same, per role of turns outside lanes
    reports: int
    exchanged: int  # reports another lane received and acknowledged with a valid turn
    artifacts: int  # artifacts published
    integrated: tuple[tuple[str, str, int, str | None], ...]  # lane, report, artifacts, actor
    best: str | None
    cost: float
    turns: int
    active_seconds: float
    events: int
    take: str | None = None  # the command that applies the best candidate, when it is not there

    def lines(self) -> list[str]:
        out = [
            f"run {self.run_id} · {self.flow} · {self.status} · {self.turns} turns · "
            f"${self.cost:.4f} · {self.active_seconds:.1f} s active · {self.events} events"
        ]

        def counts(rows: tuple[tuple[str, int, int, int], ...]) -> str:
            return ", ".join(
                f"{name} {valid}" + (f"+{failed} failed" if failed else "")
                for name, _, valid, failed in rows
            )

        # Turns outside lanes (planning, judging) are counted by role, never as lanes.
        if self.lanes or not self.solo:
            out.append(f"turns per lane: {counts(self.lanes) or 'none'}")
        if self.solo:
            out.append(f"turns outside lanes: {counts(self.solo)}")
        out.append(
            f"reports: {self.reports} published, {self.exchanged} received by "
            f"another lane · artifacts: {self.artifacts} published, "
            f"{sum(n for _, _, n, _ in self.integrated)} integrated"
        )
        for lane, rid, n, actor in self.integrated:
            out.append(f"  {lane} ({actor}) integrated {rid} ({n} artifact{'s' if n != 1 else ''})")
        out.append(f"best candidate: {self.best or 'none ranked'}")
        if self.take:
            out.append(f"  it is not in your tree; to take it: {self.take}")
        return out


def summarize_fold(fold: RunFold) -> Summary:
    best = fold.best
    best_text = None
    if best is not None:
        best_text = (
            f"{best.metric} = {best.value:g} ({best.direction}) from {best.lane}, "
            f"{best.report_id}" + (", verified" if best.verified else ", unverified")
        )
    return Summary(
        run_id=fold.run_id,
        flow=fold.flow,
        status=fold.status,
        lanes=tuple(
            (s.name, s.turns, s.valid, s.failed)
            for s in (fold.lanes[n] for n in fold.order)
            if not s.solo
        ),
        solo=tuple(
            (s.name, s.turns, s.valid, s.failed)
            for s in (fold.lanes[n] for n in fold.order)
            if s.solo
        ),
        reports=len(fold.reports),
        exchanged=fold.acknowledged(),
        artifacts=sum(r.artifacts for r in fold.reports),
        integrated=tuple(
            (lane, rid, fold.by_id[rid].artifacts, actor) for lane, rid, actor in fold.integrated
        ),
        best=best_text,
        cost=fold.cost,
        turns=fold.turns,
        active_seconds=fold.active_seconds(),
        events=fold.events,
    )


def fold_run(run_dir: Path) -> RunFold:
    """Every event of the run in `run_dir` folded, read-only, its flow's kinds speaking its
    words when its code is here (a fold of 10,000 events takes about 0.2 s)."""
    from flamechase.loader import load_recorded

    with Reader(run_dir / DB_NAME) as r:
        run = r.run()
        load_recorded(str(run.get("flow_source") or ""))
        fold = RunFold.from_run(run, r.lanes())
        after = 0
        while True:
            batch = r.events(after=after, limit=5000)
            for ev in batch:
                fold.apply(ev)
                after = int(ev["seq"])
            if len(batch) < 5000:
                break
    # The run row has the last word on status (a run stopped by a crash emits no end event).
    fold.status = str(run.get("status") or fold.status)
    return fold


def fold_shown(run_dir: Path) -> RunFold:
    """What `status` shows of the run in `run_dir` beyond its tables: its flow's own events
    (the engine's turn, report and budget kinds left out: they fill no panel and raise no
    alert) folded, read-only, so the flow's panels and alerts are those every view shows.
    The places stay in: a flow's sentences name them. A run of 10,000 events, 900 of them its
    flow's, folds in a tenth of the time all of them take."""
    from flamechase.loader import load_recorded

    with Reader(run_dir / DB_NAME) as r:
        run = r.run()
        load_recorded(str(run.get("flow_source") or ""))
        fold = RunFold.from_run(run, r.lanes())
        skip = shown_skip()
        after = 0
        while True:
            batch = r.events_except(skip, after=after, limit=5000)
            for row in batch:
                fold.apply(row)
                after = int(row["seq"])
            if len(batch) < 5000:
                break
    return fold


# Engine kinds `fold_shown` keeps: what flows' sentences may name (places, the run's lanes).
_KEPT = frozenset({"place_made", "place_dropped", "run_created"})


def shown_skip() -> tuple[str, ...]:
    """The kinds `fold_shown` leaves out: the engine's, but those in `_KEPT`."""
    from flamechase import events as ev

    return tuple(k for k, c in ev.REGISTRY.items() if k not in _KEPT and _engine(c))


def _engine(cls: type) -> bool:
    return cls.__module__.startswith("flamechase.events.")


def summarize(run_dir: Path) -> Summary:
    """The summary of the run in `run_dir`, read-only."""
    fold = fold_run(run_dir)
    return dataclasses.replace(summarize_fold(fold), take=take_command(run_dir, fold))


def take_command(run_dir: Path, fold: RunFold) -> str | None:
    """`flamechase artifacts apply RUN ID` for the best candidate, when it is verified, kept
    to apply, and the tree as the run left it does not hold it already."""
    from flamechase.store import handover

    best = fold.best
    if best is None or not best.verified:
        return None
    with Reader(run_dir / DB_NAME) as r:
        packages = r.metas(handover.PREFIX)
        at_end = r.meta(handover.TREE_AT_END)
    package = next((v for k, v in packages.items() if k.rsplit("/", 1)[-1] == best.report_id), None)
    if package is None or at_end is None:
        return None
    files = package["files"]
    wanted = {
        p: files[p]["sha256"] if p in files else handover.ABSENT for p in handover.touched(package)
    }
    if all(at_end.get(p) == sha for p, sha in wanted.items()):
        return None
    return f"flamechase artifacts apply {fold.run_id} {best.report_id}"


def panels_json(panels: tuple[Panel, ...]) -> list[dict[str, Any]]:
    """A run's panels as `status --json` gives them: each with its columns and its rows in
    the panel's order (`touched`: the keys, the row changed last last)."""
    return [
        {
            "name": p.name,
            "columns": list(p.columns),
            "rows": [{"key": key, "cells": dict(cells)} for key, cells in p.rows],
            "touched": list(p.touched),
        }
        for p in panels
    ]
