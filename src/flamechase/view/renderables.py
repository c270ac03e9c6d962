"""Rich renderables of a run: pure functions of a frozen `RunSnapshot` and the time `now`.

No I/O and no clock reads here (elapsed times are `now` minus a turn's start), so the live
view redraws from whatever snapshot it holds, and tests render into a `StringIO` console.
Names, reports and errors come from flows and agents: every cell is a `Text` (never markup),
and `dashboard` leaves as text only (`Printable`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from flamechase.events.present import cell_text
from flamechase.text import printable
from flamechase.view.board import Panel
from flamechase.view.state import BudgetLine, LaneSnap, RunSnapshot, parse_at

__all__ = [
    "Flow",
    "Printable",
    "alerts_text",
    "best_text",
    "budget_text",
    "dashboard",
    "fmt_duration",
    "header",
    "lane_notes",
    "lanes_table",
    "panel_table",
]

_STATE_STYLE = {"turn": "bold yellow", "held": "bold red", "paused": "magenta", "idle": "dim"}
_REASON = 400  # characters of a hold's or failure's reason shown (agents write some of them)
PANEL_ROWS = 8  # rows of a flow's panel the dashboard shows: those that changed last
ALERTS = 3  # the last alerts the dashboard shows
_REPORT_STYLE = {
    "progress": "green",
    "deliverable_ready": "bold blue",
    "no_result": "dim",
    "blocked": "bold red",
    "turn_failed": "red",
}


def fmt_duration(seconds: float) -> str:
    """4.2s, 42s, 3m05s, 2h07m: short and fixed in shape, for narrow columns."""
    if seconds < 10:
        return f"{max(0.0, seconds):.1f}s"
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s // 60) % 60:02d}m"


def _amount(key: str, value: float) -> str:
    if key == "duration":
        return fmt_duration(value)
    if key == "cost":
        return f"${value:.2f}"
    if key == "output_tokens":
        return f"{value / 1000:.1f}k" if value >= 10_000 else f"{int(value)}"
    return f"{int(value)}"


def budget_text(line: BudgetLine) -> Text:
    """`turns 5/12 (7 left)`, or `cost $0.52/∞` for a key the run does not bound."""
    name = line.key.replace("_", " ")
    text = Text(f"{name} ", style="bold")
    if line.limit is None:
        text.append(f"{_amount(line.key, line.used)}/∞")
        return text
    left = line.left or 0.0
    text.append(f"{_amount(line.key, line.used)}/{_amount(line.key, line.limit)} ")
    text.append(f"({_amount(line.key, left)} left)", style="red" if left <= 0 else "green")
    return text


def best_text(snap: RunSnapshot) -> Text:
    best = snap.best
    if best is None:
        n = snap.submissions
        return Text(
            "best: " + (f"no ranked submission of {n}" if n else "no submission yet"), style="dim"
        )
    text = Text("best ", style="bold")
    text.append(f"{best.metric} = {best.value:g}", style="bold green")
    text.append(
        f" ({best.direction}) from {best.lane}, {best.report_id}"
        + (", verified" if best.verified else ", unverified")
    )
    return text


class Flow:
    """Items laid out left to right, wrapping between items and never inside one, so a budget
    line on a narrow terminal breaks at a `·` rather than between a name and its figure."""

    def __init__(
        self, items: Sequence[Text], *, lead: Text | None = None, sep: str = " · "
    ) -> None:
        self.items = items
        self.lead = lead or Text("")
        self.sep = sep

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        indent = Text(" " * self.lead.cell_len)
        line, empty = self.lead.copy(), True
        for item in self.items:
            if not empty and line.cell_len + len(self.sep) + item.cell_len > width:
                yield line
                line, empty = indent.copy(), True
            if not empty:
                line.append(self.sep, style="dim")
            line.append_text(item)
            empty = False
        yield line


class Printable:
    """`inner` as text only: every terminal control sequence and character dropped from its
    text (flamechase.text) and no hyperlink, whatever an agent or a flow wrote into it."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for seg in console.render(self.inner, options):
            if seg.control:
                continue  # cursor moves are the live display's own, never a cell's
            style = seg.style.update_link(None) if seg.style and seg.style.link else seg.style
            yield Segment(printable(seg.text, lines=True), style)


