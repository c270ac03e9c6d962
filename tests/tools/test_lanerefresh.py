"""An explorer lane's copy carried onto lane 1's current tree: its own edits kept, lane 1's
taken, a conflict keeping the lane's version and named; nothing of either tree's `.git` runs;
a refresh cut half-way is finished by the next call."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flamechase.errors import SnapshotFailed
from flamechase.tools import lanerefresh


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path, Path, str]:
    lane1, lane2, repo = tmp_path / "lane1", tmp_path / "lane2", tmp_path / "refresh.git"
    _write(lane1, {"a.py": "a\n", "b.py": "b1\nb2\nb3\n", "c.py": "c\n", "gone.py": "x\n"})
    shutil.copytree(lane1, lane2)
    base = lanerefresh.record(repo, lane1)
    # Lane 1 moves on; lane 2 explores.
    _write(lane1, {"a.py": "a from lane 1\n", "b.py": "b1\nb2\nb3 lane 1\n", "new1.py": "n\n"})
    (lane1 / "gone.py").unlink()
    _write(lane2, {"b.py": "b1 lane 2\nb2\nb3\n", "c.py": "c from lane 2\n", "idea.py": "i\n"})
    (lane1 / "c.py").write_text("c changed by lane 1\n")
    return lane1, lane2, repo, base


def test_the_lane_copy_lands_on_lane_1s_tree_with_its_own_edits(
    trees: tuple[Path, Path, Path, str],
) -> None:
    lane1, lane2, repo, base = trees
    done = lanerefresh.refresh(repo, base, lane2, lane1, lane="lane-2")
    assert _files(lane2) == {
        "a.py": "a from lane 1\n",  # lane 1's change taken
        "b.py": "b1 lane 2\nb2\nb3 lane 1\n",  # both, merged line by line
        "c.py": "c from lane 2\n",  # both changed it: the lane's version kept ...
        "idea.py": "i\n",  # the lane's new file kept
        "new1.py": "n\n",
    }
    assert done.conflicts == ("c.py",)  # ... and named
    assert not (lane2 / "gone.py").exists()
    again = lanerefresh.refresh(repo, done.base, lane2, lane1, lane="lane-2")
    assert again.written == 0 and again.conflicts == ()


def test_nothing_of_a_trees_git_runs(trees: tuple[Path, Path, Path, str], tmp_path: Path) -> None:
    lane1, lane2, repo, base = trees
    marker = tmp_path / "hook-ran"
    for root in (lane1, lane2):
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        hooks = root / ".git" / "hooks"
        for name in ("pre-commit", "post-commit", "post-checkout", "fsmonitor-watchman"):
            (hooks / name).write_text(f"#!/bin/sh\ntouch {marker}\n")
            (hooks / name).chmod(0o755)
        with open(root / ".git" / "config", "a") as f:
            f.write(f"[core]\n\tfsmonitor = {hooks / 'fsmonitor-watchman'}\n")
    done = lanerefresh.refresh(repo, base, lane2, lane1, lane="lane-2")
    assert not marker.exists()
    assert done.conflicts == ("c.py",)
    assert not any(".git/" in p for p in _files(lane2))


def test_a_refresh_cut_half_way_is_finished_by_the_next(
    trees: tuple[Path, Path, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lane1, lane2, repo, base = trees
    calls = {"n": 0}
    real = lanerefresh._place

    def dies_on_second(*args: object, **kw: object) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt  # where a SIGKILL lands: one file written, others not
        real(*args, **kw)  # type: ignore[arg-type]

    with monkeypatch.context() as m, pytest.raises(KeyboardInterrupt):
        m.setattr(lanerefresh, "_place", dies_on_second)
        lanerefresh.refresh(repo, base, lane2, lane1, lane="lane-2")
    assert lanerefresh.resume(repo, lane2, lane="lane-2") > 0
    assert _files(lane2)["a.py"] == "a from lane 1\n"
    assert _files(lane2)["b.py"] == "b1 lane 2\nb2\nb3 lane 1\n"
    assert not (lane2 / "gone.py").exists()
    assert lanerefresh.resume(repo, lane2, lane="lane-2") == 0
    assert os.listdir(repo).count("refresh-lane-2.json") == 0


def test_the_program_prints_one_json_line_and_is_idempotent(
    trees: tuple[Path, Path, Path, str], tmp_path: Path
) -> None:
    lane1, lane2, repo, base = trees
    argv = [sys.executable, "-I", "-m", "flamechase.tools.lanerefresh", "refresh"]
    argv += ["--repo", str(repo), "--base", base, "--lane", "lane-2"]
    argv += ["--copy", str(lane2), "--onto", str(lane1)]
    first = subprocess.run(argv, cwd=lane2, capture_output=True, text=True, check=True)
    got = json.loads(first.stdout)
    assert got["conflicts"] == ["c.py"] and got["written"] > 0
    after = _files(lane2)
    again = json.loads(subprocess.run(argv, cwd=lane2, capture_output=True, text=True).stdout)
    assert again["conflicts"] == ["c.py"] and _files(lane2) == after  # asked again: the same
    bad = subprocess.run(
        [*argv[:7], "--base", "0" * 40, *argv[9:]], capture_output=True, text=True, check=False
    )
    assert bad.returncode == 1 and "error" in json.loads(bad.stdout)


# This checkout's program (`-I` would import the installed flamechase, not the one under test).
_THIS_PROGRAM = [sys.executable, "-m", "flamechase.tools.lanerefresh"]

# The program as a flow runs it, but killed (SIGKILL, no clean-up) at one point of the
# refresh: before its journal is written, or after the k-th path of the copy is rewritten.
_DYING = """
import os, signal, sys
from flamechase.errors import SnapshotFailed
from flamechase.tools import lanerefresh
point, count = os.environ["KILL_AT"], [0]
real_place, real_write = lanerefresh._place, lanerefresh.atomic_write
def place(*a, **kw):
    count[0] += 1
    if point == str(count[0]):
        os.kill(os.getpid(), signal.SIGKILL)
    real_place(*a, **kw)
