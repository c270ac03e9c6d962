"""What a lane may not do with refs, through the real CLI with jailed scripted lanes: tags
(created, moved, deleted), notes, replace refs, remote-tracking refs, branches named like
`origin/main` or `HEAD`, the runtime's own staging refs. None reaches the central repository;
another lane's `git fetch origin` and `git checkout -B ... origin/main` still start from main."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from flamechase.jail import probe
from tests.flows.git_pr.team import Team

JAIL = probe()
pytestmark = pytest.mark.skipif(
    not (JAIL.bwrap_ok or JAIL.landlock_ok), reason="no jail can run here (bubblewrap or Landlock)"
)

OTHERS = (
    "refs/notes/commits",
    "refs/remotes/origin/main",
    "refs/heads/origin/main",
    "refs/heads/HEAD",
    "refs/heads/lane-1/HEAD",
    "refs/flamechase/merges/PR000001",
)

HOSTILE = f"""
if c.lane == "lane-1" and c.turn == 1:
    main = c.main()
    c.change("lane-1/x", {{"a.txt": "1\\n"}}, message="the attacker's")
    c.git("tag", "origin/main")
    c.git("tag", "-a", "-m", "annotated", "v1")
    c.git("push", "-q", "origin", "lane-1/x")
    c.git("push", "-q", "--tags", "origin")
    c.git("push", "-q", "origin", f"HEAD:refs/replace/{{main}}",
          *(f"HEAD:{{r}}" for r in {OTHERS!r}))
    return "pushed tags and refs"
if c.lane == "lane-1" and c.turn == 2:
    c.change("lane-1/z", {{"b.txt": "1\\n"}}, start="lane-1/x", message="moved")
    c.git("push", "-q", "-f", "origin", "HEAD:refs/tags/origin/main", ":refs/tags/v1")
    return "moved one tag and deleted another"
if c.lane == "lane-1" and c.turn == 3:
    c.log(third=True)  # its second turn's pushes are forwarded before this turn starts
    c.wait("lane-2's look", lambda: c.done("lane-2", 1))
    return "waited"
if c.lane == "lane-2" and c.turn == 1:
    c.wait("lane-1's third turn", lambda: any(e.get("third") for e in c.logged("lane-1")))
    c.git("fetch", "origin")
    c.git("checkout", "-q", "-B", "lane-2/y", "origin/main")
    c.log(head=c.git("rev-parse", "HEAD").stdout.strip(), main=c.main(),
          tags=c.git("tag", "-l").stdout.split())
    return "started from origin/main"
"""


def test_a_lanes_tags_and_other_refs_reach_neither_the_central_repository_nor_other_lanes(
    tmp_path: Path,
) -> None:
    team = Team(tmp_path, HOSTILE)
    proc = team.run(turns=5)
    assert proc.returncode == 0, proc.stderr
    st = team.status()
    run_dir = Path(st["lanes"][0]["workspace"]).parents[2]
    listed = subprocess.run(
        ["git", "--git-dir", str(run_dir / "central" / "workspace"), "for-each-ref"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    refs = {ref for ref in listed if ref.startswith("refs/")}
    assert refs == {"refs/heads/main", "refs/heads/lane-1/x"}
    pushes = [e["payload"] for e in team.events() if e["kind"] == "push_refused"]
    refused = {p["ref"]: p["reason"] for p in pushes}
    main = st["main"]["baseline"]
    assert set(refused) == {
        "refs/tags/origin/main",
        "refs/tags/v1",
        f"refs/replace/{main}",
        *OTHERS,
    }
    # Created, then moved (origin/main) or deleted (v1): refused each time.
    tags = [p["ref"] for p in pushes if p["ref"].startswith("refs/tags/")]
    assert sorted(tags) == ["refs/tags/origin/main"] * 2 + ["refs/tags/v1"] * 2
    assert refused["refs/tags/v1"] == (
        "lane-1 may push only its own branches (refs/heads/lane-1/...), not refs/tags/v1"
    )
    # The other lane fetched and started from main, and got no tag.
    look = next(e for e in team.log("lane-2") if "head" in e)
    assert look["head"] == look["main"] == main and look["tags"] == []
    checkout = next(e for e in team.log("lane-2") if e.get("cmd", [])[1:3] == ["checkout", "-q"])
    assert checkout["code"] == 0, checkout["err"]