def header(snap: RunSnapshot, *, workspace: str | None = None) -> Group:
    """Run, status and active time; budget used/left for every key; the leaderboard's best.

    What matters while watching (status, active time) comes first, so a narrow terminal
    shows it whole; the run id and workspace path follow on their own line, cut if need be.
    """
    title = Text("flamechase ", style="bold")
    title.append(snap.flow or "run", style="bold cyan")
    title.append(f" · {snap.status}", style="bold")
    title.append(f" · {fmt_duration(snap.active_seconds)} active")
    where = [
        part for part in (f"run {snap.run_id}" if snap.run_id else "", workspace or "") if part
    ]
    parts: list[RenderableType] = [title]
    if where:
        parts.append(Text(" · ".join(where), style="dim", no_wrap=True, overflow="ellipsis"))
    parts.append(
        Flow([budget_text(line) for line in snap.budget], lead=Text("budget  ", style="dim"))
    )
    parts.append(best_text(snap))
    return Group(*parts)


def short_actor(actor: str, roles: tuple[str, ...] = ()) -> str:
    """What tells `actor` apart from the lane's other roles (the row names the lane already,
    as the replay does): `x_actor_b` among `x_actor_a`/`x_actor_b` is `b`; roles with nothing
    in common stay whole."""
    if len(roles) < 2 or actor not in roles:
        return actor
    # Character by character on purpose: role names, not paths.
    prefix = os.path.commonprefix(list(roles))  # noqa: RUF071
    return actor[len(prefix) :] or actor


def _elapsed(lane: LaneSnap, now: datetime) -> str:
    if lane.since is None:
        return ""
    return fmt_duration((now - parse_at(lane.since)).total_seconds())


def _state(lane: LaneSnap, pending: int) -> Text:
    """The lane's state word first (never cut: the column wraps), then its inbox. A track
    of turns outside lanes has no inbox and is never held: it works, waits, or is done."""
    if lane.solo:
        word = "working" if lane.actor else ("paused" if lane.paused_until else "idle")
        return Text(word, style=_STATE_STYLE["turn" if lane.actor else "idle"])
    word = {"turn": "working", "held": "HELD", "paused": "paused", "idle": "idle"}[lane.state]
    if lane.state == "paused" and lane.paused_until:
        word += f" until {lane.paused_until[11:16]}Z"
    text = Text(word, style=_STATE_STYLE[lane.state])
    if pending and lane.state != "held":
        text.append(f" · {pending} in inbox", style="dim")
    return text


def lanes_table(snap: RunSnapshot, now: datetime) -> Table:
    """One row per lane: actor on turn, elapsed, last report, turns, failures, state.

    Cells wrap rather than cut, and the state column is kept wide enough for its word, so
    at 80 columns a row may take two lines but still says what the lane is doing.
    """
    table = Table(
        expand=True, box=None, pad_edge=False, collapse_padding=True, header_style="bold dim"
    )
    table.add_column("lane", no_wrap=True)
    table.add_column("on turn", ratio=2, overflow="fold")
    table.add_column("elapsed", justify="right", no_wrap=True)
    table.add_column("last report", overflow="fold")
    table.add_column("turns", justify="right", no_wrap=True)
    table.add_column("fail", justify="right", no_wrap=True)
    table.add_column("state", ratio=3, min_width=7, overflow="fold")
    for lane in snap.lanes:
        on_turn = ""
        if lane.actor:
            # A track outside lanes is its role's: the row names it already.
            who = "" if lane.solo else f"{short_actor(lane.actor, lane.roles)} · "
            on_turn = f"{who}turn {lane.turn}"
            if lane.attempt > 1:
                on_turn += f" (attempt {lane.attempt})"
            if lane.moved_to and lane.backend == lane.moved_to:
                on_turn += f" on {lane.moved_to}"  # failed over from its role's first agent
        last = Text(lane.last_status or "—", style=_REPORT_STYLE.get(lane.last_status or "", ""))
        fails = Text(str(lane.failures), style="bold red" if lane.failures else "dim")
        table.add_row(
            Text(lane.name, style="italic" if lane.solo else ""),
            Text(on_turn),
            Text(_elapsed(lane, now)),
            last,
            f"{lane.turns}" + (f" ({lane.failed}✗)" if lane.failed else ""),
            fails,
            _state(lane, len(snap.pending.get(lane.name, ()))),
        )
    if not snap.lanes:
        table.add_row("—", "no lanes yet", "", "", "", "", "")
    return table


