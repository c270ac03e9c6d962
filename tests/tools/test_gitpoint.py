"""gitpoint: the checkpoint before the first wave (commit + tag, never pushed), and an approved
front's files landing in the source as one commit. Real git."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def tool(cwd: Path, *args: str) -> tuple[int, dict[str, object]]:
    proc = subprocess.run(
        [sys.executable, "-m", "flamechase.tools.gitpoint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, json.loads(
        proc.stdout.strip().splitlines()[-1].removeprefix("GITPOINT ")
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    src = tmp_path / "src"
    src.mkdir()
    git(src, "init", "-q")
    git(src, "remote", "add", "origin", str(remote))
    (src / "a.py").write_text("A = 1\n")
    git(src, "add", "-A")
    git(src, "-c", "user.email=u@example.invalid", "-c", "user.name=u", "commit", "-qm", "one")
    return src


def test_checkpoint_commits_everything_and_tags_it_without_pushing(repo: Path) -> None:
    (repo / "a.py").write_text("A = 2\n")
    (repo / "new.txt").write_text("untracked work\n")
    code, out = tool(
        repo, "checkpoint", "--tag", "pre-parrallello-2026-12-01", "--message", "checkpoint"
    )
    assert code == 0 and out["committed"] is True and out["tag"] == "pre-parrallello-2026-12-01"
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "rev-parse", "pre-parrallello-2026-12-01^{commit}") == out["commit"]
    remote = repo.parent / "remote.git"
    assert git(remote, "for-each-ref") == ""  # nothing pushed, ever
    code, again = tool(
        repo, "checkpoint", "--tag", "pre-parrallello-2026-12-01", "--message", "checkpoint"
    )
    assert code == 0 and again["committed"] is False
    assert again["tag"] == "pre-parrallello-2026-12-01-2" and again["commit"] == out["commit"]


def test_no_repository_is_skipped_unless_required(tmp_path: Path) -> None:
    code, out = tool(tmp_path, "checkpoint", "--tag", "t", "--message", "m")
    assert code == 0 and "not a git repository" in str(out["skipped"])
    code, out = tool(tmp_path, "checkpoint", "--tag", "t", "--message", "m", "--require")
    assert code == 3


def test_integrate_lands_only_owned_files_in_one_commit(repo: Path, tmp_path: Path) -> None:
    copy = tmp_path / "front"
    subprocess.run(["cp", "-a", str(repo), str(copy)], check=True)
    (copy / "a.py").write_text("A = 3\n")
    (copy / "lib").mkdir()
    (copy / "lib" / "b.py").write_text("B = 1\n")
    (copy / "other.txt").write_text("not this front's\n")
    (repo / "user.txt").write_text("the user's own uncommitted work\n")
    code, out = tool(
        repo,
        "integrate",
        "--from",
        str(copy),
        "--allow",
        "a.py",
        "lib/**",
        "--message",
        "front P1 approved",
    )
    assert code == 0 and out["files"] == 2
    assert out["outside"] == 2  # other.txt added, user.txt "missing": neither is taken
    assert (repo / "a.py").read_text() == "A = 3\n" and not (repo / "other.txt").exists()
    assert git(repo, "log", "-1", "--format=%s") == "front P1 approved"
    assert set(git(repo, "show", "--name-only", "--format=", "HEAD").split()) == {
        "a.py",
        "lib/b.py",
    }
    assert "user.txt" in git(repo, "status", "--porcelain")  # left alone, uncommitted


def test_an_integration_into_the_runtimes_own_python_is_refused(repo: Path, tmp_path: Path) -> None:
    from tests.tools.conftest import python_in

    python, site = python_in(repo)  # flamechase runs from a virtual environment in your tree
    copy = tmp_path / "front"
    shutil.copytree(repo, copy, symlinks=True)
    (copy / site / "evil.pth").write_text("import x\n")  # a front's only change
    proc = subprocess.run(
        [
            str(python),
            "-I",
            "-m",
            "flamechase.tools.gitpoint",
            "integrate",
            "--from",
            str(copy),
            "--allow",
            "**",
            "--message",
            "m",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1].removeprefix("GITPOINT "))
    assert proc.returncode == 3 and "lies in the Python installation" in str(out["error"]), out
    assert not (repo / site / "evil.pth").exists()


def test_control_writes_its_files_and_commits_them_alone(repo: Path) -> None:
    (repo / "work.txt").write_text("the user's uncommitted work\n")
    files = {"plan.json": "{}\n", "P/contract.json": '{"targets": {}}\n'}
    code, out = tool(
        repo, "control", "--dir", "ctl", "--data", json.dumps(files), "--message", "ctl 1"
    )
    assert code == 0 and out["files"] == 2 and out["commit"]
    assert (repo / "ctl" / "P" / "contract.json").read_text() == '{"targets": {}}\n'
    assert git(repo, "show", "--name-only", "--format=%s", "HEAD").split("\n") == [
        "ctl 1",
        "",
        "ctl/P/contract.json",
        "ctl/plan.json",
    ]
    assert git(repo, "status", "--porcelain") == "?? work.txt"
    # The same files again: nothing new to commit.
    code, again = tool(
        repo, "control", "--dir", "ctl", "--data", json.dumps(files), "--message", "ctl 2"
    )
    assert code == 0 and again["commit"] is None


def test_control_never_writes_outside_its_directory(repo: Path, tmp_path: Path) -> None:
    code, out = tool(repo, "control", "--dir", "ctl", "--data", '{"../x": "no"}', "--message", "m")
    assert code == 3 and "not inside ctl" in str(out["error"])
    assert not (repo / "x").exists()


def test_control_outside_git_only_writes_the_files(tmp_path: Path) -> None:
    code, out = tool(tmp_path, "control", "--dir", "c", "--data", '{"a": "1"}', "--message", "m")
    assert code == 0 and out["commit"] is None and (tmp_path / "c" / "a").read_text() == "1"
