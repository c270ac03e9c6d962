"""The replay: a run's events as numbered points with state deltas, in one HTML file.

The document (what `build_document` returns, `serve` streams, and `replay_pack` packs into
the page as columns, gzipped) is

    {"v": 1, "run": {...header...}, "lanes": [{"name", "roles"}], "t0": ISO,
     "points": [{"q": seq, "t": ms since t0, "k": kind, "l": lane index or -1, "a": actor,
                 "x": sentence, "g": tag, "d": {deltas}}]}

and a point's deltas say only what its event changed (a lane's row, spend, the leaderboard,
a published report, acknowledgements, the run status, a turn block opening or closing). The
page folds them once, incrementally, into one state per point (sharing what did not change)
and renders only the current point, so dragging through 100,000 events stays cheap. `serve`
streams further points from the same `ReplayBuilder`, so a live page and a file agree.

Delta keys (lane and source indices are positions in "lanes"):
    L  [[lane, row]]      a lane's whole row (see `_lane_row` for the fields)
    N  [name, roles, solo] a track first seen mid-run (appended to "lanes"); solo: the turns
                          of a role outside lanes (planning, judging)
    S  [cost, turns, output_tokens, active_seconds, session_open]
    B  [duration, cost, turns, output_tokens]   budget limits (null: unbounded)
    P  [lane, report_id, artifacts]             a report published
    R  [report_id, artifacts]                   a published report's artifact count
    A  [[consumer, source, count]]              reports of `source` acknowledged by `consumer`
    W  {"n": submissions, "b": entry, "t": [entries]}  entry = [value, lane, report, verified,
                                                        metric, direction]
    st status                                   the run's status from here on
    o  [turn, attempt]                          a turn block opens on the point's lane
    e  [status, cost, duration, report_status]  the lane's open turn block closes
    m  [label, tone]                            a mark on the point's track, as the event
                                                shows it (a pull request merged, a gate run):
                                                tone info | good | bad
    F  [[panel, key, {cells}]]                  rows of the flow's panels (`Shown.rows`)
    X  text                                     an alert (something wrong the flow saw),
                                                kept in a list
    I  [lane, [source lanes]]                   the lanes whose reports `lane` reads, as its
                                                turn said (journals that never say: the
                                                header's `legacy`, every lane reads all)

Every sentence, mark, panel row and score comes from the event itself (`Event.show`), so a
flow's own kinds are drawn in its own words; nothing here names a kind of any flow.
"""

from __future__ import annotations

import base64
import gc
import hashlib
import html
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from flamechase.store.db import DB_NAME
from flamechase.store.reader import Reader
from flamechase.view.state import BUDGET_KEYS, Entry, LaneRow, RunFold, parse_at

__all__ = ["ReplayBuilder", "build_document", "load_run", "render_html", "write_replay"]

_OBJECTIVE = 2000  # characters of the objective kept in the page header
_TURN_ENDS = frozenset({"turn_valid", "turn_failed", "turn_interrupted", "lane_paused"})
_PAGE = 5000  # events read per query


