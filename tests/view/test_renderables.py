"""The terminal renderables and the live observer, rendered into a string console."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import time
from datetime import timedelta
from io import StringIO
from pathlib import Path

from rich.console import Console

from flamechase.agents.spec import split_agent_args
from flamechase.cli.simulating import copy_sample, sim_settings
from flamechase.engine.prepare import RunRequest, prepare
from flamechase.loader import load_flow
from flamechase.view.live import LiveObserver
from flamechase.view.renderables import dashboard, fmt_duration, lanes_table, short_actor
from flamechase.view.state import RunFold, parse_at
from tests.helpers import FLAMECHASE
from tests.view.conftest import Run


def _render(renderable: object, width: int = 100) -> str:
    console = Console(file=StringIO(), width=width, color_system=None)
    console.print(renderable)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(out, str)
    return out


def _fold_until(run: Run, stop: int) -> RunFold:
    fold = RunFold.from_run(run.run, run.lanes)
    for ev in run.events[:stop]:
        fold.apply(ev)
    return fold


def test_fmt_duration() -> None:
    assert [fmt_duration(s) for s in (0, 4.25, 42.9, 65, 3600 + 7 * 60 + 5, -3)] == [
        "0.0s",
        "4.2s",
        "42s",
        "1m05s",
        "1h07m",
        "0.0s",
    ]


def test_dashboard_at_the_end_of_a_run(sim_run: Run) -> None:
    fold = _fold_until(sim_run, len(sim_run.events))
    now = parse_at(fold.at or "")
    text = _render(dashboard(fold.snapshot(now), now, ["last event line"]))
    assert "parallel_flame_chase" in text and "finished" in text
    assert "turns 12/12 (0 left)" in text
    assert "cost $" in text and "/∞" in text  # an unbounded key shows what it used
    best = fold.best
    assert best is not None
    assert f"best steps = {best.value:g} (minimize) from {best.lane}" in text
    for name in ("lane-1", "lane-2", "lane-3"):
        row = next(line for line in text.splitlines() if line.startswith(name))
        assert "idle" in row or "HELD" in row
        assert str(fold.lanes[name].turns) in row
    assert "last event line" in text
    assert max(len(line) for line in text.splitlines()) <= 100


def test_dashboard_mid_turn_shows_actor_and_elapsed(sim_run: Run) -> None:
    start = next(
        i for i, e in enumerate(sim_run.events) if e["kind"] == "turn_started" and e["lane"]
    )
    fold = _fold_until(sim_run, start + 1)
    ev = sim_run.events[start]
    now = parse_at(ev["at"]) + timedelta(seconds=75)
    text = _render(lanes_table(fold.snapshot(now), now))
    row = next(line for line in text.splitlines() if line.startswith(ev["lane"]))
    roles = fold.lanes[ev["lane"]].roles
    assert f"{short_actor(ev['actor'], roles)} · turn 1" in row
    assert "1m15s" in row
    assert "working" in row


def test_held_lane_and_failures_show(rough_run: Run) -> None:
    fold = _fold_until(rough_run, len(rough_run.events))
    now = parse_at(fold.at or "")
    text = _render(lanes_table(fold.snapshot(now), now), width=140)
    row = next(line for line in text.splitlines() if line.startswith("lane-3"))
    assert "HELD" in row
    # One held lane says its way out in the live view, even at 80 columns.
    bare = "".join(_render(dashboard(fold.snapshot(now), now), width=80).split())
    way_out = (
        "lane-3 HELD: reported blocked:",
        "; to release it: the other lanes go on; the",
        "change TASK.md and run the same command with the task",
    )
    assert all("".join(x.split()) in bare for x in way_out), bare


def _flat(text: str) -> str:
    return " ".join(text.split())


def _rows(text: str, names: tuple[str, ...] = ("lane-",)) -> dict[str, str]:
    """Each track's row of the table (lanes, and roles' turns outside lanes), with its wrapped
    continuation lines joined on."""
    rows: dict[str, str] = {}
    name = ""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("lane "))
    for line in lines[start + 1 :]:
        if not line.strip() or (not line.startswith(" ") and not line.startswith(names)):
            break
        if line.startswith(names) and " HELD: " not in line and " failed: " not in line:
            name = line.split()[0]
            rows[name] = line
        elif line.startswith(" ") and name:
            rows[name] += "\n" + line
        else:
            break
    return rows


def test_at_80_columns_each_lane_says_its_state_and_why(rough_run: Run) -> None:
    """Every moment of a run with failures and a hold, drawn 80 columns wide."""
    fold = RunFold.from_run(rough_run.run, rough_run.lanes)
    held_seen = failed_seen = 0
    for ev in rough_run.events:
        fold.apply(ev)
        now = parse_at(ev["at"])
        snap = fold.snapshot(now)
        text = _render(
            dashboard(snap, now, ["x" * 200], workspace=str(rough_run.run["workspace"])), width=80
        )
        assert max(len(line) for line in text.splitlines()) <= 80
        # Status and active time come first, whole.
        assert text.splitlines()[0].endswith(
            f" · {snap.status} · {fmt_duration(snap.active_seconds)} active"
        )
        # A budget item is never split from its figure.
        assert not any(
            line.rstrip().endswith(("output tokens", "duration", "cost", "turns"))
            for line in text.splitlines()
        )
        rows = _rows(text, tuple(fold.order))
        assert set(rows) == set(fold.order)
        # Long words (paths) fold across lines: compare without any whitespace.
        bare = "".join(text.split())
        for lane in snap.lanes:
            word = {"turn": "working", "held": "HELD", "paused": "paused", "idle": "idle"}
            assert word[lane.state] in rows[lane.name]  # the state word, not cut
            if lane.held:
                held_seen += 1
                assert "".join(f"{lane.name} HELD: {lane.held_reason}".split()) in bare
            elif lane.failures:
                failed_seen += 1
                assert "".join(f"{lane.name} last turn failed: {lane.last_error}".split()) in bare
            assert "…" not in rows[lane.name]
    assert held_seen and failed_seen


def test_a_long_reason_is_clipped_not_lost(rough_run: Run) -> None:
    fold = _fold_until(rough_run, len(rough_run.events))
    fold.lanes["lane-3"].held_reason = "why " * 500
    now = parse_at(fold.at or "")
    text = _render(dashboard(fold.snapshot(now), now), width=80)
    note = _flat(text[text.index("lane-3 HELD: ") :])
    assert note.startswith("lane-3 HELD: why why")
    assert "why …" in note or "w…" in note or "…" in note
    assert max(len(line) for line in text.splitlines()) <= 80


def test_narrow_terminal_still_renders(sim_run: Run) -> None:
    fold = _fold_until(sim_run, len(sim_run.events) // 2)
    now = parse_at(fold.at or "")
    text = _render(dashboard(fold.snapshot(now), now, ["x" * 300]), width=50)
    assert max(len(line) for line in text.splitlines()) <= 50
    assert "lane-1" in text


def _prepared(ws: Path) -> object:
    flow = load_flow("parallel_flame_chase")
    settings = sim_settings(flow, {}, sample=True)
    agents = split_agent_args([f"{r}=sim/steady" for r in dict.fromkeys(flow.roles(flow.Params()))])
    return prepare(
        RunRequest(
            flow=flow, agents=agents, settings=settings, task="continue", workspace=copy_sample(ws)
        )
    )


def test_live_observer_folds_events_and_redraws(sim_run: Run, tmp_path: Path) -> None:
    prepared = _prepared(tmp_path / "ws")
    out = StringIO()
    console = Console(file=out, width=100, force_terminal=True, color_system=None)
    observer = LiveObserver(prepared, console=console, refresh_per_second=50)
    for ev in sim_run.events:
        observer.event(ev)
    time.sleep(0.05)
    observer.close()
    text = out.getvalue()
    # Redrawn in place: the cursor goes back up over the previous frame.
    assert "\x1b[" in text and re.search(r"\x1b\[\d*A", text)
    final = observer.renderable(parse_at(sim_run.events[-1]["at"]))
    shown = _render(final)
    assert "finished" in shown and "turns 12/12 (0 left)" in shown
    # Events already folded (a resume's history) are not counted twice.
    before = observer.fold.events
    observer.event(sim_run.events[-1])
    assert observer.fold.events == before


def test_live_observer_on_resume_starts_from_the_runs_history(sim_run: Run, tmp_path: Path) -> None:
    import dataclasses

    prepared = dataclasses.replace(
        _prepared(tmp_path / "ws"),  # type: ignore[type-var]
        resume_from=sim_run.run_dir,
    )
    observer = LiveObserver(prepared, console=Console(file=StringIO()), start=False)
    assert observer.fold.run_id == sim_run.run["id"]
    assert observer.fold.turns == 12
    assert observer.fold.events == len(sim_run.events)


def test_exec_on_a_terminal_shows_the_live_view(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    flow = load_flow("parallel_flame_chase")
    args = [*FLAMECHASE, "exec", "-f", "parallel_flame_chase"]
    for role in dict.fromkeys(flow.roles(flow.Params(lanes=2))):  # type: ignore[call-arg]
        args += ["-a", f"{role}=sim/steady"]
    args += ["-p", "lanes=2,budget.turns=4,rest_seconds=0.05", "continue"]
    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS="100", LINES="40", TERM="xterm-256color")
    proc = subprocess.Popen(
        args, cwd=ws, stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE, env=env
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    proc.wait(timeout=30)
    os.close(master)
    text = b"".join(chunks).decode("utf-8", "replace")
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    assert "on turn" in plain and "last report" in plain  # the table's header
    assert "lane-1" in plain and "lane-2" in plain
    assert "turns 4/4 (0 left)" in plain
    assert re.search(r"\x1b\[\d*A", text)  # drawn in place, not scrolled


def test_names_and_reasons_show_as_text_never_as_markup_or_controls() -> None:
    # Lane and role names come from a flow, errors and summaries from agents.
    hostile = (
        "\x1b]8;;https://evil.example/\x1b\\x\x1b]8;;\x1b\\ [link=https://evil.example/]y[/link]"
        " [/] \x1b]52;c;ZQ==\x07\x9b2J\x1bP+q\x1b\\ \x1b[6n"
    )
    lane, actor = "[bold]lane[/]", "[link=https://evil.example/]a[/link]"
    budget = {"duration": None, "cost": None, "turns": 5, "output_tokens": None, "graceful": True}
    fold = RunFold(flow="f[/]" + hostile, lanes=[(lane, (actor, "b"))], budget=budget, run_id="r")
    at = "2026-01-01T00:00:00.000Z"
    for kind, payload in (
        ("run_running", {}),
        ("turn_started", {"turn": 1, "attempt": 1}),
        ("turn_failed", {"turn": 1, "attempt": 1, "error": hostile, "duration": 1.0}),
        ("turn_started", {"turn": 2, "attempt": 1}),
    ):
        ev = {"kind": kind, "lane": lane, "actor": actor, "at": at, "payload": payload}
        fold.apply(ev)
    now = parse_at(at)
    console = Console(file=StringIO(), width=160, force_terminal=True, color_system="truecolor")
    console.print(dashboard(fold.snapshot(now), now, [f"00:00:00 {hostile}"]))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    own = re.sub(r"\x1b\[[0-9;]*m", "", out)  # rich's colours are the only sequences
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f]", own), repr(own)
    assert "[bold]lane[/]" in own and "[link=https://evil.example/]a[/link]" in own
    assert "[link=https://evil.example/]y[/link] [/]" in own


def test_the_dashboard_draws_the_flows_panels_and_alerts() -> None:
    import flamechase.flows.git_pr.events
    import flamechase.flows.parrallello.events  # noqa: F401  (their kinds register)

    fold = RunFold(lanes=[("lane-1", ("a", "b"))])
    base = {"at": "2026-01-01T00:00:00Z", "lane": "lane-1", "actor": None}
    rows = [
        {"kind": "pr_opened", "payload": {"pr": f"PR{i:02d}", "branch": f"b{i}", "title": "t"}}
        for i in range(12)  # more rows than the dashboard shows: those that changed last
    ]
    rows.append({"kind": "pr_merged", "payload": {"pr": "PR03", "merge": "abc", "value": 801}})
    rows.append({"kind": "anomaly", "payload": {"what": "gate_vacuous", "detail": "no test ran"}})
    for seq, row in enumerate(rows, 1):
        fold.apply({**base, "seq": seq, **row})
    text = _render(dashboard(fold.snapshot(), parse_at("2026-01-01T00:00:00Z")), width=80)
    assert "pull requests · the 8 of 12 that changed last" in text
    assert re.search(r"PR03 +lane-1 +b3 +merged +801", text) and "PR04" not in text
    assert "PR11" in text and "alert: Anomaly in the run: gate_vacuous — no test ran." in text


def test_a_track_outside_lanes_has_no_inbox_and_is_never_held() -> None:
    fold = RunFold(lanes=[("lane-1", ("a", "b"))])
    ev = {"at": "2026-01-01T00:00:00Z", "lane": None, "actor": "judge"}
    fold.apply({**ev, "seq": 1, "kind": "report_published", "lane": "lane-1",
                "payload": {"report_id": "lane-1.0001"}})  # fmt: skip
    fold.apply({**ev, "seq": 2, "kind": "turn_started", "payload": {"turn": 1}})
    now = parse_at("2026-01-01T00:00:05Z")
    (row,) = [
        ln for ln in _render(lanes_table(fold.snapshot(now), now)).splitlines() if "judge" in ln
    ]
    assert "turn 1" in row and "working" in row and "5.0s" in row
    assert "judge ·" not in row and "inbox" not in row


def test_a_panel_shows_what_flows_and_agents_wrote_as_text_only() -> None:
    from flamechase.events.present import Row
    from flamechase.view.board import Panels
    from flamechase.view.renderables import panel_table

    panels = Panels()
    panels.put(Row("[bold]p[/]", "[link=https://evil.example/]k[/link]", {"[red]c[/]": "[/] v"}))
    (panel,) = panels.freeze()
    out = _render(panel_table(panel), width=120)
    assert "[link=https://evil.example/]k[/link]" in out
    assert "[red]c[/]" in out and "[/] v" in out


def test_the_lanes_table_says_when_a_turn_runs_on_a_failover_agent() -> None:
    from flamechase import events as ev

    fold = RunFold(lanes=[("lane-1", ("first_chaser", "second_chaser"))])
    at = "2027-01-15T08:00:00.000Z"
    moved = ev.AgentSwitched(
        lane="lane-1", actor="first_chaser", turn=1, previous="claude@work/opus",
        to="claude@home/opus", index=1, alternatives=["claude@work/opus", "claude@home/opus"],
        reason="claude@work/opus: usage window", at=at,
    )  # fmt: skip
    fold.apply(moved)
    fold.apply(
        ev.TurnStarted(
            lane="lane-1", actor="first_chaser", turn=1, attempt=2, backend="claude@home/opus",
            at=at,
        )
    )  # fmt: skip
    now = parse_at(at)
    text = " ".join(_render(lanes_table(fold.snapshot(now), now), width=140).split())
    # The cell wraps in its column: its words, in order.
    assert "turn 1 (attempt 2) on" in text and text.endswith("working claude@home/opus")
    assert "moves to claude@home/opus (alternative 2 of 2)" in moved.show(fold).text
