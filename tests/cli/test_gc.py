"""`gc` and `runs rm` through the real CLI: a finished run's copies are reclaimed, a lane's
unpublished edits are kept as an archive first (and the command says so), the run stays
listed (with its disk use) but is no longer resumed, and a SIGKILL mid-reclaim leaves the copy
whole or gone with its work kept, never half of it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from tests.flows.pfc import Team
from tests.helpers import FLAMECHASE, cli, status

# Lane 2 edits its copy (work nobody published), then every lane stops.
EDIT = """
if c.lane == "lane-2" and c.turn == 1:
    (c.ws / "lane2-idea.txt").write_text("unpublished")
if c.turn >= 2:
    return c.ok("blocked", "stop here")
"""


def _home() -> Path:
    return Path(os.environ["FLAMECHASE_HOME"])


@pytest.fixture
def held_run(source_tree: Path, tmp_path: Path) -> tuple[Path, str]:
    team = Team(tmp_path / "team", EDIT)
    proc = team.run(source_tree, "lanes=2", timeout=180)
    assert proc.returncode == 3, proc.stderr
    return source_tree, str(status(source_tree)["id"])


def test_gc_keeps_unpublished_work_then_reclaims_the_copies(held_run: tuple[Path, str]) -> None:
    ws, run_id = held_run
    run_dir = _home() / "runs" / run_id
    copy = run_dir / "lanes" / "lane-2" / "workspace"
    assert (copy / "lane2-idea.txt").is_file()
    before = status(ws)["disk_bytes"]
    listed = json.loads(cli("runs", "--json", cwd=ws, check=True).stdout)
    assert listed[-1]["disk_bytes"] == before > 0

    dry = cli("gc", "--dry-run", cwd=ws, check=True).stdout
    assert run_id in dry and "lanes/lane-2" in dry and "nothing removed" in dry
    assert copy.is_dir()

    assert (run_dir / "lanerefresh.git").is_dir()
    out = cli("gc", cwd=ws, check=True).stdout
    assert f"kept unpublished work of lanes/lane-2: {run_dir}/kept/" in out
    assert "no longer resumed" in out
    assert not copy.exists()
    assert not (run_dir / "lanerefresh.git").exists()  # the refresh's repository too
    with tarfile.open(run_dir / "kept" / "lanes_lane-2.tar.gz") as tar:
        got = tar.extractfile("lane2-idea.txt")
        assert got is not None and got.read() == b"unpublished"
        assert "solver.py" not in tar.getnames()  # unchanged files are not kept
    after = status(ws)
    assert after["disk_bytes"] < before  # the run is still there to look at
    assert cli("gc", "--dry-run", cwd=ws, check=True).stdout.startswith("reclaimable: 0 B")
    assert run_id not in (_home() / "ports.json").read_text()  # its port blocks are free
    assert [ln["ports"] for ln in after["lanes"]] == [None, None]


def test_runs_rm_removes_a_run_and_keeps_its_work_beside_the_runs(
    held_run: tuple[Path, str],
) -> None:
    ws, run_id = held_run
    out = cli("runs", "rm", run_id[:12], cwd=ws, check=True).stdout
    assert f"removed run {run_id}" in out
    kept = _home() / "kept" / run_id / "lanes_lane-2.tar.gz"
    assert str(kept) in out and kept.is_file()
    assert not (_home() / "runs" / run_id).exists()
    assert run_id not in cli("runs", cwd=ws, check=True).stdout
    assert not list((_home() / "trash").iterdir())


def test_gc_filters_finished_and_older_than(held_run: tuple[Path, str]) -> None:
    ws, run_id = held_run
    assert run_id not in cli("gc", "--dry-run", "--finished", cwd=ws, check=True).stdout
    assert run_id not in cli("gc", "--dry-run", "--older-than", "1d", cwd=ws, check=True).stdout
    bad = cli("gc", "--older-than", "soon", cwd=ws)
    assert bad.returncode == 2 and "12h, 7d" in bad.stderr


def _files(tree: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tree)): p.read_bytes() for p in tree.rglob("*") if p.is_file()}


@pytest.mark.parametrize("nth", [1, 2, 9])  # in the copy, or in what follows it
def test_a_gc_killed_mid_removal_is_finished_by_the_next_with_the_work_kept(
    held_run: tuple[Path, str], nth: int
) -> None:
    ws, run_id = held_run
    run_dir = _home() / "runs" / run_id
    copy = run_dir / "lanes" / "lane-2" / "workspace"
    archive = run_dir / "kept" / "lanes_lane-2.tar.gz"
    killed = cli("gc", cwd=ws, env={"FLAMECHASE_FAULT": f"gc-remove:{nth}"})
    assert killed.returncode == -signal.SIGKILL
    assert not copy.exists()  # gone from its name in one rename ...
    assert archive.is_file()  # ... only after its work was kept
    (half,) = run_dir.glob(".reclaiming-*")  # and half removed where no list names it
    assert half.is_dir()
    out = cli("gc", cwd=ws, check=True).stdout  # the next gc finishes it
    assert "freed" in out
    assert not list(run_dir.glob(".reclaiming-*"))
    with tarfile.open(archive) as tar:
        got = tar.extractfile("lane2-idea.txt")
        assert got is not None and got.read() == b"unpublished"


def test_a_gc_killed_while_keeping_leaves_the_copy_whole_and_no_half_archive(
    held_run: tuple[Path, str],
) -> None:
    ws, run_id = held_run
    run_dir = _home() / "runs" / run_id
    copy = run_dir / "lanes" / "lane-2" / "workspace"
    before = _files(copy)
    killed = cli("gc", cwd=ws, env={"FLAMECHASE_FAULT": "gc-keep:1"})
    assert killed.returncode == -signal.SIGKILL
    assert _files(copy) == before  # nothing of the copy removed before its work is kept
    assert not (run_dir / "kept" / "lanes_lane-2.tar.gz").exists()
    assert list((run_dir / "kept").glob(".*.tar.gz.*"))  # the archive it was writing
    cli("gc", cwd=ws, check=True)
    assert not copy.exists()
    assert [p.name for p in (run_dir / "kept").iterdir()] == ["lanes_lane-2.tar.gz"]
    with tarfile.open(run_dir / "kept" / "lanes_lane-2.tar.gz") as tar:
        got = tar.extractfile("lane2-idea.txt")
        assert got is not None and got.read() == b"unpublished"


def test_a_copy_the_lane_left_read_only_is_reclaimed_whole(
    source_tree: Path, tmp_path: Path
) -> None:
    hostile = EDIT.replace(
        '(c.ws / "lane2-idea.txt").write_text("unpublished")',
        '(c.ws / "lane2-idea.txt").write_text("unpublished")\n'
        '    (c.ws / "locked").mkdir()\n'
        '    (c.ws / "locked" / "inside.txt").write_text("mine")\n'
        '    (c.ws / "locked").chmod(0o500)',
    )
    team = Team(tmp_path / "team", hostile)
    assert team.run(source_tree, "lanes=2", timeout=180).returncode == 3
    run_dir = _home() / "runs" / str(status(source_tree)["id"])
    cli("gc", cwd=source_tree, check=True)
    assert not (run_dir / "lanes" / "lane-2" / "workspace").exists()
    assert not list(run_dir.glob(".reclaiming-*"))  # nothing left half removed
    with tarfile.open(run_dir / "kept" / "lanes_lane-2.tar.gz") as tar:
        got = tar.extractfile("locked/inside.txt")
        assert got is not None and got.read() == b"mine"


def test_a_reclaimed_run_is_not_resumed(held_run: tuple[Path, str], tmp_path: Path) -> None:
    ws, run_id = held_run
    cli("gc", cwd=ws, check=True)
    team = Team(tmp_path / "again", 'return c.ok("blocked", "stop")')
    assert team.run(ws, "lanes=2", timeout=180).returncode == 3
    assert status(ws)["id"] != run_id


def test_budget_disk_refuses_a_new_copy_past_it_and_says_why(
    source_tree: Path, tmp_path: Path
) -> None:
    team = Team(tmp_path / "team", EDIT)
    proc = team.run(source_tree, "lanes=2,budget.disk=1", timeout=180)
    assert proc.returncode == 0, proc.stderr
    st = status(source_tree)
    assert st["status"] == "finished"
    assert st["ended"].startswith("budget.disk is spent") and "flamechase gc" in st["ended"]
    assert st["budget"]["disk"]["limit"] == 1
    assert not team.lane_log("lane-2")  # no turn started on a copy it did not get
    bad = team.run(source_tree, "lanes=2,budget.disk=lots")
    assert bad.returncode == 2 and "budget.disk=lots" in bad.stderr


@pytest.mark.slow
@pytest.mark.parametrize("after", [0.05, 0.2, 0.5, 1.0])
def test_sigkill_anywhere_in_gc_leaves_a_copy_whole_or_gone_with_its_work_kept(
    source_tree: Path, tmp_path: Path, after: float
) -> None:
    for i in range(3000):  # a copy large enough for the kill to land inside the removal
        (source_tree / "pkg" / f"m{i:04d}.py").write_text(f"X = {i}\n" * 20)
    team = Team(tmp_path / "team", EDIT)
    assert team.run(source_tree, "lanes=2", timeout=300).returncode == 3
    run_dir = _home() / "runs" / str(status(source_tree)["id"])
    copy = run_dir / "lanes" / "lane-2" / "workspace"
    files = sum(1 for _ in copy.rglob("*"))
    proc = subprocess.Popen([*FLAMECHASE, "gc"], cwd=source_tree, stdout=subprocess.DEVNULL)
    time.sleep(after)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    archive = run_dir / "kept" / "lanes_lane-2.tar.gz"
    if copy.exists():
        assert sum(1 for _ in copy.rglob("*")) == files  # whole, never half-removed
    else:
        assert archive.is_file()  # gone only after its work was kept
    cli("gc", cwd=source_tree, check=True)
    assert not copy.exists() and archive.is_file()
    assert not list(run_dir.glob(".reclaiming-*"))


def test_gc_finished_reclaims_a_finished_run_whose_lane_left_links_out_of_its_copy(
    source_tree: Path, tmp_path: Path
) -> None:
    """A finished run (its budget spent), whose lane 2 left links to a directory and a file
    outside its copy and swapped a directory for one: `gc --finished` lists it with its size,
    keeps the lane's work (the links as links) and reclaims the copy; what the links name is
    never followed, read into the archive, or removed."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("the user's own\n")
    hook = f"""
if c.lane == "lane-2" and c.turn == 1:
    (c.ws / "lane2-idea.txt").write_text("unpublished")
    (c.ws / "to-outside").symlink_to({str(outside)!r})
    (c.ws / "precious-link").symlink_to({str(outside / "precious.txt")!r})
    (c.ws / "pkg").rename(c.ws / "pkg-old")
    (c.ws / "pkg").symlink_to({str(outside)!r})
"""
    team = Team(tmp_path / "team", hook)
    proc = team.run(source_tree, "lanes=2,budget.turns=5", timeout=180)
    assert proc.returncode == 0, proc.stderr
    st = status(source_tree)
    assert st["status"] == "finished"
    run_dir = _home() / "runs" / str(st["id"])
    copy = run_dir / "lanes" / "lane-2" / "workspace"
    listed = cli("gc", "--dry-run", "--finished", cwd=source_tree, check=True).stdout
    [row] = [line for line in listed.splitlines() if line.startswith(str(st["id"]))]
    assert "finished" in row and "lanes/lane-2" in row and " KB" in row
    young = cli("gc", "--dry-run", "--older-than", "1h", cwd=source_tree, check=True).stdout
    assert str(st["id"]) not in young  # too young for --older-than 1h
    out = cli("gc", "--finished", cwd=source_tree, check=True).stdout
    assert f"kept unpublished work of lanes/lane-2: {run_dir}/kept/" in out
    assert not copy.exists()
    assert sorted(p.name for p in outside.iterdir()) == ["precious.txt"]
    assert (outside / "precious.txt").read_text() == "the user's own\n"
    with tarfile.open(run_dir / "kept" / "lanes_lane-2.tar.gz") as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert members["to-outside"].issym() and members["to-outside"].linkname == str(outside)
        assert members["pkg"].issym() and members["precious-link"].issym()
        assert "pkg-old/mod.py" in members
        got = tar.extractfile("lane2-idea.txt")
        assert got is not None and got.read() == b"unpublished"
        deleted = tar.extractfile(".flamechase-deleted")
        assert deleted is not None and deleted.read() == b"pkg/mod.py\n"


def test_a_runs_rm_killed_mid_removal_leaves_the_work_kept_and_gc_finishes_it(
    held_run: tuple[Path, str],
) -> None:
    ws, run_id = held_run
    killed = cli("runs", "rm", run_id, cwd=ws, env={"FLAMECHASE_FAULT": "gc-remove:3"})
    assert killed.returncode == -signal.SIGKILL
    assert run_id not in cli("runs", cwd=ws, check=True).stdout  # gone from every list ...
    kept = _home() / "kept" / run_id / "lanes_lane-2.tar.gz"
    with tarfile.open(kept) as tar:  # ... after its work was kept
        got = tar.extractfile("lane2-idea.txt")
        assert got is not None and got.read() == b"unpublished"
    assert list((_home() / "trash").iterdir())  # half removed, out of the way
    cli("gc", cwd=ws, check=True)
    assert not list((_home() / "trash").iterdir())