def load_run(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """(run row, lanes rows, every event) of the run in `run_dir`, read-only; the run's flow
    imported where that needs no network, so that its event kinds speak its words."""
    from flamechase.loader import load_recorded

    with Reader(run_dir / DB_NAME) as r:
        run = r.run()
        load_recorded(str(run.get("flow_source") or ""))
        lanes = r.lanes()
        events: list[dict[str, Any]] = []
        while True:
            batch = r.events(after=events[-1]["seq"] if events else 0, limit=_PAGE)
            events.extend(batch)
            if len(batch) < _PAGE:
                break
    return run, lanes, events


def _entry(e: Entry | None) -> list[Any] | None:
    if e is None:
        return None
    return [e.value, e.lane, e.report_id, e.verified, e.metric, e.direction]


class ReplayBuilder:
    """Turns events, one at a time, into replay points."""

    def __init__(self, run: Mapping[str, Any], lanes: Iterable[Mapping[str, Any]]) -> None:
        self.fold = RunFold.from_run(run, lanes)
        self.names: list[str] = list(self.fold.order)
        self.initial = len(self.names)  # later lanes reach the page as `N` deltas
        self.index = {n: i for i, n in enumerate(self.names)}
        self.t0: datetime | None = None
        self.t0_text: str | None = None
        self._since: dict[str, int] = {}
        self.points: list[dict[str, Any]] = []
        self.last_seq = 0
        self.header: dict[str, Any] = {
            "id": run.get("id"),
            "flow": run.get("flow"),
            "status": run.get("status"),
            "workspace": run.get("workspace"),
            "created": run.get("created"),
            "updated": run.get("updated"),
            "objective": str(run.get("task") or "")[:_OBJECTIVE],
            "agents": run.get("agents") or {},
            # What the run ranks by, once an event of its flow declared it (`Shown.ranking`).
            "metric": None,
            "direction": None,
            "evaluator": None,
            "shares": self.fold.shares_reports,
            "last_error": run.get("last_error"),
        }

    def _ms(self, at: str) -> int:
        if not at:
            return self.points[-1]["t"] if self.points else 0
        when = parse_at(at)
        if self.t0 is None:
            self.t0, self.t0_text = when, at
        ms = round((when - self.t0).total_seconds() * 1000)
        # A turn's start is this event's time: remember it instead of parsing it again for
        # every later row of that lane.
        self._since = {at: ms}
        return ms

    def _lane_row(self, s: LaneRow) -> list[Any]:
        since = None
        if s.since is not None and self.t0 is not None:
            since = self._since.get(s.since)
            if since is None:
                since = round((parse_at(s.since) - self.t0).total_seconds() * 1000)
        return [
            s.actor,
            s.turn,
            s.attempt,
            since,
            s.turns,
            s.valid,
            s.failed,
            s.failures,
            s.last_status,
            int(s.held),
            s.held_reason,
            s.paused_until,
            s.last_actor,
            s.backend,
            s.last_error,
        ]

    # long: one delta key after another, as the module docstring lists them
    def add(self, ev: Mapping[str, Any]) -> dict[str, Any]:
        """Fold one event; return its point (also kept in `points`)."""
        fold = self.fold
        t = self._ms(str(ev.get("at") or ""))
        ch = fold.apply(ev)
        text, tag = ch.shown.text, ch.shown.tag
        d: dict[str, Any] = {}
        if len(fold.order) != len(self.names):
            for name in fold.order[len(self.names) :]:
                self.index[name] = len(self.names)
                self.names.append(name)
                row = fold.lanes[name]
                d["N"] = [name, list(row.roles), int(row.solo)]
        if ch.lanes:
            d["L"] = [[self.index[n], self._lane_row(fold.lanes[n])] for n in ch.lanes]
        if ch.spend or ch.status:
            d["S"] = [
                round(fold.cost, 6),
                fold.turns,
                fold.output_tokens,
                round(fold.active_seconds(), 3),
                int(fold._open_at is not None),
            ]
        if ch.budget:
            d["B"] = [fold.limits[k] for k in BUDGET_KEYS]
        if ch.published is not None and ch.published.lane in self.index:
            # (reports from the runtime to a lane, source `system:LANE`, have no track)
            rep = ch.published
            d["P"] = [self.index[rep.lane], rep.report_id, rep.artifacts]
        if ch.artifacts is not None:
            d["R"] = [ch.artifacts.report_id, ch.artifacts.artifacts]
        if ch.acks:
            d["A"] = [
                [self.index[c], self.index[s], n]
                for c, s, n in ch.acks
                if c in self.index and s in self.index
            ]
        if ch.board:
            d["W"] = {
                "n": fold.submissions,
                "b": _entry(fold.best),
                "t": [_entry(e) for e in fold.top],
            }
        if ch.status:
            d["st"] = fold.status
        if ch.mark is not None:
            d["m"] = list(ch.mark)
        if ch.shown.rows:
            d["F"] = [[r.panel, r.key, dict(r.cells)] for r in ch.shown.rows]
        if ch.shown.alert:
            d["X"] = ch.shown.alert
        if ch.reads is not None and ch.track in self.index:
            d["I"] = [self.index[ch.track], [self.index[n] for n in ch.reads if n in self.index]]
        kind = str(ev.get("kind") or "")
        p: Mapping[str, Any] = ev.get("payload") or {}
        if ch.track is not None and kind == "turn_started":
            d["o"] = [p.get("turn"), p.get("attempt")]
        elif ch.track is not None and kind in _TURN_ENDS:
            d["e"] = [
                str(p.get("status") or kind.removeprefix("turn_")),
                p.get("cost_usd") or 0,
                p.get("duration") or 0,
                p.get("report_status"),
            ]
        track = ch.track
        point = {
            "q": ev.get("seq"),
            "t": t,
            "k": kind,
            "l": self.index.get(track, -1) if track else -1,
            "a": ev.get("actor"),
            "x": text,
            "g": tag,
            "d": d,
        }
        self.points.append(point)
        self.last_seq = int(ev.get("seq") or self.last_seq)
        return point

    def document(self) -> dict[str, Any]:
        header = dict(self.header)
        header["final"] = self.fold.status
        # Turns of this journal never said which lanes they read (flamechase 0.1).
        header["legacy"] = not self.fold.inbox.said
        if self.fold.measured_by is not None and self.fold.primary is not None:
            header["metric"], header["direction"] = self.fold.primary
            header["evaluator"] = self.fold.measured_by
        return {
            "v": 1,
            "run": header,
            "lanes": [
                {
                    "name": n,
                    "roles": list(self.fold.lanes[n].roles),
                    "solo": bool(self.fold.lanes[n].solo),
                }
                for n in self.names[: self.initial]
            ],
            "t0": self.t0_text,
            "points": self.points,
        }


def build_document(
    run: Mapping[str, Any], lanes: Iterable[Mapping[str, Any]], events: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    b = ReplayBuilder(run, lanes)
    for ev in events:
        b.add(ev)
    return b.document()


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def render_html(doc: Mapping[str, Any], *, stream: str | None = None) -> str:
    """The self-contained replay page for `doc`; `stream`: an SSE URL for live updates."""
    from flamechase.view.assets import CSS, JS, SKELETON
    from flamechase.view.replay_pack import embed

    run = doc.get("run") or {}
    title = f"flamechase · {run.get('flow', '')} · {run.get('id', '')}"
    # Only the page's own script and style may run or apply (pinned by hash), and nothing
    # may be fetched except the live stream from the same origin: the file works offline
    # and a hostile summary cannot pull anything in.
    csp = "; ".join(
        [
            "default-src 'none'",
            f"script-src {_csp_hash(JS)}",
            f"style-src {_csp_hash(CSS)}",
            "connect-src 'self'" if stream else "connect-src 'none'",
            "img-src data:",
            "base-uri 'none'",
            "form-action 'none'",
        ]
    )
    live = f' data-stream="{html.escape(stream, quote=True)}"' if stream else ""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{CSS}</style></head>\n"
        f"<body{live}>\n{SKELETON}\n"
        f"{embed(doc)}\n"
        f"<script>{JS}</script>\n</body></html>\n"
    )


def write_replay(run_dir: Path, out: Path) -> dict[str, Any]:
    """Write the replay of the run in `run_dir` to `out`; returns the document."""
    from flamechase.fsutil import atomic_write

    # Hundreds of thousands of objects are made and all kept until the page is written, none
    # in a cycle: the cycle collector's passes over them were a third of the time at 100,000
    # events (bench/views_replay.py), and find nothing.
    gc.disable()
    try:
        run, lanes, events = load_run(run_dir)
        doc = build_document(run, lanes, events)
        page = render_html(doc)
    finally:
        gc.enable()
    # An output file the user asked for, to open or share: the usual 0644, not 0600.
    atomic_write(out, page.encode(), mode=0o644)
    return doc
