"""parallel_flame_chase leaderboard: with an evaluator the runtime measures every submission
itself and ranks only what it measured; without one, claims are ranked but marked unverified.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.flows.pfc import Team, db_rows, of_kind, run_dir
from tests.helpers import events, status

EVAL = """\
import pathlib, sys
p = pathlib.Path("score.txt")
if not p.exists():
    print("no score.txt here", file=sys.stderr)
    sys.exit(1)
print("building...")
print("SCORE:", p.read_text().strip())
"""


@pytest.fixture
def ws(source_tree: Path) -> Path:
    (source_tree / "eval.py").write_text(EVAL)
    return source_tree


def _sub(value: float, metric: str = "score", direction: str = "minimize") -> str:
    return (
        f'{{"title": "candidate", "metric": {metric!r}, "value": {value!r}, '
        f'"direction": {direction!r}, "evaluator": "python3 eval.py", '
        '"evidence": ["ran it"]}'
    )


def _board_in(prompt: str) -> dict[str, Any]:
    """The leaderboard JSON printed in a lane prompt."""
    text = prompt.split("Current leaderboard:\n", 1)[1]
    board: dict[str, Any] = json.JSONDecoder().raw_decode(text)[0]
    return board


def test_the_evaluator_measures_and_ranks_strictly_better(
    ws: Path, tmp_path: Path, state_home: Path
) -> None:
    # (score the workspace really has, value claimed, metric) per turn of the only lane.
    turns = [
        (5, 5, "score"),
        (9, 1, "score"),
        (3, 3, "score"),
        (3, 3, "score"),
        (4, 4, "score"),
        (2, 2, "latency"),
    ]
    team = Team(
        tmp_path / "team",
        f"""
        turns = {turns!r}
        c.save(f"prompt-{{c.turn}}.txt", c.prompt)
        if c.turn > len(turns):
            return c.ok("blocked", "stop here")
        real, claim, metric = turns[c.turn - 1]
        (c.ws / "score.txt").write_text(str(real))
        sub = {{"title": "candidate", "metric": metric, "value": claim,
               "direction": "minimize", "evaluator": "python3 eval.py", "evidence": []}}
        return c.deliver({{f"cand-{{c.turn}}.txt": str(real)}}, submission=sub)
    """,
    )
    proc = team.run(ws, "lanes=1", "evaluator=python3 eval.py")
    assert proc.returncode == 3, proc.stderr
    evs = events(ws)
    subs = of_kind(evs, "candidate_submitted")
    assert [s["payload"]["verified"] for s in subs] == [True, False, True, True, True, False]
    assert [s["payload"]["measured"] for s in subs] == [5.0, 9.0, 3.0, 3.0, 4.0, 2.0]
    assert "claimed 1 but the evaluator measured 9" in subs[1]["payload"]["unverified_reason"]
    assert "latency" in subs[5]["payload"]["unverified_reason"]
    best_updates = of_kind(evs, "candidate_best_updated")
    ids = [s["payload"]["report_id"] for s in subs]
    # First ranked, then strictly better; the tie (turn 4) and worse (turn 5) keep turn 3.
    assert [b["payload"]["report_id"] for b in best_updates] == [ids[0], ids[2]]
    board = status(ws)["leaderboard"]
    assert board["measured_by_runtime"] is True
    assert board["submission_count"] == 6
    assert board["primary"] == {"metric": "score", "direction": "minimize"}
    assert board["best"]["report_id"] == ids[2]
    assert board["best"]["value"] == 3.0 and board["best"]["verified"] is True
    assert [ld["report_id"] for ld in board["leaders"]] == [ids[2]]
    # Every later prompt shows the board of its time.
    root = run_dir(state_home, ws)
    assert _board_in((root / "lanes/lane-1/pfc/prompt-1.txt").read_text())["best"] is None
    assert _board_in((root / "lanes/lane-1/pfc/prompt-7.txt").read_text()) == board
    # The receipt of each measurement.
    rows = db_rows(state_home, ws, "SELECT key AS report_id, receipt FROM measurements")
    receipt = json.loads(next(r["receipt"] for r in rows if r["report_id"] == ids[1]))
    assert receipt["command"] == "python3 eval.py"
    assert receipt["exit_code"] == 0 and receipt["value"] == 9.0
    assert re.fullmatch(r"[0-9a-f]{64}", receipt["output_sha256"])
    assert receipt["duration"] >= 0


def test_the_evaluator_runs_in_the_submitting_lanes_workspace(
    ws: Path, tmp_path: Path, state_home: Path
) -> None:
    team = Team(
        tmp_path / "team",
        f"""
        if c.lane == "lane-1":
            if c.turn == 1:  # no score.txt in the source: the evaluator fails
                return c.deliver({{"x.txt": "x"}}, submission={_sub(1)})
            if c.turn == 2:
                c.wait(lambda _: c.started("lane-2", 2) and c.started("lane-3", 2))
                return None
            c.save("prompt.txt", c.prompt)
            return c.ok("blocked", "stop here")
        if c.turn == 1:
            real, claim = (7, 7) if c.lane == "lane-2" else (8, 2)
            (c.ws / "score.txt").write_text(str(real))
            return c.deliver({{"x.txt": str(real)}}, submission={{**{_sub(0)}, "value": claim}})
        return c.ok("blocked", "stop here")
    """,
    )
    assert team.run(ws, "evaluator=python3 eval.py").returncode == 3
    subs = {s["lane"]: s["payload"] for s in of_kind(events(ws), "candidate_submitted")}
    assert subs["lane-1"]["verified"] is False
    assert "exited with code 1" in subs["lane-1"]["unverified_reason"]
    assert subs["lane-2"]["verified"] is True and subs["lane-2"]["measured"] == 7.0
    assert subs["lane-3"]["verified"] is False and subs["lane-3"]["measured"] == 8.0
    board = status(ws)["leaderboard"]
    assert board["best"]["lane"] == "lane-2" and board["best"]["value"] == 7.0
    root = run_dir(state_home, ws)
    shown = _board_in((root / "lanes/lane-1/pfc/prompt.txt").read_text())
    assert shown["best"]["lane"] == "lane-2" and shown["best"]["value"] == 7.0
    # Each submission is measured in a fresh copy of the baseline with its lane's changes laid
    # over it (never in the lane's own tree): lane 2's and 3's score.txt came along.
    rows = db_rows(
        state_home, ws, "SELECT key, lane, receipt FROM measurements WHERE lane IS NOT NULL"
    )
    cwd = {r["lane"]: json.loads(r["receipt"])["cwd"] for r in rows}
    assert cwd == {r["lane"]: str(root / "measure" / r["key"] / "workspace") for r in rows}
    assert set(cwd) == {"lane-1", "lane-2", "lane-3"}
    assert not (ws / "score.txt").exists()


def test_without_an_evaluator_claims_are_ranked_but_unverified(ws: Path, tmp_path: Path) -> None:
    claims = [(10, "Score Value"), (12, "score  value"), (12, "SCORE VALUE"), (99, "speed")]
    team = Team(
        tmp_path / "team",
        f"""
        claims = {claims!r}
        if c.turn > len(claims):
            return c.ok("blocked", "stop here")
        value, metric = claims[c.turn - 1]
        sub = {{"title": "candidate", "metric": metric, "value": value,
               "direction": "maximize", "evaluator": "my own stopwatch", "evidence": []}}
        return c.deliver({{f"c{{c.turn}}.txt": "x"}}, submission=sub)
    """,
    )
    assert team.run(ws, "lanes=1").returncode == 3
    evs = events(ws)
    ids = [s["payload"]["report_id"] for s in of_kind(evs, "candidate_submitted")]
    assert all(s["payload"]["verified"] is False for s in of_kind(evs, "candidate_submitted"))
    board = status(ws)["leaderboard"]
    assert board["measured_by_runtime"] is False
    assert board["submission_count"] == 4
    # The first submission fixed the primary metric; case and spacing do not split it.
    assert board["primary"] == {"metric": "score value", "direction": "maximize"}
    assert board["best"]["report_id"] == ids[1]
    assert board["best"]["value"] == 12 and board["best"]["verified"] is False
    assert sorted(ld["report_id"] for ld in board["leaders"]) == sorted([ids[1], ids[3]])
    assert [b["payload"]["report_id"] for b in of_kind(evs, "candidate_best_updated")] == [
        ids[0],
        ids[1],
    ]


HOSTILE_EVAL = """\
import os, pathlib, sys
here = pathlib.Path(".")
pristine = (
    (here / "README.md").read_text() == "sample\\n"
    and (here / "pkg" / "mod.py").read_text() == "X = 1\\n"
    and (here / "TASK.md").stat().st_mode & 0o777 == 0o644
    and not (here / "planted.py").exists()
    and not (here / "pkg" / "planted").exists()
)
print("SCORE:", (here / "score.txt").read_text().strip() if pristine else 666)
# Then it vandalises its measurement place: in place, behind the mtime's back.
mod = here / "pkg" / "mod.py"
st = mod.stat()
with open(mod, "r+b") as f:
    f.write(b"X = 9\\n")
