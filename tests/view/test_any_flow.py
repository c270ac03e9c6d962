"""Every view speaks any flow: two flows written against the public API only (tests/view/flows:
a relay of an author and a reviewer, a tournament of solvers with a judge), run through
`exec` with scripted actors, are told by the plain log, `status`, the live view, the replay and
`trace` in their own words, with their own panels, marks and alerts, and never in another
flow's. A replay of a run whose flow code is gone still renders, its kinds shown plainly.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from flamechase.view.renderables import dashboard
from flamechase.view.replay import build_document, load_run
from flamechase.view.replay_pack import read_document
from flamechase.view.state import RunFold
from flamechase.view.trace import build_trace
from tests.helpers import actor, cli
from tests.view.test_replay_browser import _open

FLOWS = Path(__file__).resolve().parent / "flows"

# Words only one flow says: a view of one flow's run must say none of another's.
OWN = {
    "relay": ("baton", "relay leg", "the relay"),
    "tournament": ("tournament", "bracket", "judge", "workbench"),
    # The built-in flows' words: fronts, gates, pull requests, missions, planning.
    "builtin": (
        "front ",
        "gate",
        "pull request",
        "PR0",
        "mission",
        "planning",
        "coordinator",
        "candidate",
        "lane_1_actor",
        "central repository",
    ),
}

SOLVER = """
    n=$(echo "$FLAMECHASE_LANE" | tr -dc 0-9)
    s=$(( (n * 7) % 10 ))
    echo "$s" > entry.txt
    echo "{\\"claim\\": $((s + 1))}" > "$FLAMECHASE_REPORT"
"""
# Picks solver-2 (scored 4) over solver-1 (scored 7): the runtime's scores decide.
JUDGE = """echo '{"winner": "solver-2", "why": "the neatest"}' > "$FLAMECHASE_REPORT"\n"""
AUTHOR = """
    echo "leg $FLAMECHASE_TURN" >> RELAY.md
    echo "{\\"baton\\": \\"draft $FLAMECHASE_TURN\\"}" > "$FLAMECHASE_REPORT"
"""
# Drops the baton on its first leg (turn 2), carries it after.
REVIEWER = """
    if [ "$FLAMECHASE_TURN" = 2 ]; then
      echo '{"baton": "none", "verdict": "drop"}' > "$FLAMECHASE_REPORT"
    else
      echo "{\\"baton\\": \\"notes $FLAMECHASE_TURN\\"}" > "$FLAMECHASE_REPORT"
    fi
