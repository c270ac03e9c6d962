"""Clones of the central repository: a lane's (its own identity and config, an outbox for its
pushes), clean checkouts of one commit, and the runtime's merges. Real git."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.tools.conftest import User, tool
from tests.tools.git_pr.test_central import init

RUNTIME = {"FLAMECHASE_GIT_POLICY": json.dumps({"pusher": "runtime", "merge": None})}


def clone(tmp_path: Path, central: Path, name: str, *, outbox: bool = True) -> Path:
    place = tmp_path / name
    place.mkdir()
    args = ["--outbox"] if outbox else []
    tool("gitpr", "clone", "--central", str(central), "--name", name, *args, cwd=place)
    return place


def central_commit(
    user: User, tmp_path: Path, central: Path, branch: str, base: str, files: dict[str, str]
) -> str:
    """A commit on `base` with `files`, put into the central repository as `branch`
    (directly: these tests are about what comes after a push)."""
    work = tmp_path / f"work-{branch.replace('/', '-')}"
    if not work.exists():
        user.git(tmp_path, "clone", "-q", str(central), str(work))
    user.git(work, "fetch", "-q", "origin")
    user.git(work, "checkout", "-q", "-f", "--detach", base)
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
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
        f"on {branch}",
    )
    sha = user.git(work, "rev-parse", "HEAD")
    subprocess.run(
        ["git", "--git-dir", str(central), "fetch", "-q", str(work), f"+{sha}:refs/heads/{branch}"],
        check=True,
    )
    return sha


def test_a_lane_clone_has_its_own_identity_config_and_outbox(user: User, tmp_path: Path) -> None:
    digest = user.config_digest()
    _, central, seeded = init(user, tmp_path)
    lane = clone(tmp_path, central, "lane-2")
    assert user.git(lane, "rev-parse", "HEAD") == seeded["main"]
    config = {
        k: user.git(lane, "config", "--local", "--get", k)
        for k in (
            "user.name",
            "user.email",
            "core.hooksPath",
            "commit.gpgSign",
            "remote.origin.url",
            "remote.origin.pushurl",
            "flamechase.lane",
        )
    }
    assert config["user.name"] == "flamechase lane-2"
    assert config["user.email"] == "lane-2@flamechase.invalid"
    assert config["core.hooksPath"] == str(lane / ".git" / "hooks")
    assert config["commit.gpgSign"] == "false"
    assert config["remote.origin.url"] == str(central)
    assert config["remote.origin.pushurl"] == str(lane / ".git" / "flamechase" / "outbox.git")
    # The lane works with git as usual, under its own name; the user's config and hooks are
    # neither used nor changed.
    (lane / "b.txt").write_text("b\n")
    user.git(lane, "add", "b.txt")
    user.git(lane, "commit", "-qm", "b")
    assert user.git(lane, "log", "-1", "--format=%an") == "flamechase lane-2"
    user.git(lane, "push", "-q", "origin", "HEAD:refs/heads/lane-2/b")
    assert user.hooks_ran() == []
    assert user.config_digest() == digest


def test_export_gives_what_changed_since_it_was_seen_and_bundles_only_new_commits(
    user: User, tmp_path: Path
) -> None:
    _, central, seeded = init(user, tmp_path)
    lane = clone(tmp_path, central, "lane-1")
    bundle = lane / ".git" / "flamechase" / "outgoing.bundle"

    def export(seen: dict[str, str]) -> dict[str, object]:
        return tool(
            "gitpr",
            "export",
            "--central",
            str(central),
            "--bundle",
            str(bundle),
            cwd=lane,
            env={"FLAMECHASE_GIT_SEEN": json.dumps(seen)},
        )

    assert export({}) == {"changed": {}, "deleted": [], "bundle": None}
    user.git(lane, "push", "-q", "origin", "HEAD:refs/heads/lane-1/same")
    same = export({})
    assert same["changed"] == {"refs/heads/lane-1/same": seeded["main"]}
    assert same["bundle"] is None  # main's commit: the central repository has it
    (lane / "b.txt").write_text("b\n")
    user.git(lane, "add", "b.txt")
    user.git(lane, "commit", "-qm", "b")
    user.git(lane, "push", "-q", "origin", "HEAD:refs/heads/lane-1/b", ":refs/heads/lane-1/same")
    new = export({"refs/heads/lane-1/same": str(seeded["main"])})
    assert new["changed"] == {"refs/heads/lane-1/b": user.git(lane, "rev-parse", "HEAD")}
    assert new["deleted"] == ["refs/heads/lane-1/same"]
    assert new["bundle"] == str(bundle)
    heads = user.git(lane, "bundle", "list-heads", str(bundle))
    assert "refs/heads/lane-1/b" in heads


def test_a_checkout_is_exactly_the_commit_and_says_what_it_changes(
    user: User, tmp_path: Path
) -> None:
    _, central, seeded = init(user, tmp_path, {"a.txt": "a\n", "solver.py": "x = 1\n"})
    main = str(seeded["main"])
    head = central_commit(
        user, tmp_path, central, "lane-1/x", main, {"solver.py": "x = 2\n", "new.py": "y = 1\n"}
    )
    place = tmp_path / "co"
    place.mkdir()
    (place / "stale.txt").write_text("from an earlier checkout\n")
    got = tool(
        "gitpr",
        "checkout",
        "--central",
        str(central),
        "--commit",
        head,
        "--main",
        main,
        "--allow",
        "solver.py",
        cwd=place,
    )
    assert got["commit"] == head and got["base"] == main and got["descends"] is True
    assert got["changed"] == 2 and got["disallowed"] == ["new.py"]
    assert (place / "solver.py").read_text() == "x = 2\n"
    assert not (place / "stale.txt").exists()
    assert user.git(place, "status", "--porcelain") == ""
    everything = tool(
        "gitpr", "checkout", "--central", str(central), "--commit", head, "--main", main, cwd=place
    )
    assert everything["disallowed"] == []  # new files are fine when nothing restricts paths


def test_a_head_on_main_merges_with_exactly_its_own_tree(user: User, tmp_path: Path) -> None:
    _, central, seeded = init(user, tmp_path, {"a.txt": "a\n"})
    main = str(seeded["main"])
    head = central_commit(user, tmp_path, central, "lane-1/x", main, {"a.txt": "A\n"})
    integration = clone(tmp_path, central, "integration", outbox=False)
    got = tool(
        "gitpr",
        "merge",
        "--pr",
        "PR000001",
        "--lane",
        "lane-1",
        "--title",
        "upper",
        "--head",
        head,
        "--main",
        main,
        cwd=integration,
        env=RUNTIME,
    )
    assert got["fast"] is True
    g = ["git", "--git-dir", str(central)]
    parents = subprocess.run(
        [*g, "rev-list", "--parents", "-n1", got["merge"]],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[1:]
    assert parents == [main, head]
    trees = [
        subprocess.run(
            [*g, "rev-parse", f"{c}^{{tree}}"], capture_output=True, text=True, check=True
        ).stdout.strip()
        for c in (got["merge"], head)
    ]
    assert trees[0] == trees[1]
    staged = subprocess.run(
        [*g, "rev-parse", "refs/flamechase/merges/PR000001"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert staged == got["merge"]
    again = tool(
        "gitpr",
        "merge",
        "--pr",
        "PR000001",
        "--lane",
        "lane-1",
        "--title",
        "upper",
        "--head",
        head,
        "--main",
        main,
        cwd=integration,
        env=RUNTIME,
    )
    assert again["merge"] == got["merge"]  # after a crash: the same staged merge


def test_an_old_based_head_merges_with_main_keeping_both(user: User, tmp_path: Path) -> None:
    _, central, seeded = init(user, tmp_path, {"a.txt": "a\n", "b.txt": "b\n"})
    base = str(seeded["main"])
    main = central_commit(user, tmp_path, central, "main", base, {"a.txt": "A\n"})
    head = central_commit(user, tmp_path, central, "lane-2/x", base, {"b.txt": "B\n"})
    integration = clone(tmp_path, central, "integration", outbox=False)
    got = tool(
        "gitpr",
        "merge",
        "--pr",
        "PR000002",
        "--lane",
        "lane-2",
        "--title",
        "b",
        "--head",
        head,
        "--main",
        main,
        cwd=integration,
        env=RUNTIME,
    )
    assert got["fast"] is False
    show = ["git", "--git-dir", str(central), "show"]
    for path, text in (("a.txt", "A\n"), ("b.txt", "B\n")):
        assert (
            subprocess.run(
                [*show, f"{got['merge']}:{path}"], capture_output=True, text=True, check=True
            ).stdout
            == text
        )
    message = subprocess.run(
        [*show, "-s", "--format=%B", got["merge"]], capture_output=True, text=True, check=True
    ).stdout
    assert "Flamechase-PR: PR000002" in message


def test_a_conflicting_head_is_not_merged_and_the_paths_are_named(
    user: User, tmp_path: Path
) -> None:
    _, central, seeded = init(user, tmp_path, {"a.txt": "a\n"})
    base = str(seeded["main"])
    main = central_commit(user, tmp_path, central, "main", base, {"a.txt": "main\n"})
    head = central_commit(user, tmp_path, central, "lane-2/x", base, {"a.txt": "lane\n"})
    integration = clone(tmp_path, central, "integration", outbox=False)
    got = tool(
        "gitpr",
        "merge",
        "--pr",
        "PR000002",
        "--lane",
        "lane-2",
        "--title",
        "a",
        "--head",
        head,
        "--main",
        main,
        cwd=integration,
        env=RUNTIME,
    )
    assert got == {"conflicts": ["a.txt"]}
    assert user.git(integration, "status", "--porcelain") == ""  # ready for the next merge


def test_a_clone_fetches_branches_and_never_a_tag(user: User, tmp_path: Path) -> None:
    """Were a tag ever in the central repository, no clone the runtime made would take it: it
    would outrank the `origin/main` every lane starts from."""
    _, central, seeded = init(user, tmp_path)
    main = str(seeded["main"])
    tag = ["git", "--git-dir", str(central), "tag"]
    subprocess.run([*tag, "origin/main", main], check=True)
    lane = clone(tmp_path, central, "lane-1")
    integration = clone(tmp_path, central, "integration", outbox=False)
    subprocess.run([*tag, "v2", main], check=True)
    for place in (lane, integration):
        assert user.git(place, "config", "--get", "remote.origin.tagOpt") == "--no-tags"
        user.git(place, "fetch", "-q", "origin")
        assert user.git(place, "tag", "-l") == ""
        assert user.git(place, "rev-parse", "origin/main") == main
