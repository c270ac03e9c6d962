"""The central repository: seeded with exactly the source's baseline, written only through its
hook, by the runtime, as a lane or as itself. Real git, real files."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from flamechase.tools.git_pr import hook
from tests.tools.conftest import User, source_repo, tool

ZERO = "0" * 40


def init(
    user: User, tmp_path: Path, files: dict[str, str] | None = None, source: Path | None = None
) -> tuple[Path, Path, dict[str, object]]:
    src = source or source_repo(user, tmp_path / "src", files or {"a.txt": "a\n"})
    central = tmp_path / "central"
    central.mkdir()
    return (
        src,
        central,
        tool("gitpr", "init-central", "--source", str(src), "--run", "R1", cwd=central),
    )


def ls(central: Path, rev: str = "main") -> dict[str, str]:
    out = subprocess.run(
        ["git", "--git-dir", str(central), "ls-tree", "-r", rev],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {line.split("\t")[1]: line.split()[0] for line in out.splitlines()}


def blob(central: Path, rev: str, path: str) -> bytes:
    return subprocess.run(
        ["git", "--git-dir", str(central), "cat-file", "blob", f"{rev}:{path}"],
        capture_output=True,
        check=True,
    ).stdout


def test_the_baseline_is_what_git_add_would_take_byte_for_byte(user: User, tmp_path: Path) -> None:
    src = source_repo(
        user,
        tmp_path / "src",
        {
            "a.txt": "a\n",
            ".gitignore": "*.log\nbuild/\n",
            "crlf.txt": "x",
            ".gitattributes": "* text=auto eol=crlf\n",
        },
    )
    (src / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    (src / "run.sh").write_text("#!/bin/sh\n")
    (src / "run.sh").chmod(0o755)
    (src / "link").symlink_to("a.txt")
    (src / "new.txt").write_text("untracked, not ignored\n")
    (src / "debug.log").write_text("ignored\n")
    (src / "build").mkdir()
    (src / "build" / "out.bin").write_text("ignored\n")
    before = user.git(src, "status", "--porcelain")
    index = (src / ".git" / "index").read_bytes()
    _, central, result = init(user, tmp_path, source=src)
    tree = ls(central)
    assert set(tree) == {
        "a.txt",
        ".gitignore",
        "crlf.txt",
        ".gitattributes",
        "run.sh",
        "link",
        "new.txt",
    }
    assert (tree["run.sh"], tree["link"], tree["a.txt"]) == ("100755", "120000", "100644")
    assert blob(central, "main", "crlf.txt") == b"one\r\ntwo\r\n"  # no conversion
    assert blob(central, "main", "link") == b"a.txt"
    assert result["files"] == 7
    # The source and its .git are only read.
    assert user.git(src, "status", "--porcelain") == before
    assert (src / ".git" / "index").read_bytes() == index
    assert user.hooks_ran() == []


def test_a_source_that_is_not_a_git_tree_gives_every_file_but_git(
    user: User, tmp_path: Path
) -> None:
    src = tmp_path / "plain"
    (src / "d").mkdir(parents=True)
    (src / "d" / "x.py").write_text("x\n")
    (src / ".git").mkdir()
    (src / ".git" / "junk").write_text("not a repository\n")
    _, central, _ = init(user, tmp_path, source=src)
    assert set(ls(central)) == {"d/x.py"}


def test_seeding_again_after_a_crash_finds_the_same_main(user: User, tmp_path: Path) -> None:
    src, central, first = init(user, tmp_path)
    again = tool("gitpr", "init-central", "--source", str(src), "--run", "R1", cwd=central)
    assert again["main"] == first["main"]


def test_the_central_repository_has_the_runtimes_identity_and_its_hook(
    user: User, tmp_path: Path
) -> None:
    _, central, _ = init(user, tmp_path)
    log = subprocess.run(
        ["git", "--git-dir", str(central), "log", "-1", "--format=%an <%ae>|%cn|%B", "main"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert log.startswith("flamechase <runtime@flamechase.invalid>|flamechase|")
    assert "Flamechase-Run: R1" in log
    assert (central / "hooks" / "pre-receive").stat().st_mode & 0o111


# ---- the hook ------------------------------------------------------------------------------


def _lane_push(user: User, tmp_path: Path, central: Path) -> Path:
    lane = tmp_path / "lane"
    lane.mkdir()
    tool("gitpr", "clone", "--central", str(central), "--name", "lane-1", "--outbox", cwd=lane)
    return lane


def _commit(user: User, clone: Path, branch: str, name: str, text: str) -> str:
    user.git(clone, "checkout", "-q", "-B", branch)
    (clone / name).write_text(text)
    user.git(clone, "add", name)
    user.git(clone, "commit", "-qm", f"{name}: {text.strip()}")
    return user.git(clone, "rev-parse", "HEAD")


def _forward(
    tmp_path: Path,
    central: Path,
    lane: Path,
    pushed: dict[str, str],
    frozen: dict[str, dict[str, str]] | None = None,
    seen: dict[str, str] | None = None,
) -> dict[str, object]:
    """Export what the lane pushed since `seen`, forward it as lane-1 through the hook."""
    bundle = lane / ".git" / "flamechase" / "outgoing.bundle"
    exported = tool(
        "gitpr",
        "export",
        "--central",
        str(central),
        "--bundle",
        str(bundle),
        cwd=lane,
        env={"FLAMECHASE_GIT_SEEN": json.dumps(seen or {})},
    )
    assert exported["changed"] == pushed and exported["deleted"] == []
    args = ["forward", "--central", str(central), "--lane", "lane-1"]
    if exported["bundle"]:
        args += ["--bundle", str(bundle)]
    for ref, sha in pushed.items():
        args += ["--update", f"{ref}={sha}"]
    policy = json.dumps({"pusher": "lane-1", "frozen": frozen or {}})
    return tool("gitpr", *args, cwd=central, env={"FLAMECHASE_GIT_POLICY": policy})


def test_a_lane_push_reaches_the_central_repository_only_through_the_hook(
    user: User, tmp_path: Path
) -> None:
    _, central, seeded = init(user, tmp_path)
    lane = _lane_push(user, tmp_path, central)
    mine = _commit(user, lane, "lane-1/x", "b.txt", "b\n")
    user.git(lane, "push", "-q", "origin", "lane-1/x")
    other = _commit(user, lane, "main", "c.txt", "c\n")
    user.git(lane, "push", "-q", "origin", "main", "main:lane-2/y")
    # Until the runtime forwards them, the pushes are in the lane's outbox only.
    assert (
        subprocess.run(
            ["git", "--git-dir", str(central), "rev-parse", "-q", "--verify", "lane-1/x"],
            capture_output=True,
        ).returncode
        != 0
    )
    pushed = {"refs/heads/lane-1/x": mine, "refs/heads/main": other, "refs/heads/lane-2/y": other}
    result = _forward(tmp_path, central, lane, pushed)
    # Forwarding the same again (a crash came before the runtime recorded it) changes nothing.
    assert _forward(tmp_path, central, lane, pushed) == result
    assert result["results"] == {
        "refs/heads/lane-1/x": "ok",
        "refs/heads/main": "main accepts only the runtime's merges; push your branch and open a PR",
        "refs/heads/lane-2/y": "lane-1 may push only its own branches (refs/heads/lane-1/...), "
        "not refs/heads/lane-2/y",
    }
    assert result["refs"] == {
        "refs/heads/lane-1/x": mine,
        "refs/heads/main": seeded["main"],
        "refs/heads/lane-2/y": None,
    }
    assert result["main"] == seeded["main"]
    assert user.hooks_ran() == []  # the lane's commits and pushes ran none of the user's hooks


def test_a_frozen_head_cannot_be_moved_or_deleted(user: User, tmp_path: Path) -> None:
    _, central, _ = init(user, tmp_path)
    lane = _lane_push(user, tmp_path, central)
    head = _commit(user, lane, "lane-1/x", "b.txt", "b\n")
    user.git(lane, "push", "-q", "origin", "lane-1/x")
    _forward(tmp_path, central, lane, {"refs/heads/lane-1/x": head})
    moved = _commit(user, lane, "lane-1/x", "b.txt", "b2\n")
    user.git(lane, "push", "-q", "origin", "lane-1/x")
    frozen = {"refs/heads/lane-1/x": {"sha": head, "pr": "PR000001"}}
    result = _forward(
        tmp_path,
        central,
        lane,
        {"refs/heads/lane-1/x": moved},
        frozen,
        seen={"refs/heads/lane-1/x": head},
    )
    assert result["results"] == {
        "refs/heads/lane-1/x": (
            f"lane-1/x is frozen at {head[:12]} while PR000001 is ready; it cannot be moved "
            "(push a new branch)"
        )
    }
    assert result["refs"] == {"refs/heads/lane-1/x": head}
    policy = json.dumps({"pusher": "lane-1", "frozen": frozen})
    deleted = tool(
        "gitpr",
        "forward",
        "--central",
        str(central),
        "--lane",
        "lane-1",
        "--delete",
        "refs/heads/lane-1/x",
        cwd=central,
        env={"FLAMECHASE_GIT_POLICY": policy},
    )
    assert "it cannot be deleted" in str(deleted["results"])


def test_the_branch_of_a_pr_cannot_be_deleted_whatever_became_of_the_pr(
    user: User, tmp_path: Path
) -> None:
    _, central, _ = init(user, tmp_path)
    lane = _lane_push(user, tmp_path, central)
    heads = {
        name: _commit(user, lane, f"lane-1/{name}", f"{name}.txt", f"{name}\n")
        for name in ("pr", "plain")
    }
    user.git(lane, "push", "-q", "origin", "lane-1/pr", "lane-1/plain")
    _forward(tmp_path, central, lane, {f"refs/heads/lane-1/{n}": h for n, h in heads.items()})
    # The lane deletes both in its clone; the runtime forwards the deletions through the hook.
    user.git(lane, "push", "-q", "origin", ":lane-1/pr", ":lane-1/plain")
    policy = json.dumps(
        {"pusher": "lane-1", "frozen": {}, "kept": {"refs/heads/lane-1/pr": "PR000001"}}
    )
    result = tool(
        "gitpr",
        "forward",
        *("--central", str(central), "--lane", "lane-1"),
        *("--delete", "refs/heads/lane-1/pr", "--delete", "refs/heads/lane-1/plain"),
        cwd=central,
        env={"FLAMECHASE_GIT_POLICY": policy},
    )
    assert result["results"] == {
        "refs/heads/lane-1/pr": "lane-1/pr was pushed as PR000001; the branch of a PR is kept "
        "and cannot be deleted (leave it, and push new work to a new branch)",
        "refs/heads/lane-1/plain": "ok",  # a branch never pushed as a PR is the lane's to delete
    }
    assert result["refs"] == {"refs/heads/lane-1/pr": heads["pr"], "refs/heads/lane-1/plain": None}
    # Moving it is still the lane's business (only a ready PR's head is frozen).
    moved = _commit(user, lane, "lane-1/pr", "pr.txt", "again\n")
    proc = subprocess.run(
        ["git", "push", "--porcelain", str(central), f"+{moved}:refs/heads/lane-1/pr"],
        cwd=lane,
        capture_output=True,
        text=True,
        env={**os.environ, "FLAMECHASE_GIT_POLICY": policy},
    )
    assert proc.returncode == 0, proc.stderr
    # And a plain `git push --delete` straight into the central repository meets the same hook.
    proc = subprocess.run(
        ["git", "push", str(central), "--delete", "lane-1/pr"],
        cwd=lane,
        capture_output=True,
        text=True,
        env={**os.environ, "FLAMECHASE_GIT_POLICY": policy},
    )
    assert proc.returncode != 0
    assert "flamechase hook: lane-1/pr was pushed as PR000001" in proc.stderr


def test_nobody_pushes_into_the_central_repository_without_the_runtimes_policy(
    user: User, tmp_path: Path
) -> None:
    _, central, _ = init(user, tmp_path)
    lane = _lane_push(user, tmp_path, central)
    _commit(user, lane, "lane-1/x", "b.txt", "b\n")
    proc = subprocess.run(
        ["git", "push", str(central), "lane-1/x"], cwd=lane, capture_output=True, text=True
    )
    assert proc.returncode != 0
    assert (
        "flamechase hook: the central repository accepts pushes only from the flamechase runtime"
    ) in proc.stderr


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ("one parent", "main accepts only a two-parent merge of the selected PR head"),
        ("other head", "main accepts only a two-parent merge of the selected PR head"),
        ("no trailer", "the merge does not name PR000001 in a Flamechase-PR: trailer"),
        ("not selected", "main accepts only the merge the runtime selected"),
    ],
)
def test_main_takes_only_the_selected_merge(
    user: User, tmp_path: Path, case: str, why: str
) -> None:
    _, central, seeded = init(user, tmp_path)
    main = str(seeded["main"])
    g = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "--git-dir", str(central)]
    tree = subprocess.run(
        [*g, "rev-parse", "main^{tree}"], capture_output=True, text=True, check=True
    ).stdout.strip()

    def commit(*parents: str, message: str) -> str:
        args = [a for p in parents for a in ("-p", p)]
        return subprocess.run(
            [*g, "commit-tree", tree, *args, "-m", message],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    head = commit(main, message="the PR head")
    good = commit(main, head, message="Merge\n\nFlamechase-PR: PR000001\n")
    bad = {
        "one parent": commit(main, message="x\n\nFlamechase-PR: PR000001\n"),
        "other head": commit(
            main, commit(main, message="other"), message="m\n\nFlamechase-PR: PR000001\n"
        ),
        "no trailer": commit(main, head, message="Merge"),
        "not selected": commit(main, head, message="m\n\nFlamechase-PR: PR000001\n"),
    }[case]
    selected = bad if case != "not selected" else good
    policy = json.dumps(
        {
            "pusher": "runtime",
            "merge": {"pr": "PR000001", "head": head, "parent": main, "commit": selected},
        }
    )
    result = tool(
        "gitpr",
        "push-main",
        "--central",
        str(central),
        "--merge",
        bad,
        "--main",
        main,
        cwd=central,
        env={"FLAMECHASE_GIT_POLICY": policy},
    )
    assert why in str(result["refused"])
    policy = json.dumps(
        {
            "pusher": "runtime",
            "merge": {"pr": "PR000001", "head": head, "parent": main, "commit": good},
        }
    )
    ok = tool(
        "gitpr",
        "push-main",
        "--central",
        str(central),
        "--merge",
        good,
        "--main",
        main,
        cwd=central,
        env={"FLAMECHASE_GIT_POLICY": policy},
    )
    assert ok == {"main": good}
    # Asked again (a crash came before the runtime recorded it): done already.
    again = tool(
        "gitpr",
        "push-main",
        "--central",
        str(central),
        "--merge",
        good,
        "--main",
        main,
        cwd=central,
        env={"FLAMECHASE_GIT_POLICY": policy},
    )
    assert again == {"main": good}


def test_the_hook_judges_every_line_it_is_given() -> None:
    lines = [(ZERO, "1" * 40, "refs/heads/lane-2/a"), (ZERO, "2" * 40, "refs/tags/v1")]
    assert hook.judge(lines, {"pusher": "lane-2"}) == (
        "lane-2 may push only its own branches (refs/heads/lane-2/...), not refs/tags/v1"
    )
    assert hook.judge(lines[:1], {"pusher": "lane-2"}) is None
    assert hook.judge(lines[:1], None) is not None
    assert hook.judge([("1" * 40, ZERO, "refs/heads/main")], {"pusher": "runtime"}) == (
        "main cannot be deleted"
    )
    assert (
        hook.judge([(ZERO, "3" * 40, "refs/flamechase/merges/PR000001")], {"pusher": "runtime"})
        is None
    )


def _central_refs(central: Path) -> dict[str, str]:
    out = subprocess.run(
        ["git", "--git-dir", str(central), "for-each-ref", "--format=%(refname) %(objectname)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


def test_a_lanes_tags_and_other_refs_never_reach_the_central_repository_or_another_lane(
    user: User, tmp_path: Path
) -> None:
    _, central, seeded = init(user, tmp_path)
    main = str(seeded["main"])
    lane = _lane_push(user, tmp_path, central)
    mine = _commit(user, lane, "lane-1/x", "a.txt", "the attacker's\n")
    # A tag named like the remote-tracking branch every lane starts from outranks it.
    user.git(lane, "tag", "origin/main")
    user.git(lane, "tag", "-a", "-m", "annotated", "v1")
    user.git(lane, "push", "-q", "origin", "lane-1/x")
    user.git(lane, "push", "-q", "--tags", "origin")
    others = [
        f"refs/replace/{main}",
        "refs/notes/commits",
        "refs/remotes/origin/main",
        "refs/heads/origin/main",
        "refs/heads/HEAD",
        "refs/heads/lane-1/HEAD",
        "refs/flamechase/merges/PR000001",
    ]
    user.git(lane, "push", "-q", "origin", *(f"HEAD:{ref}" for ref in others))
    box = lane / ".git" / "flamechase" / "outbox.git"
    listed = user.git(
        lane, "--git-dir", str(box), "for-each-ref", "--format=%(refname) %(objectname)"
    )
    pushed = dict(line.split(" ", 1) for line in listed.splitlines())
    assert {"refs/tags/origin/main", "refs/tags/v1", *others} < set(pushed)
    result = _forward(tmp_path, central, lane, pushed)
    results = dict(result["results"])  # type: ignore[call-overload]
    assert results.pop("refs/heads/lane-1/x") == "ok"
    assert results["refs/tags/origin/main"] == (
        "lane-1 may push only its own branches (refs/heads/lane-1/...), not refs/tags/origin/main"
    )
    assert results["refs/heads/lane-1/HEAD"] == (
        "a branch name may not have a part named HEAD: refs/heads/lane-1/HEAD"
    )
    assert "ok" not in results.values()
    assert _central_refs(central) == {"refs/heads/main": main, "refs/heads/lane-1/x": mine}
    # Another lane fetches and starts from origin/main as its prompt says: main, no tag.
    other = tmp_path / "lane-2"
    other.mkdir()
    tool("gitpr", "clone", "--central", str(central), "--name", "lane-2", "--outbox", cwd=other)
    user.git(other, "fetch", "-q", "origin")
    assert user.git(other, "tag", "-l") == ""
    user.git(other, "checkout", "-q", "-B", "lane-2/y", "origin/main")
    assert user.git(other, "rev-parse", "HEAD") == main


def test_a_forged_export_is_judged_ref_by_ref_and_moves_nothing_but_the_lanes_own_branches(
    user: User, tmp_path: Path
) -> None:
    """What the jailed export prints is the lane's to forge: the forward trusts none of it."""
    _, central, seeded = init(user, tmp_path)
    main = str(seeded["main"])
    subprocess.run(["git", "--git-dir", str(central), "tag", "kept", main], check=True)
    policy = json.dumps({"pusher": "lane-1", "frozen": {}})
    result = tool(
        "gitpr",
        "forward",
        "--central",
        str(central),
        "--lane",
        "lane-1",
        "--update",
        "refs/heads/lane-1/y=refs/heads/main",
        "--update",
        f"refs/heads/lane-1/bad..name={main}",
        "--update",
        f"refs/heads/lane-1/a=b={main}",
        "--delete",
        "refs/tags/kept",
        cwd=central,
        env={"FLAMECHASE_GIT_POLICY": policy},
    )
    assert result["results"] == {
        "refs/heads/lane-1/y": "'refs/heads/main' is not a commit id",
        "refs/heads/lane-1/bad..name": "refs/heads/lane-1/bad..name is not a valid branch name",
        "refs/heads/lane-1/a=b": "ok",
        "refs/tags/kept": (
            "lane-1 may push only its own branches (refs/heads/lane-1/...), not refs/tags/kept"
        ),
    }
    assert _central_refs(central) == {
        "refs/heads/main": main,
        "refs/heads/lane-1/a=b": main,
        "refs/tags/kept": main,
    }
