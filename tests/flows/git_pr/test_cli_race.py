"""Lanes racing through pull requests, through the real CLI: scripted lane actors in their
jailed clones push, open and ready PRs; the runtime measures, merges and publishes."""

from __future__ import annotations

from pathlib import Path

from tests.flows.git_pr.team import Team

RACE = '''
if c.lane == "lane-1" and c.turn == 1:
    c.propose("lane-1/a", {"a.txt": "10\\n"})                  # 40 alone: beats 60
    return "proposed lane-1/a"
if c.lane == "lane-2" and c.turn == 1:
    base = c.main()
    c.change("lane-2/b", {"b.txt": "5\\n"}, start=base)       # 35 alone, on the old main
    c.wait("lane-1's merge", lambda: c.main() != base)
    c.git("push", "-q", "origin", "lane-2/b")
    c.pr("open", "--title", "b down", "--hypothesis", "b is the bottleneck")
    c.pr("ready")
    return "proposed lane-2/b on the old main"
if c.lane == "lane-1" and c.turn == 2:
    c.wait("lane-2's merge", lambda: c.git("fetch", "-q", "origin", quiet=True) and "PR000002"
           in c.git("log", "-1", "--format=%B", "origin/main", quiet=True).stdout)
    listed = c.pr("list")
    return "listed: " + " | ".join(listed.stdout.splitlines()[:3])
c.wait("lane-1's second turn", lambda: c.done("lane-1", 2))
'''


def test_racing_prs_end_merged_in_order_with_a_remeasured_merge_and_published(
        tmp_path: Path) -> None:
    team = Team(tmp_path, RACE)
    digest = team.config_digest()
    user_head = team.git("rev-parse", "HEAD")
    proc = team.run(turns=4)
    assert proc.returncode == 0, proc.stderr
    prs = team.prs()
    assert {k: (p["lane"], p["status"]) for k, p in prs.items()} == {
        "PR000001": ("lane-1", "merged"), "PR000002": ("lane-2", "merged")}
    first, second = prs["PR000001"], prs["PR000002"]
    assert first["score"] == 40 and second["score"] == 35
    # The second was based on the old main: merged with the current main and measured again.
    assert second["descends"] is False
    assert second["merge_receipt"]["value"] == 15
    assert second["merge_receipt"]["commit"] == second["merge"]
    st = team.status()
    ledger = st["ledger"]
    assert [(e["pr"], e["prior_score"], e["score"], e["fast"]) for e in ledger] == [
        ("PR000001", 60, 40, True), ("PR000002", 40, 15, False)]
    assert ledger[1]["prior_main"] == ledger[0]["merge"]
    assert st["main"]["score"] == 15 and st["main"]["published"] == ledger[1]["merge"]
    # The receipt binds exactly what was measured.
    receipt = first["receipt"]
    assert receipt["commit"] == first["head"] and receipt["command"] == "python3 score.py"
    assert receipt["exit_code"] == 0 and len(receipt["output_sha256"]) == 64
    # The source holds both changes, as ordinary commits on the user's branch.
    assert (team.src / "a.txt").read_text() == "10\n" and (team.src / "b.txt").read_text() == "5\n"
    assert team.git("rev-parse", "--abbrev-ref", "HEAD") == "trunk"
    subjects = team.git("log", "--format=%an|%s", f"{user_head}..HEAD").splitlines()
    assert subjects == ["flamechase|flamechase: merge PR000002 into the source",
                        "flamechase|flamechase: merge PR000001 into the source"]
    assert team.git("status", "--porcelain") == ""
    assert team.config_digest() == digest and team.user_hooks_ran() == []
    # `flamechase pr list` worked from inside lane-1's jailed clone.
    listed = next(e for e in team.log("lane-1") if e.get("cmd", [])[-2:] == ["pr", "list"])
    assert listed["code"] == 0 and "PR000001  lane-1  merged" in listed["out"]
    kinds = [e["kind"] for e in team.events()]
    merged = [e["payload"] for e in team.events() if e["kind"] == "pr_merged"]
    assert [m["remeasured"] for m in merged] == [False, True]
    assert kinds.count("main_published") == 2
