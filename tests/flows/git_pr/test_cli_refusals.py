"""What lanes may not do, through the real CLI with jailed scripted lanes: push main, push
another lane's branch, move a ready PR's frozen head, write the run store, the receipts or the
central repository. Each is refused, and the refusals reach the lane as system reports."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from flamechase.jail import probe
from tests.flows.git_pr.team import Team

JAIL = probe()
pytestmark = pytest.mark.skipif(
    not (JAIL.bwrap_ok or JAIL.landlock_ok), reason="no jail can run here (bubblewrap or Landlock)"
)

HOSTILE = """
central = Path(c.git("config", "--get", "remote.origin.url").stdout.strip())
if c.lane == "lane-1" and c.turn == 1:
    c.change("main", {"a.txt": "1\\n"}, message="straight to main")
    c.git("push", "-q", "origin", "main")
    c.git("push", "-q", "origin", "main:refs/heads/lane-2/steal")
    tries = {}
    for name, path in (("run store", c.run / "run.db"), ("main ref", central / "refs/heads/main"),
                       ("hook", central / "hooks/pre-receive"),
                       ("checkout", c.run / "checkouts/lane-2/workspace/a.txt")):
        try:
            with open(path, "a") as f:
                f.write("forged\\n")
            tries[name] = "written"
        except OSError as exc:
            tries[name] = type(exc).__name__
    try:
        db = sqlite3.connect(f"file:{c.run / 'run.db'}?mode=rw", uri=True, timeout=1)
        db.execute("INSERT INTO measurements VALUES ('forged', 'lane-1', 'now', 'p', '{}')")
        db.commit()
        tries["receipts"] = "written"
    except sqlite3.Error as exc:
        tries["receipts"] = type(exc).__name__
    c.log(tries=tries)
    return "tried main, another lane's branch and the stores"
if c.lane == "lane-2" and c.turn == 1:
    c.propose("lane-2/slow", {"slow": "kept under evaluation\\n"})
    return "a PR kept under evaluation until turn 3"
if c.lane == "lane-2" and c.turn == 2:
    c.git("checkout", "-q", "lane-2/slow")
    (c.ws / "a.txt").write_text("1\\n")
    c.git("commit", "-qam", "move the frozen head")
    c.git("push", "-q", "origin", "lane-2/slow")
    return "pushed onto the ready PR's branch"
if c.lane == "lane-2" and c.turn == 3:
    (c.run / "lanes" / "lane-2" / "gate").write_text("go\\n")
    return "let the evaluation finish"
c.wait("lane-2's third turn", lambda: c.done("lane-2", 3))
"""


def test_a_lane_cannot_push_main_another_lanes_branch_a_frozen_head_or_write_the_stores(
    tmp_path: Path,
) -> None:
    team = Team(tmp_path, "import sqlite3\nfrom pathlib import Path\n" + HOSTILE)
    proc = team.run(turns=5)
    assert proc.returncode == 0, proc.stderr
    st = team.status()
    # Nothing a lane did moved main.
    assert st["main"]["commit"] == st["main"]["baseline"] and st["ledger"] == []
    refused = {
        (e["lane"], e["payload"]["ref"]): e["payload"]["reason"]
        for e in team.events()
        if e["kind"] == "push_refused"
    }
    assert refused[("lane-1", "refs/heads/main")] == (
        "main accepts only the runtime's merges; push your branch and open a PR"
    )
    assert refused[("lane-1", "refs/heads/lane-2/steal")] == (
        "lane-1 may push only its own branches (refs/heads/lane-1/...), not refs/heads/lane-2/steal"
    )
    frozen = refused[("lane-2", "refs/heads/lane-2/slow")]
    assert "lane-2/slow is frozen at" in frozen and "cannot be moved" in frozen
    # The jail refused every write to the stores.
    tries = next(e["tries"] for e in team.log("lane-1") if "tries" in e)
    assert set(tries) == {"run store", "main ref", "hook", "checkout", "receipts"}
    assert "written" not in tries.values(), tries
    run_dir = Path(st["lanes"][0]["workspace"]).parents[2]
    with sqlite3.connect(f"file:{run_dir / 'run.db'}?mode=ro", uri=True) as db:
        assert not db.execute("SELECT 1 FROM measurements WHERE key = 'forged'").fetchall()
    # The refusals reached the lanes as system reports in their next turns.
    inbox = {
        (e["lane"], e["turn"]): " ".join(x or "" for x in e["inbox"])
        for e in team.log("lane-1") + team.log("lane-2")
        if e.get("done")
    }
    assert "The central repository refused your push: " in inbox[("lane-1", 2)]
    assert "main: main accepts only the runtime's merges" in inbox[("lane-1", 2)]
    assert "lane-2/slow: lane-2/slow is frozen at" in inbox[("lane-2", 3)]
    # The PR was judged on exactly the head it was made ready with.
    (pr,) = st["pull_requests"]
    assert pr["receipt"]["commit"] == pr["head"]
    assert pr["status"] == "rejected"
    assert pr["reason"] == "score 60 does not beat main's 60 (minimize)"
