"""A stopped run of parallel_flame_chase:git_pr resumes with its PRs, receipts and ledger: the
same run, the next PR id, the next actor of each lane, main and the source where they were."""

from __future__ import annotations

from pathlib import Path

from tests.flows.git_pr.team import Team

STEPWISE = """
if c.lane == "lane-1" and c.turn == 1:
    c.propose("lane-1/a", {"a.txt": "10\\n"})
    return "a down"
if c.lane == "lane-1" and c.turn == 2:
    listed = c.pr("list").stdout
    c.log(listed=listed)
    c.propose("lane-1/b", {"b.txt": "5\\n"})
    return "b down, on top of the merged a"
c.wait("lane-1's turn", lambda: c.done("lane-1", c.turn))
"""


def test_a_resumed_run_goes_on_with_its_prs_receipts_and_ledger(tmp_path: Path) -> None:
    team = Team(tmp_path, STEPWISE)
    first = team.run(turns=2)
    assert first.returncode == 0, first.stderr
    before = team.status()
    assert [e["pr"] for e in before["ledger"]] == ["PR000001"]
    receipt = before["pull_requests"][0]["receipt"]
    again = team.run(turns=4)
    assert again.returncode == 0, again.stderr
    after = team.status()
    assert after["id"] == before["id"]
    assert [(e["pr"], e["prior_score"], e["score"]) for e in after["ledger"]] == [
        ("PR000001", 60, 40),
        ("PR000002", 40, 15),
    ]
    prs = {p["id"]: p for p in after["pull_requests"]}
    assert prs["PR000001"]["receipt"] == receipt  # kept as it was
    assert prs["PR000002"]["descends"] is True  # started from the merged main
    listed = next(e["listed"] for e in team.log("lane-1") if "listed" in e)
    assert "PR000001  lane-1  merged" in listed
    resumed = [e for e in team.events() if e["kind"] == "turn_started" and e["lane"] == "lane-1"]
    assert [(e["actor"], e["payload"]["turn"]) for e in resumed] == [
        ("lane_1_actor_a", 1),
        ("lane_1_actor_b", 2),
    ]
    assert (team.src / "a.txt").read_text() == "10\n" and (team.src / "b.txt").read_text() == "5\n"
    assert after["main"]["published"] == after["ledger"][-1]["merge"]
