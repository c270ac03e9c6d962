"""The frozen evaluator through the real CLI, with jailed scripted lanes: a PR that rewrites
the evaluator to print a fake score is tampered (never measured, never merged, its lane told
why in its next turn, the views say so; its branch cannot be deleted), and main keeps the
real score of the honest PR."""

from __future__ import annotations

from pathlib import Path

import pytest

from flamechase.jail import probe
from tests.flows.git_pr.team import SCORE, Team
from tests.helpers import cli

JAIL = probe()
pytestmark = pytest.mark.skipif(
    not (JAIL.bwrap_ok or JAIL.landlock_ok), reason="no jail can run here (bubblewrap or Landlock)"
)

CHEATER = """
def mine(status, lane=None):
    prs = json.loads(c.pr("list", "--json").stdout)["pull_requests"]
    return [p for p in prs if p["lane"] == (lane or c.lane) and p["status"] == status]
if c.lane == "lane-1" and c.turn == 1:
    c.propose("lane-1/fast", {"score.py": "print('SCORE: 1')\\n"})
    return "made the evaluator print 1"
if c.lane == "lane-1" and c.turn == 2:
    c.wait("the verdict on my PR", lambda: mine("tampered"))
    c.git("push", "-q", "origin", "--delete", "lane-1/fast")  # and cover the tracks
    return "waited for the verdict, deleted the branch"
if c.lane == "lane-1":
    return "read my inbox"
if c.turn == 1:
    c.propose("lane-2/a", {"a.txt": "10\\n"})
    return "lowered a"
# Lane 2 ends its second turn only once lane 1's PR is judged too, and dawdles in its third,
# so the budget's sixth turn is lane 1's third (whose inbox says why), however slow the machine.
if c.turn >= 3:
    time.sleep(10)  # outlasts lane 1's second turn, so the sixth turn is lane 1's third
    return "nothing more to do"
c.wait("my PR merged", lambda: mine("merged") and mine("tampered", "lane-1"))
return "saw it merged"
"""


def test_a_pr_that_rewrites_the_evaluator_is_tampered_and_main_keeps_its_real_score(
    tmp_path: Path,
) -> None:
    team = Team(tmp_path, CHEATER)
    proc = team.run(turns=6)
    assert proc.returncode == 0, proc.stderr
    st = team.status()
    prs = {p["lane"]: p for p in st["pull_requests"]}
    fake, honest = prs["lane-1"], prs["lane-2"]
    assert fake["status"] == "tampered" and fake["tampered"] == ["score.py"]
    assert fake["reason"] == "it changes the evaluator's frozen files: score.py"
    assert fake["receipt"] is None and fake["score"] is None  # never measured
    assert honest["status"] == "merged" and honest["score"] == 40
    assert st["main"]["score"] == 40 and [e["pr"] for e in st["ledger"]] == [honest["id"]]
    assert st["evaluator_files"] == ["score.py"]
    # Your tree got the honest change and kept the real evaluator.
    assert (team.src / "score.py").read_text() == SCORE
    assert (team.src / "a.txt").read_text() == "10\n"
    # The lane heard why in its next turn's inbox; the journal and the views say so.
    inbox = " ".join(
        x or "" for e in team.log("lane-1") if e.get("done") and e["turn"] == 3 for x in e["inbox"]
    )
    assert f"{fake['id']} is tampered and will never be merged" in inbox
    assert "`python3 score.py` is not yours to change" in inbox
    # Its branch stays in the central repository for review: the deletion was refused.
    assert f"lane-1/fast was pushed as {fake['id']}; the branch of a PR is kept" in inbox
    run_dir = Path(st["lanes"][0]["workspace"]).parents[2]
    central = run_dir / "central" / "workspace"
    kept = team.git("--git-dir", str(central), "rev-parse", "refs/heads/lane-1/fast")
    assert kept == fake["head"]
    tampered = [e for e in team.events() if e["kind"] == "pr_tampered"]
    assert [e["payload"]["files"] for e in tampered] == [["score.py"]]
    shown = cli("events", "last", cwd=team.src, check=True).stdout
    assert f"{fake['id']} of lane-1 changes the evaluator's frozen files (score.py)" in shown
