"""`flamechase pr list --json`, `pr show PRxxx` and `pr ready PRxxx` (by id), run by a scripted
lane from inside its jailed clone through the real CLI: what they print is the run's PR table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.flows.git_pr.team import Team

BY_ID = """
import sys
def show(pr, quiet=False):
    return c.sh(sys.executable, "-m", "flamechase", "pr", "show", pr, check=False, quiet=quiet)
if c.turn == 1:
    c.change("lane-1/a", {"a.txt": "10\\n"})
    c.git("push", "-q", "origin", "lane-1/a")
    c.pr("open", "--title", "a down", "--hypothesis", "a is the bottleneck")
    return "opened a draft"
if c.turn == 2:
    listed = json.loads(c.pr("list", "--json").stdout)
    shown = json.loads(show("PR000001").stdout)
    c.pr("ready", "PR000001")
    pending = json.loads(c.pr("list", "--json").stdout)["requested"]
    c.log(listed=listed, shown=shown, pending=pending)
    return "made PR000001 ready"
c.wait("PR000001 merged", lambda: json.loads(show("PR000001", quiet=True).stdout or "{}")
       .get("status") == "merged")
missing = show("PR000009")
c.log(merged=json.loads(show("PR000001").stdout), missing=[missing.returncode, missing.stderr])
return "saw PR000001 merged"
"""


def _logged(team: Team, key: str) -> dict[str, Any]:
    return next(e for e in team.log("lane-1") if key in e)


def test_a_lane_lists_shows_and_readies_its_pr_by_id_from_inside_its_turn(tmp_path: Path) -> None:
    team = Team(tmp_path, BY_ID)
    proc = team.run(turns=4, lanes=1)
    assert proc.returncode == 0, proc.stderr
    turn2 = _logged(team, "listed")
    # `pr list --json` in the next turn: main as measured at the start, the draft as opened.
    listed = turn2["listed"]
    assert listed["main"]["score"] == 60 and listed["main"]["metric"] == "score"
    assert listed["main"]["direction"] == "minimize" and len(listed["main"]["commit"]) == 40
    assert listed["requested"] == []
    [draft] = listed["pull_requests"]
    assert (
        draft["id"],
        draft["lane"],
        draft["status"],
        draft["branch"],
        draft["title"],
        draft["hypothesis"],
    ) == ("PR000001", "lane-1", "draft", "lane-1/a", "a down", "a is the bottleneck")
    assert draft["receipt"] is None and draft["score"] is None
    # `pr show` prints exactly that PR; `pr ready PR000001` is a request until the turn ends.
    assert turn2["shown"] == draft
    assert turn2["pending"] == [{"op": "ready", "pr": "PR000001"}]
    # Once merged, `pr show` carries the runtime's receipt and the merge.
    end = _logged(team, "merged")
    merged = end["merged"]
    st = team.status()
    assert merged["status"] == "merged" and merged["score"] == 40
    assert merged["head"] == draft["head"] and merged["receipt"]["commit"] == draft["head"]
    assert merged["receipt"]["value"] == 40 and merged["receipt"]["exit_code"] == 0
    assert merged["merge"] == st["ledger"][0]["merge"] == st["main"]["commit"]
    code, err = end["missing"]
    assert code == 2 and "there is no PR000009" in err
