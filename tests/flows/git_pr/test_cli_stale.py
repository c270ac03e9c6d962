"""A PR made on an older main through the real CLI, with jailed scripted lanes: alone it does
not beat the main another lane moved, but the runtime measures its real merge with the current
main, where both improvements add up, and merges it."""

from __future__ import annotations

from pathlib import Path

import pytest

from flamechase.jail import probe
from tests.flows.git_pr.team import Team

JAIL = probe()
pytestmark = pytest.mark.skipif(
    not (JAIL.bwrap_ok or JAIL.landlock_ok), reason="no jail can run here (bubblewrap or Landlock)"
)

STALE = """
def decided():
    prs = json.loads(c.pr("list", "--json").stdout)["pull_requests"]
    return [p for p in prs if p["lane"] == c.lane and p["status"] in ("merged", "rejected")]
if c.lane == "lane-1" and c.turn == 1:
    c.propose("lane-1/a", {"a.txt": "10\\n"})
    return "a down"
if c.lane == "lane-2" and c.turn == 1:
    base = c.main()
    c.change("lane-2/b", {"b.txt": "25\\n"}, start=base)
    c.wait("lane-1's merge", lambda: c.main() != base)
    c.git("push", "-q", "origin", "lane-2/b")
    c.pr("open", "--title", "b down", "--hypothesis", "b")
    c.pr("ready")
    return "b down, on the old main"
if c.lane == "lane-2":
    c.wait("my PR decided", decided)
    return "saw it decided"
c.wait("lane-2's second turn", lambda: c.done("lane-2", 2))
"""


def test_a_stale_pr_worse_than_main_alone_is_merged_when_its_real_merge_beats_main(
    tmp_path: Path,
) -> None:
    team = Team(tmp_path, STALE)
    proc = team.run(turns=4)
    assert proc.returncode == 0, proc.stderr
    st = team.status()
    prs = {p["lane"]: p for p in st["pull_requests"]}
    first, stale = prs["lane-1"], prs["lane-2"]
    assert first["status"] == "merged" and first["score"] == 40
    # Alone 30 + 25 = 55 does not beat main's 40; merged with main, 10 + 25 = 35 does.
    assert stale["score"] == 55 and stale["status"] == "merged"
    assert stale["merge_receipt"]["value"] == 35
    assert [(e["pr"], e["score"], e["fast"]) for e in st["ledger"]] == [
        (first["id"], 40, True),
        (stale["id"], 35, False),
    ]
    assert st["main"]["score"] == 35
    assert (team.src / "a.txt").read_text() == "10\n" and (team.src / "b.txt").read_text() == "25\n"
