"""Rich renderables of a run: pure functions of a frozen `RunSnapshot` and the time `now`.

No I/O and no clock reads here (elapsed times are `now` minus a turn's start), so the live
view redraws from whatever snapshot it holds, and tests render into a `StringIO` console.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from flamechase.view.state import BudgetLine, LaneSnap, RunSnapshot, parse_at

__all__ = ["best_text", "budget_text", "dashboard", "fmt_duration", "header", "lanes_table"]

_STATE_STYLE = {"turn": "bold yellow", "held": "bold red", "paused": "magenta", "idle": "dim"}
_REPORT_STYLE = {"progress": "green", "deliverable_ready": "bold blue", "no_result": "dim",
                 "blocked": "bold red", "turn_failed": "red"}


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
        return Text("best: " + (f"no ranked submission of {n}" if n else "no submission yet"),
                    style="dim")
    text = Text("best ", style="bold")
    text.append(f"{best.metric} = {best.value:g}", style="bold green")
    text.append(f" ({best.direction}) from {best.lane}, {best.report_id}"
                + (", verified" if best.verified else ", unverified"))
    return text


def header(snap: RunSnapshot, *, workspace: str | None = None) -> Table:
    """Run, status and active time; budget used/left for every key; the leaderboard's best."""
    grid = Table.grid(padding=(0, 1), expand=True)
    grid.add_column(ratio=1)
    # One line whatever the width: a long workspace path is cut, not wrapped.
    title = Text("flamechase ", style="bold", no_wrap=True, overflow="ellipsis")
    title.append(snap.flow or "run", style="bold cyan")
    if snap.run_id:
        title.append(f" · {snap.run_id}", style="dim")
    title.append(f" · {snap.status}", style="bold")
    title.append(f" · {fmt_duration(snap.active_seconds)} active")
    if workspace:
        title.append(f" · {workspace}", style="dim")
    grid.add_row(title)
    budget = Text("budget  ", style="dim")
    for i, line in enumerate(snap.budget):
        if i:
            budget.append(" · ", style="dim")
        budget.append_text(budget_text(line))
    grid.add_row(budget)
    grid.add_row(best_text(snap))
    return grid


def _elapsed(lane: LaneSnap, now: datetime) -> str:
    if lane.since is None:
        return ""
    return fmt_duration((now - parse_at(lane.since)).total_seconds())


def lanes_table(snap: RunSnapshot, now: datetime) -> Table:
    """One row per lane: actor on turn, elapsed, last report, turns, failures, state."""
    table = Table(expand=True, box=None, pad_edge=False, header_style="bold dim")
    table.add_column("lane", no_wrap=True)
    table.add_column("on turn", ratio=3, no_wrap=True, overflow="ellipsis")
    table.add_column("elapsed", justify="right", no_wrap=True)
    table.add_column("last report", ratio=2, no_wrap=True, overflow="ellipsis")
    table.add_column("turns", justify="right", no_wrap=True)
    table.add_column("fail", justify="right", no_wrap=True)
    table.add_column("state", ratio=2, no_wrap=True, overflow="ellipsis")
    for lane in snap.lanes:
        state = lane.state
        on_turn = ""
        if lane.actor:
            on_turn = f"{lane.actor} · turn {lane.turn}"
            if lane.attempt > 1:
                on_turn += f" (attempt {lane.attempt})"
        last = Text(lane.last_status or "—", style=_REPORT_STYLE.get(lane.last_status or "", ""))
        word = {"turn": "working", "held": "HELD", "paused": "paused",
                "idle": "idle"}[state]
        if state == "held" and lane.held_reason:
            word += f": {lane.held_reason}"
        elif state == "paused" and lane.paused_until:
            word += f" until {lane.paused_until[11:16]}Z"
        pending = len(snap.pending.get(lane.name, ()))
        if pending and state != "held":
            word += f" · {pending} in inbox"
        fails = Text(str(lane.failures), style="bold red" if lane.failures else "dim")
        table.add_row(lane.name, on_turn, _elapsed(lane, now), last,
                      f"{lane.turns}" + (f" ({lane.failed}✗)" if lane.failed else ""),
                      fails, Text(word, style=_STATE_STYLE[state]))
    if not snap.lanes:
        table.add_row("—", "no lanes yet", "", "", "", "", "")
    return table


def dashboard(snap: RunSnapshot, now: datetime, recent: Sequence[str] = (),
              *, workspace: str | None = None) -> RenderableType:
    """The whole live view: header, lanes, and the last few events."""
    parts: list[RenderableType] = [header(snap, workspace=workspace), Text(""),
                                   lanes_table(snap, now)]
    if recent:
        parts.append(Text(""))
        for line in recent:
            parts.append(Text(line, style="dim", no_wrap=True, overflow="ellipsis"))
    return Group(*parts)