"""


def _exec(tmp: Path, flow: Path, agents: dict[str, str], *params: str) -> tuple[Path, str]:
    ws = tmp / "ws"
    ws.mkdir()
    (ws / "TASK.md").write_text("do well\n")
    (ws / "score.py").write_text('print("SCORE: " + open("entry.txt").read().strip())\n')
    args = ["exec", "-f", str(flow)]
    for role, body in agents.items():
        args += ["-a", f"{role}=exec:{actor(tmp, role + '.sh', body)}"]
    args += ["-p", ",".join(["budget.turns=20", "rest_seconds=0.05", *params]), "do well"]
    proc = cli(*args, cwd=ws, timeout=90)
    assert proc.returncode == 0, proc.stderr
    return ws, proc.stdout


@pytest.fixture
def tournament(tmp_path: Path) -> tuple[Path, str]:
    roles = {f"solver_{i}": SOLVER for i in (1, 2, 3)} | {"judge": JUDGE}
    return _exec(tmp_path, FLOWS / "tournament.py", roles)


@pytest.fixture
def relay(tmp_path: Path) -> tuple[Path, str]:
    flow = tmp_path / "relay_flow.py"  # a copy of its own: a test removes it afterwards
    shutil.copy(FLOWS / "relay.py", flow)
    ws, log = _exec(tmp_path, flow, {"author": AUTHOR, "reviewer": REVIEWER}, "legs=3")
    return ws, log


def _views(ws: Path) -> dict[str, str]:
    """Every view of the run `last` as text: the plain log, `status` (both forms), the live
    view's dashboard at 80 columns, the replay's document and `trace`."""
    st = cli("status", "last", cwd=ws, check=True).stdout
    st_json = cli("status", "last", "--json", cwd=ws, check=True).stdout
    log = cli("events", "last", cwd=ws, check=True).stdout
    run, lanes, events = load_run(_run_dir())
    fold = RunFold.from_run(run, lanes)
    recent = [fold.apply(e).shown.text for e in events][-6:]
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=False)
    console.print(dashboard(fold.snapshot(), datetime.now(UTC), recent))
    doc = build_document(run, lanes, events)
    trace = build_trace(run, lanes, events)
    return {
        "log": log,
        "status": st,
        "status --json": st_json,
        "live": out.getvalue(),
        "replay": json.dumps(doc, ensure_ascii=False),
        "trace": json.dumps(trace, ensure_ascii=False),
    }


def _run_dir() -> Path:
    (run_dir,) = list((Path(os.environ["FLAMECHASE_HOME"]) / "runs").iterdir())
    return run_dir


def _speaks_only(views: dict[str, str], own: str) -> None:
    for name, text in views.items():
        low = text.lower()
        for flow, words in OWN.items():
            if flow == own:
                continue
            said = [w for w in words if re.search(rf"\b{re.escape(w.lower())}", low)]
            assert not said, f"the {name} of a {own} run says {flow}'s {said}"


def test_a_tournament_is_told_in_its_own_words_by_every_view(
    tournament: tuple[Path, str],
) -> None:
    ws, _ = tournament
    views = _views(ws)
    _speaks_only(views, "tournament")
    decided = "The judge picked solver-2, but solver-1 scored higher (7)"
    for name in ("log", "replay", "trace"):
        assert "The tournament bracket opens with 3 entrants." in views[name], name
        assert "Tournament entry of solver-1 scored by the runtime: 7" in views[name], name
        assert decided in views[name], name
    for name in ("log", "replay"):  # every event is a sentence there
        assert "the judge's bench, a copy of your tree" in views[name], name
    # The judge's turn is outside lanes: a track of its own, not a lane.
    assert "judge's turn 1 (outside lanes) starts" in views["log"]
    st = json.loads(views["status --json"])
    (bracket,) = st["panels"]
    assert bracket["name"] == "bracket"
    rows = {r["key"]: r["cells"] for r in bracket["rows"]}
    assert rows["solver-1"] == {"standing": "winner", "claim": 8, "score": 7}
    assert rows["solver-2"]["standing"] == "out"
    assert st["alerts"] == [decided + ": the tournament goes to solver-1."]
    assert [(s["role"], s["turns"]) for s in st["outside_lanes"]] == [("judge", 1)]
    assert "bracket:" in views["status"] and f"alert: {decided}" in views["status"]
    assert "  solver-1: standing winner · claim 8 · score 7" in views["status"]
    assert "judge (outside lanes): 1 turn (1 valid)" in views["status"]
    live = views["live"]
    assert "bracket" in live and "alert: The judge picked solver-2" in live
    assert "best score = 7 (maximize) from solver-1" in live  # measured, on the leaderboard
    judge_row = next(line for line in live.splitlines() if line.startswith("judge "))
    assert "inbox" not in judge_row and "HELD" not in judge_row
    doc = json.loads(views["replay"])
    tracks = [n for p in doc["points"] if (n := p["d"].get("N"))] + [
        [ln["name"], ln["roles"], int(ln["solo"])] for ln in doc["lanes"]
    ]
    assert ["judge", ["judge"], 1] in tracks
    panels = [row for p in doc["points"] for row in p["d"].get("F", ())]
    assert ["bracket", "solver-1", {"standing": "winner"}] in panels
    assert [p["d"]["X"] for p in doc["points"] if "X" in p["d"]] == st["alerts"]
    marks = [p["d"]["m"][0] for p in doc["points"] if "m" in p["d"]]
    assert "entry scored 7" in marks
    trace = json.loads(views["trace"])["traceEvents"]
    threads = {e["args"]["name"] for e in trace if e["name"] == "thread_name"}
    assert {"solver-1", "solver-2", "solver-3", "judge"} <= threads
    assert any(e["name"] == "judge turn 1" for e in trace)


def test_a_relay_is_told_in_its_own_words_by_every_view(relay: tuple[Path, str]) -> None:
    ws, _ = relay
    views = _views(ws)
    _speaks_only(views, "relay")
    dropped = "The baton falls on relay leg 2 (reviewer): the leg is run again."
    for name in ("log", "replay", "trace"):
        assert "Relay leg 1 is run: author passes the baton “draft 1” to reviewer." in views[name]
        assert dropped in views[name], name
        assert "The relay is over: 3 legs carried" in views[name], name
    for name in ("log", "replay"):
        # The two roles hand each other the relay's copy; the place is named as the flow
        # named it, never by its internal name.
        assert "author hands reviewer the copy" in views[name], name
        assert "the relay's track, a copy of your tree" in views[name], name
        assert "track)" not in views[name], name
    st = json.loads(views["status --json"])
    (legs,) = st["panels"]
    assert legs["name"] == "legs" and legs["columns"] == ["runner", "baton"]
    assert [r["key"] for r in legs["rows"]] == ["leg 1", "leg 2", "leg 3"]
    assert legs["rows"][1]["cells"] == {"runner": "author", "baton": "draft 3"}
    assert st["alerts"] == [dropped] and st["outside_lanes"] == []
    assert "legs:" in views["status"] and f"alert: {dropped}" in views["status"]
    assert "alert: The baton falls" in views["live"] and "leg 3" in views["live"]
    doc = json.loads(views["replay"])
    marks = [p["d"]["m"] for p in doc["points"] if "m" in p["d"]]
    assert ["baton dropped", "bad"] in marks and ["baton to reviewer", "good"] in marks


def test_a_replay_of_a_run_whose_flow_is_gone_shows_its_kinds_plainly(
    relay: tuple[Path, str], tmp_path: Path
) -> None:
    ws, _ = relay
    (tmp_path / "relay_flow.py").unlink()
    out = tmp_path / "replay.html"
    shown = cli("show", "last", "--html", str(out), cwd=ws, check=True)
    assert "wrote the replay" in shown.stdout
    page = json.dumps(read_document(out.read_text()), ensure_ascii=False)
    # What is known without the flow: the kind in words and its payload's first fields.
    assert "relay author: baton passed (baton=draft 1, leg=1, to=reviewer)." in page
    assert "relay reviewer: baton dropped (leg=2)." in page
    # The engine's own kinds still speak: the place's label was journaled with it.
    assert "The runtime makes the relay's track, a copy of your tree." in page
    log = cli("events", "last", cwd=ws, check=True).stdout
    assert "relay author: baton passed (baton=draft 1, leg=1" in log


def test_the_replay_page_draws_a_flows_panel_and_alerts_at_each_point(
    relay: tuple[Path, str], tmp_path: Path, page: Any
) -> None:
    ws, _ = relay
    out = tmp_path / "relay.html"
    cli("show", "last", "--html", str(out), cwd=ws, check=True)
    _open(page, out)
    doc = read_document(out.read_text())
    points = doc["points"]
    drop = next(i for i, p in enumerate(points) if p["k"] == "baton_dropped")
    legs = """() => [...document.querySelectorAll('#panels section[data-panel="legs"] tr')]
        .slice(1).map((tr) => [...tr.children].map((c) => c.textContent))"""
    page.evaluate(f"window.fcReplay.go({drop - 1})")
    page.wait_for_function("() => !document.getElementById('alerts').hidden")
    assert page.inner_text("#alerts-in") == "No alerts yet."
    assert page.evaluate(legs) == [["leg 1", "author", "draft 1"]]
    page.evaluate(f"window.fcReplay.go({drop})")
    page.wait_for_function("() => document.querySelectorAll('#alerts-in .alert').length === 1")
    assert page.evaluate(legs)[1] == ["leg 2", "reviewer", "dropped"]
    page.evaluate(f"window.fcReplay.go({len(points) - 1})")
    page.wait_for_function(
        """() => document.querySelectorAll('#panels section[data-panel="legs"] tr').length === 4"""
    )
    assert page.evaluate(legs)[1] == ["leg 2", "author", "draft 3"]
    # An alert leads to its point.
    page.click("#alerts-in .alert")
    # The page moves to the point on its next frame: wait for it rather than read at once.
    page.wait_for_function(
        "() => document.getElementById('now-x').innerText.includes('The baton falls')"
    )
    assert "The baton falls" in page.inner_text("#now-x")


def test_serve_streams_a_flows_panel_rows_and_alerts(
    tournament: tuple[Path, str], state_home: Path
) -> None:
    from tests.view.test_serve import Server, _read_sse

    server = Server(state_home)
    try:
        rid = _run_dir().name
        _, points = _read_sse(server, f"/run/{rid}/events?after=0")
    finally:
        server.close()
    rows = [row for p in points for row in p["d"].get("F", ())]
    assert ["bracket", "solver-1", {"standing": "winner"}] in rows
    assert [p["d"]["X"] for p in points if "X" in p["d"]] == [
        "The judge picked solver-2, but solver-1 scored higher (7): the tournament goes to "
        "solver-1."
    ]
    assert any(p["d"].get("N", [None])[0] == "judge" for p in points)


def test_a_panel_cell_of_any_name_is_drawn_as_text(tmp_path: Path, page: Any) -> None:
    from flamechase.view.replay import render_html

    row = ["odd", "<b>k</b>", {"__proto__": "<i>x</i>", "constructor": 1}]
    point = {"q": 1, "t": 0, "k": "x", "l": -1, "a": None, "x": "x", "g": "info", "d": {"F": [row]}}
    doc = {"v": 1, "run": {"flow": "f"}, "lanes": [], "t0": None, "points": [point]}
    out = tmp_path / "odd.html"
    out.write_text(render_html(doc))
    _open(page, out)
    cells = page.evaluate(
        """() => [...document.querySelectorAll('#panels section[data-panel="odd"] tr')]
        .map((tr) => [...tr.children].map((c) => c.textContent))"""
    )
    assert cells == [["", "__proto__", "constructor"], ["<b>k</b>", "<i>x</i>", "1"]]
