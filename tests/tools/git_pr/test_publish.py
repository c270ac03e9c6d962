"""Publication into the source: only the changed paths, each checked first; one ordinary
commit on the user's branch with the runtime's identity; the user's config, hooks and other
work untouched. Real git, real files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.tools.conftest import User, python_in, tool
from tests.tools.git_pr.test_central import init
from tests.tools.git_pr.test_clones import central_commit


def world(
    user: User, tmp_path: Path, files: dict[str, str], change: dict[str, str]
) -> tuple[Path, Path, str, str]:
    src, central, seeded = init(user, tmp_path, files)
    base = str(seeded["main"])
    new = central_commit(user, tmp_path, central, "main", base, change)
    return src, central, base, new


def publish(src: Path, central: Path, old: str, new: str) -> dict[str, object]:
    return tool(
        "publish",
        "--central",
        str(central),
        "--from",
        old,
        "--to",
        new,
        "--message",
        "flamechase: merge PR000001 into the source\n\nFlamechase-Main: x\n",
        cwd=src,
    )


def test_only_the_changed_paths_are_written_and_committed_on_the_users_branch(
    user: User, tmp_path: Path
) -> None:
    src, central, base, new = world(
        user,
        tmp_path,
        {"a.txt": "a\n", "keep.txt": "k\n"},
        {"a.txt": "A\n", "added/new.txt": "n\n"},
    )
    user.git(src, "checkout", "-q", "-b", "feature")
    (src / "untracked.txt").write_text("the user's\n")
    (src / "keep.txt").write_text("k, edited by the user\n")  # a path main did not change
    digest = user.config_digest()
    head = user.git(src, "rev-parse", "HEAD")
    user.marks.unlink(missing_ok=True)  # (the user's own git above ran their hooks)
    got = publish(src, central, base, new)
    assert got["changed"] == 2 and got["paths"] == ["a.txt", "added/new.txt"]
    assert (src / "a.txt").read_text() == "A\n" and (src / "added" / "new.txt").read_text() == "n\n"
    assert user.git(src, "rev-parse", "--abbrev-ref", "HEAD") == "feature"
    assert user.git(src, "rev-parse", "HEAD~1") == head
    assert user.git(src, "log", "-1", "--format=%an <%ae>|%s") == (
        "flamechase <runtime@flamechase.invalid>|flamechase: merge PR000001 into the source"
    )
    assert user.git(src, "show", "--stat", "--format=", "HEAD").count("|") == 2
    # The user's own work is where it was: nothing else staged, committed or lost.
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=src, capture_output=True, text=True, check=True
    ).stdout
    assert status == " M keep.txt\n?? untracked.txt\n"
    assert user.hooks_ran() == [] and user.config_digest() == digest


def test_a_path_edited_outside_the_run_stops_publication_naming_it(
    user: User, tmp_path: Path
) -> None:
    src, central, base, new = world(
        user, tmp_path, {"a.txt": "a\n", "b.txt": "b\n"}, {"a.txt": "A\n", "b.txt": "B\n"}
    )
    (src / "b.txt").write_text("someone else's edit\n")
    head = user.git(src, "rev-parse", "HEAD")
    got = publish(src, central, base, new)
    assert got == {
        "refused": "b.txt was changed in the source outside the run; publication "
        "stops until it holds what the run started from again"
    }
    assert (src / "a.txt").read_text() == "a\n"  # nothing was written
    assert user.git(src, "rev-parse", "HEAD") == head


def test_uncommitted_changes_to_the_same_paths_refuse_in_one_line(
    user: User, tmp_path: Path
) -> None:
    src, central, base, new = world(user, tmp_path, {"a.txt": "a\n"}, {"a.txt": "A\n"})
    # The file holds the baseline, but the user has a change staged for it.
    (src / "a.txt").write_text("staged\n")
    user.git(src, "add", "a.txt")
    (src / "a.txt").write_text("a\n")
    got = publish(src, central, base, new)
    assert got == {
        "refused": "a.txt has uncommitted changes in the source; commit or stash "
        "them and the run publishes again"
    }


def test_publishing_again_after_a_crash_finishes_the_same_publication(
    user: User, tmp_path: Path
) -> None:
    src, central, base, new = world(user, tmp_path, {"a.txt": "a\n"}, {"a.txt": "A\n"})
    head = user.git(src, "rev-parse", "HEAD")
    (src / "a.txt").write_text("A\n")  # written, then the crash: no commit yet
    first = publish(src, central, base, new)
    assert first["commit"] and user.git(src, "rev-parse", "HEAD~1") == head
    again = publish(src, central, base, new)
    assert again["commit"] is None and user.git(src, "rev-parse", "HEAD") == first["commit"]
    assert user.git(src, "status", "--porcelain") == ""


def test_deletions_modes_and_links_follow_the_merge(user: User, tmp_path: Path) -> None:
    src, central, seeded = init(user, tmp_path, {"gone/old.txt": "o\n", "run.sh": "x\n"})
    base = str(seeded["main"])
    work = tmp_path / "work-main"
    user.git(tmp_path, "clone", "-q", str(central), str(work))
    user.git(work, "rm", "-q", "gone/old.txt")
    (work / "run.sh").chmod(0o755)
    (work / "link").symlink_to("run.sh")
    user.git(work, "add", "-A")
    user.git(
        work,
        "-c",
        "user.name=l",
        "-c",
        "user.email=l@l",
        "-c",
        "commit.gpgsign=false",
        "-c",
        "core.hooksPath=/dev/null",
        "commit",
        "-qm",
        "modes",
    )
    new = user.git(work, "rev-parse", "HEAD")
    subprocess.run(
        ["git", "--git-dir", str(central), "fetch", "-q", str(work), f"+{new}:refs/heads/main"],
        check=True,
    )
    publish(src, central, base, new)
    assert not (src / "gone").exists()
    assert (src / "run.sh").stat().st_mode & 0o111
    assert (src / "link").is_symlink() and str((src / "link").readlink()) == "run.sh"
    assert user.git(src, "status", "--porcelain") == ""


def test_publication_never_writes_through_a_linked_directory(user: User, tmp_path: Path) -> None:
    src, central, base, new = world(user, tmp_path, {"a.txt": "a\n"}, {"pkg/mod.py": "m\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (src / "pkg").symlink_to(outside)
    got = publish(src, central, base, new)
    assert "pkg/mod.py: pkg in the source is not a plain directory" in str(got["refused"])
    assert not (outside / "mod.py").exists()


def test_a_source_that_is_not_a_git_tree_gets_the_files_and_no_commit(
    user: User, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("a\n")
    _, central, seeded = init(user, tmp_path, source=plain)
    new = central_commit(user, tmp_path, central, "main", str(seeded["main"]), {"a.txt": "A\n"})
    got = publish(plain, central, str(seeded["main"]), new)
    assert got["commit"] is None and (plain / "a.txt").read_text() == "A\n"
    assert not (plain / ".git").exists()


def test_an_unborn_branch_gets_its_first_commit_of_only_the_published_paths(
    user: User, tmp_path: Path
) -> None:
    src = tmp_path / "fresh"
    src.mkdir()
    user.git(src, "init", "-q")
    (src / "a.txt").write_text("a\n")
    _, central, seeded = init(user, tmp_path, source=src)
    new = central_commit(user, tmp_path, central, "main", str(seeded["main"]), {"b.txt": "b\n"})
    got = publish(src, central, str(seeded["main"]), new)
    assert got["commit"] and user.git(src, "log", "--format=%s") == (
        "flamechase: merge PR000001 into the source"
    )
    assert user.git(src, "ls-files") == "b.txt"  # a.txt: still the user's, untracked
    # An untracked file the merge changes is the user's uncommitted work: refused.
    newer = central_commit(user, tmp_path, central, "main", new, {"a.txt": "A\n"})
    refused = publish(src, central, new, newer)
    assert refused["refused"] == (
        "a.txt has uncommitted changes in the source; commit or "
        "stash them and the run publishes again"
    )


def test_a_replace_ref_in_the_central_repository_changes_nothing_published(
    user: User, tmp_path: Path
) -> None:
    """`refs/replace/*` rewrites an object for every reader that honours it; the runtime's git
    reads objects as they are."""
    src, central, base, new = world(user, tmp_path, {"a.txt": "a\n"}, {"a.txt": "A\n"})
    g = ["git", "--git-dir", str(central)]

    def out(*args: str, data: bytes | None = None) -> str:
        return (
            subprocess.run([*g, *args], input=data, capture_output=True, check=True)
            .stdout.decode()
            .strip()
        )

    forged = out("hash-object", "-w", "--stdin", data=b"forged\n")
    out("update-ref", f"refs/replace/{out('rev-parse', f'{new}:a.txt')}", forged)
    assert out("cat-file", "blob", f"{new}:a.txt") == "forged"  # what a plain reader sees
    got = publish(src, central, base, new)
    assert got["paths"] == ["a.txt"]
    assert (src / "a.txt").read_text() == "A\n"


def test_a_merge_that_writes_into_the_runtimes_own_python_is_refused(
    user: User, tmp_path: Path
) -> None:
    src, central, seeded = init(user, tmp_path, {"a.txt": "a\n"})
    python, site = python_in(src)  # flamechase runs from a virtual environment in your tree
    evil = f"{site}/evil.pth"
    new = central_commit(user, tmp_path, central, "main", str(seeded["main"]), {evil: "import x\n"})
    proc = subprocess.run(
        [
            str(python),
            "-I",
            "-m",
            "flamechase.tools.git_pr.publish",
            "--central",
            str(central),
            "--from",
            str(seeded["main"]),
            "--to",
            new,
            "--message",
            "m",
        ],
        cwd=src,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    refused = json.loads(proc.stdout.splitlines()[-1])["refused"]
    assert refused.startswith(f"{evil} lies in the Python installation flamechase runs from")
    assert not (src / evil).exists()