def lane_notes(snap: RunSnapshot) -> list[Text]:
    """Why a lane is held, or why its last turn failed: a line of its own per lane, wrapped
    to the terminal's width (a reason is clipped only past `_REASON` characters)."""
    notes = []
    for lane in snap.lanes:
        if lane.held:
            why, style = f"{lane.name} HELD: {lane.held_reason or 'no reason recorded'}", "red"
        elif lane.failures and lane.last_error:
            why = f"{lane.name} last turn failed: {lane.last_error}"
            style = "yellow"
        else:
            continue
        why = " ".join(why.split())
        if len(why) > _REASON:
            why = why[: _REASON - 1] + "…"
        notes.append(Text(why, style=style, overflow="fold"))
    return notes


def panel_table(panel: Panel, rows: int = PANEL_ROWS) -> Group:
    """A flow's panel as the flow named it (`fronts`, `pull requests`): one row per key, the
    rows that changed last when there are more than `rows`; cells wrap rather than cut."""
    shown = panel.recent(rows)
    title = Text(panel.name, style="bold")
    if len(shown) < len(panel.rows):
        title.append(f" · the {len(shown)} of {len(panel.rows)} that changed last", style="dim")
    table = Table(
        expand=False,
        box=None,
        pad_edge=False,
        collapse_padding=True,
        header_style="bold dim",
    )
    table.add_column("", no_wrap=True, style="bold")
    # Keys, columns and cells are what flows and agents wrote: Text, never rich markup.
    for column in panel.columns:
        table.add_column(Text(column), overflow="fold")
    for key, cells in shown:
        table.add_row(Text(key), *(Text(cell_text(cells.get(c))) for c in panel.columns))
    return Group(title, table)


def alerts_text(snap: RunSnapshot, n: int = ALERTS) -> list[Text]:
    """The last `n` alerts the run raised (anomalies a flow saw), each on its own lines."""
    alerts = snap.alerts[-n:]
    out = []
    if len(snap.alerts) > n:
        out.append(Text(f"alerts: {len(snap.alerts)}, the last {n}:", style="bold red"))
    for alert in alerts:
        why = " ".join(alert.split())
        if len(why) > _REASON:
            why = why[: _REASON - 1] + "…"
        out.append(Text(f"alert: {why}", style="red", overflow="fold"))
    return out


def dashboard(
    snap: RunSnapshot, now: datetime, recent: Sequence[str] = (), *, workspace: str | None = None
) -> RenderableType:
    """The whole live view: header, lanes (and tracks of turns outside lanes), the flow's
    panels and alerts, and the last few events, as text only."""
    parts: list[RenderableType] = [
        header(snap, workspace=workspace),
        Text(""),
        lanes_table(snap, now),
        *lane_notes(snap),
    ]
    for panel in snap.panels:
        parts += [Text(""), panel_table(panel)]
    alerts = alerts_text(snap)
    if alerts:
        parts += [Text(""), *alerts]
    if recent:
        parts.append(Text(""))
        for line in recent:
            parts.append(Text(line, style="dim", no_wrap=True, overflow="ellipsis"))
    return Printable(Group(*parts))