def write(path, *a, **kw):
    if point == "journal" and path.name.startswith("refresh-"):
        os.kill(os.getpid(), signal.SIGKILL)
    real_write(path, *a, **kw)
lanerefresh._place, lanerefresh.atomic_write = place, write
sys.exit(lanerefresh.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("point", ["journal", "1", "2", "4"])
def test_a_refresh_killed_mid_way_then_asked_again_leaves_the_copy_as_an_uncut_one(
    trees: tuple[Path, Path, Path, str], tmp_path: Path, point: str
) -> None:
    lane1, lane2, repo, base = trees
    # What an uncut refresh gives, on a copy of the same copy and repository.
    ref_copy, ref_repo = tmp_path / "ref-lane2", tmp_path / "ref.git"
    shutil.copytree(lane2, ref_copy)
    shutil.copytree(repo, ref_repo)
    want = lanerefresh.refresh(ref_repo, base, ref_copy, lane1, lane="lane-2")
    args = ["refresh", "--repo", str(repo), "--base", base, "--lane", "lane-2"]
    args += ["--copy", str(lane2), "--onto", str(lane1)]
    env = {**os.environ, "KILL_AT": point}
    cut = subprocess.run([sys.executable, "-c", _DYING, *args], env=env, capture_output=True)
    assert cut.returncode == -9, cut.stderr  # it died where asked, half-way
    assert (repo / "refresh-lane-2.json").exists() is (point != "journal")
    # The engine, resumed, runs the same program again (the same key, the same argv).
    again = subprocess.run(
        [*_THIS_PROGRAM, *args],
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(again.stdout)
    assert _files(lane2) == _files(ref_copy)  # no half-applied merge
    assert got["conflicts"] == list(want.conflicts) == ["c.py"]
    assert got["base"] == want.base
    assert not (repo / "refresh-lane-2.json").exists()


def test_a_second_refresh_of_the_lane_waits_for_the_one_under_way(
    trees: tuple[Path, Path, Path, str],
) -> None:
    """An engine SIGKILLed mid-refresh leaves the program running; the resumed engine's own
    ask must not write the copy beside it."""
    import fcntl

    lane1, lane2, repo, base = trees
    before = _files(lane2)
    args = ["refresh", "--repo", str(repo), "--base", base, "--lane", "lane-2"]
    args += ["--copy", str(lane2), "--onto", str(lane1)]
    with open(repo / "refresh-lane-2.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the one under way
        proc = subprocess.Popen(
            [*_THIS_PROGRAM, *args],
            stdout=subprocess.PIPE,
            text=True,
        )
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)
        assert _files(lane2) == before
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and json.loads(out)["conflicts"] == ["c.py"]


def test_a_directory_the_lane_made_a_link_out_of_its_copy_is_kept_and_nothing_written_through(
    trees: tuple[Path, Path, Path, str], tmp_path: Path
) -> None:
    lane1, lane2, repo, base = trees
    outside = tmp_path / "outside"
    _write(outside, {"b.py": "the user's own file\n"})
    _write(lane1, {"pkg/mod.py": "lane 1's module\n"})
    # The lane swaps a file and a directory of lane 1's for links leaving its copy.
    (lane2 / "b.py").unlink()
    (lane2 / "b.py").symlink_to(outside / "b.py")
    (lane2 / "pkg").symlink_to(outside)
    done = lanerefresh.refresh(repo, base, lane2, lane1, lane="lane-2")
    assert _files(outside) == {"b.py": "the user's own file\n"}  # nothing written through
    assert os.readlink(lane2 / "b.py") == str(outside / "b.py")  # the lane's links kept ...
    assert os.readlink(lane2 / "pkg") == str(outside)
    assert {"b.py", "pkg"} <= set(done.conflicts)  # ... and named, by their own names
    assert not any("~" in c for c in done.conflicts)
    assert (lane2 / "a.py").read_text() == "a from lane 1\n"  # the rest is refreshed


def test_a_nested_repository_in_the_copy_neither_runs_nor_stops_the_refresh(
    trees: tuple[Path, Path, Path, str], tmp_path: Path
) -> None:
    lane1, lane2, repo, base = trees
    marker = tmp_path / "ran"
    _write(lane1, {"sub/x.py": "lane 1's x\n"})
    _write(lane2, {"sub/x.py": "the lane's x\n"})
    # A repository without a commit, armed: hooks, an fsmonitor, alternates, a hooksPath.
    subprocess.run(["git", "init", "-q", str(lane2 / "sub")], check=True)
    gitdir = lane2 / "sub" / ".git"
    for name in ("pre-commit", "post-checkout", "fsmonitor-watchman", "reference-transaction"):
        (gitdir / "hooks" / name).write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        (gitdir / "hooks" / name).chmod(0o755)
    (gitdir / "objects" / "info" / "alternates").write_text(f"{tmp_path}/elsewhere/objects\n")
    with open(gitdir / "config", "a") as f:
        f.write(f"[core]\n\tfsmonitor = {gitdir / 'hooks' / 'fsmonitor-watchman'}\n")
        f.write(f"\thooksPath = {gitdir / 'hooks'}\n")
    done = lanerefresh.refresh(repo, base, lane2, lane1, lane="lane-2")
    assert not marker.exists()
    assert (lane2 / "sub" / "x.py").read_text() == "the lane's x\n"  # kept, named
    assert "sub/x.py" in done.conflicts
    assert (lane2 / "a.py").read_text() == "a from lane 1\n"


def test_bytes_are_carried_as_they_are_whatever_a_gitattributes_asks(
    trees: tuple[Path, Path, Path, str],
) -> None:
    lane1, lane2, repo, _ = trees
    for root in (lane1, lane2):
        (root / ".gitattributes").write_text("* text=auto eol=lf ident filter=evil\n")
        (root / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    base = lanerefresh.record(repo, lane1)
    (lane1 / "crlf.txt").write_bytes(b"one\r\ntwo\r\n$Id$\r\nthree\r\n")
    lanerefresh.refresh(repo, base, lane2, lane1, lane="lane-2")
    assert (lane2 / "crlf.txt").read_bytes() == b"one\r\ntwo\r\n$Id$\r\nthree\r\n"


def test_a_refresh_onto_a_recorded_commit_reads_no_tree_of_lane_1s(
    trees: tuple[Path, Path, Path, str],
) -> None:
    lane1, lane2, repo, base = trees
    recorded = lanerefresh.record(repo, lane1)
    (lane1 / "a.py").write_text("half-written by lane 1's next turn\n")
    done = lanerefresh.refresh(repo, base, lane2, recorded, lane="lane-2")
    assert done.base == recorded
    assert (lane2 / "a.py").read_text() == "a from lane 1\n"  # the recorded tree, not now's
    assert done.conflicts == ("c.py",)
    for bad in ("HEAD", "main", "0" * 40, f"{recorded}^"):
        with pytest.raises((ValueError, SnapshotFailed)):
            lanerefresh.refresh(repo, done.base, lane2, bad, lane="lane-2")


def test_an_index_lock_a_killed_git_left_stops_no_later_refresh(
    trees: tuple[Path, Path, Path, str],
) -> None:
    lane1, lane2, repo, base = trees
    lanerefresh.record(repo, lane2)  # both trees have their index now
    for index in (repo / "indexes").iterdir():
        if index.suffix not in (".held", ".lock"):
            Path(f"{index}.lock").write_text("")  # git add SIGKILLed while writing it
    done = lanerefresh.refresh(repo, base, lane2, lane1, lane="lane-2")
    assert done.conflicts == ("c.py",)
    assert _files(lane2)["a.py"] == "a from lane 1\n"


def test_lanes_recording_into_a_new_repository_at_once_all_succeed(tmp_path: Path) -> None:
    # Each lane's refresh is its own program: the first ones of a run meet on a repository
    # not made yet (two `git init`s of one repository fail on its template files).
    tree, repo = tmp_path / "tree", tmp_path / "run" / "lanerefresh.git"
    _write(tree, {"a.py": "a\n"})
    code = "import sys; from pathlib import Path; from flamechase.tools import lanerefresh as r;"
    code += "print(r.record(Path(sys.argv[1]), Path(sys.argv[2])))"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(repo), str(tree)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    outs = [p.communicate() for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, [err for _, err in outs]
    assert len({out.strip() for out, _ in outs}) == 1  # the same tree, the same commit


def test_a_tree_is_added_to_the_repository_by_one_git_at_a_time(tmp_path: Path) -> None:
    # Lanes record at once trees that mostly hold the same files; two gits adding a file at
    # once each write its object, so the repository's adds wait for one another.
    tree, repo = tmp_path / "tree", tmp_path / "lanerefresh.git"
    _write(tree, {"a.py": "a\n"})
    lanerefresh.record(repo, tree)  # the repository exists
    hold = "import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX);"
    hold += "print('held', flush=True); sys.stdin.read()"
    holder = subprocess.Popen(
        [sys.executable, "-c", hold, str(repo / "objects.held")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    code = "import sys; from pathlib import Path; from flamechase.tools import lanerefresh as r;"
    code += "print(r.record(Path(sys.argv[1]), Path(sys.argv[2])))"
    recorder = subprocess.Popen(
        [sys.executable, "-c", code, str(repo), str(tree)], stdout=subprocess.PIPE, text=True
    )
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            recorder.wait(timeout=1.0)  # waits for the add under way
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait()
    out, _ = recorder.communicate(timeout=60)
    assert recorder.returncode == 0 and len(out.strip()) == 40
