"""A clean checkout judged against the evaluator's frozen files: any change to one of them
(its bytes, its mode, deleting it, hiding it under a linked directory) makes the commit
tampered; an untouched commit is checked out with the frozen files put back as frozen. Real
git."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.tools.conftest import User, tool
from tests.tools.git_pr.test_central import init

BENCH = "print('SCORE:', 60)\n"
DATA = "30\n"
FROZEN = {
    "bench.py": hashlib.sha256(BENCH.encode()).hexdigest(),
    "lib/data.txt": hashlib.sha256(DATA.encode()).hexdigest(),
}


def commit(
    user: User, tmp_path: Path, central: Path, base: str, edit: Callable[[Path], Any]
) -> str:
    """A commit on `base` after `edit(work_tree)`, put into the central repository."""
    work = tmp_path / "work"
    if not work.exists():
        user.git(tmp_path, "clone", "-q", str(central), str(work))
    user.git(work, "checkout", "-q", "-f", "--detach", base)
    edit(work)
    user.git(work, "add", "-A")
    user.git(
        work,
        *("-c", "user.name=l", "-c", "user.email=l@l", "-c", "commit.gpgsign=false"),
        *("-c", "core.hooksPath=/dev/null", "commit", "-qm", "a lane's"),
    )
    sha = user.git(work, "rev-parse", "HEAD")
    user.git(work, "push", "-q", "--no-verify", str(central), f"{sha}:refs/flamechase/t/{sha}")
    return sha


def checkout(
    tmp_path: Path,
    central: Path,
    sha: str,
    main: str,
    frozen: dict[str, str],
    named: tuple[str, ...] = (),
    watched: tuple[str, ...] = (),
) -> dict[str, Any]:
    place = tmp_path / "co"
    place.mkdir(exist_ok=True)
    args = [f"{p}={s}" for p, s in frozen.items()]
    return tool(
        "gitpr",
        "checkout",
        *("--central", str(central), "--commit", sha, "--main", main, "--baseline", main),
        *(a for arg in args for a in ("--frozen", arg)),
        *(a for path in named for a in ("--named", path)),
        *(a for glob in watched for a in ("--watch", glob)),
        cwd=place,
    )


def _symlinked_lib(work: Path) -> None:
    (work / "real").mkdir()
    (work / "real" / "data.txt").write_text(DATA)
    (work / "lib" / "data.txt").unlink()
    (work / "lib").rmdir()
    os.symlink("real", work / "lib")


EDITS: dict[str, tuple[Callable[[Path], Any], list[str]]] = {
    "rewritten": (lambda w: (w / "bench.py").write_text("print('SCORE:', 1)\n"), ["bench.py"]),
    "deleted": (lambda w: (w / "lib" / "data.txt").unlink(), ["lib/data.txt"]),
    "made executable": (lambda w: (w / "bench.py").chmod(0o755), ["bench.py"]),
    "under a linked directory": (_symlinked_lib, ["lib/data.txt"]),
}


@pytest.fixture
def seeded(user: User, tmp_path: Path) -> tuple[Path, str]:
    # The hook refuses pushes without the runtime's policy: these tests put commits in directly.
    _, central, seeded = init(
        user, tmp_path, {"bench.py": BENCH, "lib/data.txt": DATA, "solver.py": "x = 1\n"}
    )
    (central / "hooks" / "pre-receive").unlink()
    return central, str(seeded["main"])


@pytest.mark.parametrize("case", sorted(EDITS))
def test_a_commit_that_changes_a_frozen_file_in_any_way_is_tampered(
    user: User, tmp_path: Path, seeded: tuple[Path, str], case: str
) -> None:
    central, main = seeded
    edit, files = EDITS[case]
    sha = commit(user, tmp_path, central, main, edit)
    got = checkout(tmp_path, central, sha, main, FROZEN)
    assert got["tampered"] == files


def test_an_untouched_commit_is_checked_out_with_the_frozen_files_as_frozen(
    user: User, tmp_path: Path, seeded: tuple[Path, str]
) -> None:
    central, main = seeded
    sha = commit(user, tmp_path, central, main, lambda w: (w / "solver.py").write_text("x = 2\n"))
    got = checkout(tmp_path, central, sha, main, FROZEN)
    place = tmp_path / "co"
    assert got["tampered"] == [] and got["changed"] == 1
    for rel, digest in FROZEN.items():
        assert hashlib.sha256((place / rel).read_bytes()).hexdigest() == digest
        assert not (place / rel).is_symlink()
    assert user.git(place, "status", "--porcelain") == ""
    # Nothing frozen: no judgement at all.
    assert checkout(tmp_path, central, sha, main, {})["tampered"] == []


def test_a_frozen_hash_the_baseline_does_not_hold_is_an_error_not_a_measurement(
    user: User, tmp_path: Path, seeded: tuple[Path, str]
) -> None:
    central, main = seeded
    sha = commit(user, tmp_path, central, main, lambda w: (w / "solver.py").write_text("x = 3\n"))
    got = checkout(tmp_path, central, sha, main, {"bench.py": "0" * 64})
    assert "the baseline's bench.py does not match its frozen hash" in got["error"]


@pytest.mark.parametrize(
    ("named", "watched", "path", "flagged"),
    [
        (("plant.py",), (), "plant.py", "plant.py"),  # named by the command, not in the baseline
        ((), ("**/conftest.py",), "tests/conftest.py", "**/conftest.py"),  # evaluator_files
        ((), ("lib/**",), "lib/more.txt", "lib/**"),  # a file added under a frozen directory
    ],
)
def test_a_commit_that_adds_what_the_evaluator_uses_is_tampered(
    user: User,
    tmp_path: Path,
    seeded: tuple[Path, str],
    named: tuple[str, ...],
    watched: tuple[str, ...],
    path: str,
    flagged: str,
) -> None:
    central, main = seeded

    def add(w: Path) -> None:
        (w / path).parent.mkdir(parents=True, exist_ok=True)
        (w / path).write_text("print('SCORE:', 1)\n")

    sha = commit(user, tmp_path, central, main, add)
    names = ("python3", "bench.py", *named)
    got = checkout(tmp_path, central, sha, main, FROZEN, names, watched)
    assert got["tampered"] == [flagged]
    # What the command names and the commit leaves as the baseline has it is no change.
    same = commit(user, tmp_path, central, main, lambda w: (w / "solver.py").write_text("x\n"))
    assert checkout(tmp_path, central, same, main, FROZEN, names, watched)["tampered"] == []


def test_a_directory_the_command_names_is_not_frozen_by_that_alone(
    user: User, tmp_path: Path, seeded: tuple[Path, str]
) -> None:
    # `cd lib && python3 ../bench.py`: lib is where it runs, not what measures.
    central, main = seeded
    sha = commit(user, tmp_path, central, main, lambda w: (w / "lib" / "new.txt").write_text("1\n"))
    assert checkout(tmp_path, central, sha, main, FROZEN, ("lib",))["tampered"] == []
