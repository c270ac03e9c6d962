"""Lanes racing through pull requests, through the real CLI: scripted lane actors in their
jailed clones push, open and ready PRs; the runtime measures, merges and publishes."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.flows.git_pr.team import Team
from tests.helpers import cli

RACE = """
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
"""


def test_racing_prs_end_merged_in_order_with_a_remeasured_merge_and_published(
    tmp_path: Path,
) -> None:
    team = Team(tmp_path, RACE)
    digest = team.config_digest()
    user_head = team.git("rev-parse", "HEAD")
    proc = team.run(turns=4)
    assert proc.returncode == 0, proc.stderr
    prs = team.prs()
    assert {k: (p["lane"], p["status"]) for k, p in prs.items()} == {
        "PR000001": ("lane-1", "merged"),
        "PR000002": ("lane-2", "merged"),
    }
    first, second = prs["PR000001"], prs["PR000002"]
    assert first["score"] == 40 and second["score"] == 35
    # The second was based on the old main: merged with the current main and measured again.
    assert second["descends"] is False
    assert second["merge_receipt"]["value"] == 15
    assert second["merge_receipt"]["commit"] == second["merge"]
    st = team.status()
    ledger = st["ledger"]
    assert [(e["pr"], e["prior_score"], e["score"], e["fast"]) for e in ledger] == [
        ("PR000001", 60, 40, True),
        ("PR000002", 40, 15, False),
    ]
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
    assert subjects == [
        "flamechase|flamechase: merge PR000002 into the source",
        "flamechase|flamechase: merge PR000001 into the source",
    ]
    assert team.git("status", "--porcelain") == ""
    assert team.config_digest() == digest and team.user_hooks_ran() == []
    # `flamechase pr list` worked from inside lane-1's jailed clone.
    listed = next(e for e in team.log("lane-1") if e.get("cmd", [])[-2:] == ["pr", "list"])
    assert listed["code"] == 0 and "PR000001  lane-1  merged" in listed["out"]
    kinds = [e["kind"] for e in team.events()]
    merged = [e["payload"] for e in team.events() if e["kind"] == "pr_merged"]
    assert [m["remeasured"] for m in merged] == [False, True]
    assert kinds.count("main_published") == 2


EDITED = """
if c.lane == "lane-1" and c.turn == 1:
    c.wait("the user's edit", lambda: (Path(__file__).parent / "edited").exists())
    c.propose("lane-1/a", {"a.txt": "10\\n"})
    return "proposed lane-1/a"
c.wait("lane-1's turn", lambda: c.done("lane-1", c.turn))
"""


def test_a_file_edited_in_the_source_meanwhile_holds_publication_naming_it(tmp_path: Path) -> None:
    team = Team(tmp_path, "from pathlib import Path\n" + EDITED)
    proc = team.start(turns=2)
    try:
        deadline = time.monotonic() + 120
        while not any(e["kind"] == "central_ready" for e in _events(team)):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        (team.src / "a.txt").write_text("99\n")  # the user's own edit, after the baseline
        (team.dir / "edited").write_text("")
        proc.wait(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, (team.dir / "err.txt").read_text()
    held = [e["payload"] for e in team.events() if e["kind"] == "publication_held"]
    assert held and held[0]["reason"] == (
        "a.txt was changed in the source outside the run; publication stops until it holds "
        "what the run started from again"
    )
    st = team.status()
    assert st["ledger"][0]["pr"] == "PR000001"  # merged into main all the same
    assert st["main"]["published"] == st["main"]["baseline"]
    assert st["main"]["publication_held"] == held[0]["reason"]
    assert (team.src / "a.txt").read_text() == "99\n"  # the user's edit is kept
    assert team.git("log", "--format=%s") == "the user's code"


def _events(team: Team) -> list[dict[str, object]]:
    proc = cli("events", "--json", cwd=team.src, env=team.env)
    if proc.returncode != 0:
        return []
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