os.utime(mod, ns=(st.st_atime_ns, st.st_mtime_ns))
with open(here / "README.md", "r+b") as f:
    f.truncate(1)
(here / "TASK.md").chmod(0o777)
(here / "planted.py").write_text("planted\\n")
(here / "pkg" / "planted").mkdir()
(here / "pkg" / "planted" / "x").write_text("x\\n")
"""


def test_a_measurement_place_vandalised_by_its_evaluator_is_reset_for_the_next(
    ws: Path, tmp_path: Path, state_home: Path
) -> None:
    (ws / "eval.py").write_text(HOSTILE_EVAL)
    (ws / "TASK.md").chmod(0o644)
    team = Team(
        tmp_path / "team",
        """
        if c.turn > 3:
            return c.ok("blocked", "stop here")
        (c.ws / "score.txt").write_text(str(c.turn))
        sub = {"title": "candidate", "metric": "score", "value": c.turn,
               "direction": "minimize", "evaluator": "python3 eval.py", "evidence": []}
        return c.deliver({f"cand-{c.turn}.txt": str(c.turn)}, submission=sub)
    """,
    )
    proc = team.run(ws, "lanes=1", "evaluator=python3 eval.py")
    assert proc.returncode == 3, proc.stderr
    subs = of_kind(events(ws), "candidate_submitted")
    # Every measurement saw the baseline with only its lane's changes: not the last one's mess.
    assert [s["payload"]["measured"] for s in subs] == [1.0, 2.0, 3.0]
    assert all(s["payload"]["verified"] for s in subs)
    root = run_dir(state_home, ws)
    baseline = root / "baseline" / "workspace"
    assert (baseline / "pkg" / "mod.py").read_text() == "X = 1\n"
    assert (baseline / "README.md").read_text() == "sample\n"
    assert (baseline / "TASK.md").stat().st_mode & 0o777 == 0o644
    assert not (baseline / "planted.py").exists()
    # The kept copy went with the engine: nothing of it is left on disk.
    assert not (root / "pool").exists()
