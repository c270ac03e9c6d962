"""parallel_flame_chase planning: once, in a snapshot, one mission per lane, 3 fresh sessions."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.flows.pfc import Team, of_kind, run_dir
from tests.helpers import events, status

STOP = 'return c.ok("blocked", "stop here")'


@pytest.fixture
def ws(source_tree: Path) -> Path:
    return source_tree


def test_the_coordinator_plans_once_in_a_snapshot_then_leaves(
    ws: Path, tmp_path: Path, state_home: Path
) -> None:
    team = Team(
        tmp_path / "team",
        """
        c.save(f"prompt-{c.turn}.txt", c.prompt)
        if c.turn >= 3:
            return c.ok("blocked", "stop here")
    """,
        planner="""
        seen = sorted(str(p.relative_to(c.ws)) for p in c.ws.rglob("*") if p.is_file())
        c.save("planner-saw.txt", "\\n".join(seen))
        c.save("planner-inode.txt", str(os.stat(c.ws).st_ino))
        (c.ws / "PLANNER.txt").write_text("planner scribbles")
        (c.ws / "README.md").unlink()
        plan = c.plan()
        plan["lanes"][1]["mission"].update(kind="validation", approach_class="fuzzing",
                                           dependencies=["lane-1 output"])
        return plan
    """,
    )
    readme = (ws / "README.md").read_text()
    assert team.run(ws).returncode == 3
    root = run_dir(state_home, ws)
    coord = team.coordinator_log()
    assert len(coord) == 1
    assert coord[0]["cwd"] == str(root / "planning" / "1" / "workspace")
    assert coord[0]["lanes"] == "lane-1,lane-2,lane-3"
    # A full copy of the source; what the planner did there stayed there.
    saw = team.saved("planner-saw.txt").split()
    assert saw == ["README.md", "TASK.md", "pkg/mod.py"]
    assert (ws / "README.md").read_text() == readme
    assert not (ws / "PLANNER.txt").exists()
    # The planner's snapshot, not copied again, is lane-2's copy: brought back to the source.
    lane2 = root / "lanes" / "lane-2" / "workspace"
    assert str(lane2.stat().st_ino) == team.saved("planner-inode.txt")
    assert (lane2 / "README.md").read_text() == readme
    assert not (lane2 / "PLANNER.txt").exists()
    plan = status(ws)["plan"]
    assert [b["lane"] for b in plan["lanes"]] == ["lane-1", "lane-2", "lane-3"]
    m2 = plan["lanes"][1]["mission"]
    assert (m2["kind"], m2["approach_class"], m2["dependencies"]) == (
        "validation",
        "fuzzing",
        ["lane-1 output"],
    )
    # Each lane's prompt carries its own mission.
    for n in (1, 2, 3):
        prompt = (root / f"lanes/lane-{n}/pfc/prompt-1.txt").read_text()
        assert f"mission of lane-{n}" in prompt
        assert all(f"mission of lane-{k}" not in prompt for k in (1, 2, 3) if k != n)
    # A private snapshot (lane-3's) exists before planning ends; the lanes start after it.
    evs = events(ws)
    order = [e["kind"] for e in evs]
    first_lane_turn = next(
        i for i, e in enumerate(evs) if e["kind"] == "turn_started" and e["lane"]
    )
    assert order.index("place_made") < order.index("planned") < first_lane_turn


def test_an_invalid_plan_is_retried_in_fresh_sessions_then_the_run_fails(
    ws: Path, tmp_path: Path
) -> None:
    team = Team(
        tmp_path / "team",
        STOP,
        planner="""
        return c.plan(["lane-1", "lane-2"])
    """,
    )
    proc = team.run(ws)
    assert proc.returncode == 1, proc.stderr
    st = status(ws)
    assert st["status"] == "failed"
    for n in (1, 2, 3):
        assert f"attempt {n}" in st["last_error"]
    assert "lane-3" in st["last_error"]
    assert "attempt 1" in proc.stderr
    attempts = of_kind(events(ws), "plan_attempt")
    assert [a["payload"]["attempt"] for a in attempts] == [1, 2, 3]
    assert all(a["payload"]["status"] == "failed" for a in attempts)
    assert all("\n" not in a["payload"]["error"] for a in attempts)
    # Each attempt: a new program run plus its two repair runs; no lane ever started.
    coord = team.coordinator_log()
    assert len(coord) == 9
    assert sum(1 for e in coord if e["repair"]) == 6
    assert all("lane-3" in e["repair"] for e in coord if e["repair"])
    assert not [e for e in team.log() if e["lane"]]
    assert st["plan"] is None


def test_a_failed_planning_session_is_retried_without_repair(ws: Path, tmp_path: Path) -> None:
    team = Team(
        tmp_path / "team",
        STOP,
        planner="""
        if c.once("crash"):
            print("coordinator crashed", file=sys.stderr)
            sys.exit(4)
    """,
    )
    proc = team.run(ws)
    assert proc.returncode == 3, proc.stderr
    coord = team.coordinator_log()
    assert len(coord) == 2
    assert not any(e["repair"] for e in coord)
    attempts = of_kind(events(ws), "plan_attempt")
    assert [a["payload"]["status"] for a in attempts] == ["failed", "valid"]
    assert "coordinator crashed" in attempts[0]["payload"]["error"]
    assert status(ws)["plan"] is not None


def test_a_repaired_plan_is_accepted_in_the_same_attempt(ws: Path, tmp_path: Path) -> None:
    team = Team(
        tmp_path / "team",
        STOP,
        planner="""
        if not c.repair:
            return "this is not a plan"
    """,
    )
    assert team.run(ws).returncode == 3
    coord = team.coordinator_log()
    assert [bool(e["repair"]) for e in coord] == [False, True]
    assert "not JSON" in coord[1]["repair"]
    attempts = of_kind(events(ws), "plan_attempt")
    assert [a["payload"]["status"] for a in attempts] == ["valid"]


BAD_PLANS = {
    "missing lane": ('return c.plan(["lane-1", "lane-3"])', "missing lane-2"),
    "repeated lane": ('return c.plan(["lane-1", "lane-2", "lane-2", "lane-3"])', "repeats lane-2"),
    "unknown lane": ('return c.plan(["lane-1", "lane-2", "lane-3", "lane-4"])', "unknown lane-4"),
    "not an object": ("return [c.plan()]", "JSON object"),
    "no title": ('p = c.plan()\ndel p["lanes"][0]["mission"]["title"]\nreturn p', "title"),
    "no criteria": (
        'p = c.plan()\np["lanes"][2]["mission"]["success_criteria"] = []\nreturn p',
        "success_criteria",
    ),
    "extra field": ('p = c.plan()\np["lanes"][0]["mission"]["colour"] = "red"\nreturn p', "colour"),
    "bad kind": ('p = c.plan()\np["lanes"][0]["mission"]["kind"] = "party"\nreturn p', "kind"),
}


GROUPS = [sorted(BAD_PLANS)[i : i + 3] for i in range(0, len(BAD_PLANS), 3)]


@pytest.mark.parametrize("cases", GROUPS, ids=["-".join(g).replace(" ", "_") for g in GROUPS])
def test_bad_plans_fail_the_attempt_with_a_one_line_reason(
    ws: Path, tmp_path: Path, cases: list[str]
) -> None:
    # Attempt k (its first run and both repairs) returns bad plan k; after them a good one.
    planner = "n = (len([e for e in c.log() if e['role'] == 'coordinator']) - 1) // 3\n"
    for k, case in enumerate(cases):
        planner += f"if n == {k}:\n" + "".join(
            f"    {line}\n" for line in BAD_PLANS[case][0].splitlines()
        )
    team = Team(tmp_path / "team", STOP, planner=planner)
    proc = team.run(ws)
    attempts = of_kind(events(ws), "plan_attempt")
    if len(cases) == 3:
        assert proc.returncode == 1, proc.stderr
        assert [a["payload"]["status"] for a in attempts] == ["failed"] * 3
    else:
        assert proc.returncode == 3, proc.stderr
        assert [a["payload"]["status"] for a in attempts] == ["failed"] * len(cases) + ["valid"]
        assert [b["lane"] for b in status(ws)["plan"]["lanes"]] == ["lane-1", "lane-2", "lane-3"]
    for case, attempt in zip(cases, attempts, strict=False):
        error = attempt["payload"]["error"]
        assert BAD_PLANS[case][1] in error, (case, error)
        assert "\n" not in error
