"""Lane 1 on a node, backed by git (`engine/remote/gitsync.py`), with real git on both ends:
the user's repository here, the node's private repository and copy in another directory."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from flamechase.engine.remote.gitsync import GitSyncError, NodeRepo, Sync, TreeLink, why_not


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "u",
        "GIT_AUTHOR_EMAIL": "u@x",
        "GIT_COMMITTER_NAME": "u",
        "GIT_COMMITTER_EMAIL": "u@x",
    }
    return subprocess.run(
        ["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


@pytest.fixture
def user(tmp_path: Path) -> Path:
    repo = tmp_path / "user"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "solver.py").write_text("slow\n")
    (repo / "lib").mkdir()
    (repo / "lib" / "a.txt").write_text("a\n")
    (repo / ".gitignore").write_text("build/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "first")
    (repo / "notes.txt").write_text("uncommitted, untracked\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.bin").write_text("ignored\n")
    return repo


def _state(repo: Path) -> tuple[str, str, str]:
    """What the user's own git says: HEAD, the branch, and the index."""
    return (
        git(repo, "rev-parse", "HEAD"),
        git(repo, "symbolic-ref", "HEAD"),
        git(repo, "ls-files", "--stage"),
    )


def _first_turn(user: Path, tmp_path: Path) -> tuple[TreeLink, NodeRepo, Sync]:
    """The head's link, the node's copy made from the first sync, and that sync."""
    link = TreeLink(user, "run1", "lane-1")
    node = NodeRepo(tmp_path / "n.git", tmp_path / "n")
    sync = link.sync(None, "first")
    node.materialise(sync)
    return link, node, sync


def test_the_copy_on_the_node_is_the_tree_git_would_record(user: Path, tmp_path: Path) -> None:
    before = _state(user)
    _link, node, _sync = _first_turn(user, tmp_path)
    place = node.place
    assert (place / "solver.py").read_text() == "slow\n"
    assert (place / "notes.txt").read_text() == "uncommitted, untracked\n"
    assert not (place / "build").exists()  # ignored: stays here
    # The agent's own repository, at the same commit, with the history.
    assert git(place, "status", "--porcelain") == ""
    assert "first" in git(place, "log", "--format=%s")
    # The user's HEAD, branch and index are as they were; the chain is a ref of ours.
    assert _state(user) == before
    assert git(user, "rev-parse", "refs/flamechase/run1/lane-1") == node.at


def test_a_turn_lands_in_the_tree_as_one_commit(user: Path, tmp_path: Path) -> None:
    before = _state(user)
    link, node, sync = _first_turn(user, tmp_path)
    p = node.place
    (p / "solver.py").write_text("fast\n")
    (p / "lib" / "a.txt").unlink()
    (p / "lib" / "b").mkdir()
    (p / "lib" / "b" / "new.txt").write_text("new\n")
    (p / "run.sh").write_text("#!/bin/sh\n")
    (p / "run.sh").chmod(0o755)
    (p / "link").symlink_to("solver.py")
    (p / "build").mkdir()
    (p / "build" / "node-only.o").write_text("ignored on the node too\n")
    back = node.commit("lane-1 turn 1")
    landing = link.land(sync, back, "turn-1-1")

    assert not landing.held
    assert set(landing.changed) == {"solver.py", "lib/a.txt", "lib/b/new.txt", "run.sh", "link"}
    assert (user / "solver.py").read_text() == "fast\n"
    assert not (user / "lib" / "a.txt").exists()
    assert (user / "lib" / "b" / "new.txt").read_text() == "new\n"
    assert os.access(user / "run.sh", os.X_OK)
    assert os.readlink(user / "link") == "solver.py"
    assert not (user / "build" / "node-only.o").exists()
    assert (user / "build" / "out.bin").read_text() == "ignored\n"
    # One commit per turn on the lane's chain; the user's own git untouched.
    assert git(user, "rev-parse", "refs/flamechase/run1/lane-1") == back.commit
    assert git(user, "log", "-1", "--format=%s", back.commit) == "lane-1 turn 1"
    assert _state(user) == before


def test_a_turn_that_changed_nothing_sends_nothing(user: Path, tmp_path: Path) -> None:
    link, node, sync = _first_turn(user, tmp_path)
    back = node.commit("idle turn")
    assert back.commit == sync.commit and back.bundle == b""
    assert link.land(sync, back, "t").changed == ()
    again = link.sync(sync.commit, "second")
    assert again.commit == sync.commit and again.bundle == b""


def test_the_users_edits_meanwhile_are_kept_and_reach_the_node(user: Path, tmp_path: Path) -> None:
    link, node, sync = _first_turn(user, tmp_path)
    (node.place / "solver.py").write_text("fast\n")
    (node.place / "scratch.tmp").write_text("left by the agent\n")
    back = node.commit("turn 1")
    (user / "README").write_text("written by the user meanwhile\n")
    landing = link.land(sync, back, "t1")
    assert not landing.held
    assert (user / "README").read_text() == "written by the user meanwhile\n"
    assert (user / "solver.py").read_text() == "fast\n"

    nxt = link.sync(node.at, "turn 2 begins")
    assert nxt.bundle  # only what the node lacks: the user's edit
    node.apply(nxt)
    assert (node.place / "README").read_text() == "written by the user meanwhile\n"
    assert (node.place / "solver.py").read_text() == "fast\n"
    assert git(user, "rev-parse", f"{nxt.commit}^") == back.commit


def test_a_turn_that_changed_what_the_user_changed_is_held(user: Path, tmp_path: Path) -> None:
    link, node, sync = _first_turn(user, tmp_path)
    (node.place / "solver.py").write_text("agent's\n")
    (node.place / "other.txt").write_text("agent's other\n")
    back = node.commit("turn 1")
    (user / "solver.py").write_text("user's\n")
    landing = link.land(sync, back, "turn-1-1")

    assert landing.held and landing.clashes == ("solver.py",)
    assert (user / "solver.py").read_text() == "user's\n"
    assert not (user / "other.txt").exists()  # nothing of the turn, not even the rest
    assert git(user, "rev-parse", landing.held_ref) == back.commit
    assert git(user, "rev-parse", link.ref) == sync.commit
    # The next turn starts from the user's tree: the held work is gone from the copy.
    node.apply(link.sync(node.at, "turn 2"))
    assert (node.place / "solver.py").read_text() == "user's\n"
    assert not (node.place / "other.txt").exists()


def test_a_file_that_became_a_directory_lands(user: Path, tmp_path: Path) -> None:
    link, node, sync = _first_turn(user, tmp_path)
    (node.place / "solver.py").unlink()
    (node.place / "solver.py").mkdir()
    (node.place / "solver.py" / "__init__.py").write_text("pkg\n")
    import shutil

    shutil.rmtree(node.place / "lib")
    (node.place / "lib").write_text("now a file\n")
    link.land(sync, node.commit("turn"), "t")
    assert (user / "solver.py" / "__init__.py").read_text() == "pkg\n"
    assert (user / "lib").read_text() == "now a file\n"


def test_the_runtimes_git_on_the_node_runs_nothing_the_agent_planted(
    user: Path, tmp_path: Path
) -> None:
    link, node, sync = _first_turn(user, tmp_path)
    marker = tmp_path / "pwned"
    p = node.place
    # A filter and hooks in the agent's own .git and a .gitattributes asking for them.
    (p / ".gitattributes").write_text("* filter=evil\n")
    with open(p / ".git" / "config", "a") as f:
        f.write(
            f'[filter "evil"]\n\tclean = touch {marker}\n\tsmudge = touch {marker}\n'
            f"[core]\n\tfsmonitor = touch {marker}\n"
        )
    hook = p / ".git" / "hooks" / "post-checkout"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    (p / "solver.py").write_text("fast\n")
    back = node.commit("turn")
    landing = link.land(sync, back, "t")
    node.apply(link.sync(node.at, "next"))
    assert not marker.exists()
    # The agent's .git never travels: only the work tree does.
    assert ".git/config" not in landing.changed
    assert "fsmonitor" not in (user / ".git" / "config").read_text()
    assert (user / ".gitattributes").read_text() == "* filter=evil\n"
    # What was planted was real: the agent's own git runs it.
    subprocess.run(["git", "-C", str(p), "add", "-A"], capture_output=True, check=False)
    assert marker.exists()


def test_a_commit_that_does_not_follow_the_sent_tree_is_refused(user: Path, tmp_path: Path) -> None:
    link, node, sync = _first_turn(user, tmp_path)
    (node.place / "solver.py").write_text("fast\n")
    honest = node.commit("turn")
    # A hostile node names another commit than the bundle holds.
    forged = type(honest)("0" * 40, honest.bundle)
    with pytest.raises(GitSyncError, match="not the"):
        link.land(sync, forged, "t")
    assert (user / "solver.py").read_text() == "slow\n"


def test_only_the_top_of_a_git_repository_can_go_to_a_node(user: Path, tmp_path: Path) -> None:
    assert why_not(user) is None
    assert "not a git repository" in (why_not(tmp_path) or "")
    assert "inside the git repository" in (why_not(user / "lib") or "")


def test_a_resumed_run_goes_on_with_the_lanes_chain(user: Path, tmp_path: Path) -> None:
    first = TreeLink(user, "run1", "lane-1")
    s1 = first.sync(None, "first")
    (user / "solver.py").write_text("edited between sessions\n")
    again = TreeLink(user, "run1", "lane-1")
    assert again.last == s1.commit
    s2 = again.sync(None, "resumed")
    assert git(user, "rev-parse", f"{s2.commit}^") == s1.commit


def test_a_tree_that_reaches_into_git_is_refused_on_arrival(user: Path, tmp_path: Path) -> None:
    link, node, sync = _first_turn(user, tmp_path)
    # A hostile node crafts a commit whose tree holds `.git/hooks/post-checkout` (and
    # removes a file, which must not be removed either).
    gd = ["git", "--git-dir", str(node.git_dir)]

    def run(*args: str, stdin: str = "") -> str:
        return subprocess.run(
            [*gd, *args], input=stdin, capture_output=True, text=True, check=True
        ).stdout.strip()

    blob = run("hash-object", "-w", "--stdin", stdin="#!/bin/sh\ntouch /tmp/x\n")
    hooks = run("mktree", stdin=f"100755 blob {blob}\tpost-checkout\n")
    dotgit = run("mktree", stdin=f"040000 tree {hooks}\thooks\n")
    base = run("rev-parse", f"{sync.commit}^{{tree}}")
    entries = (
        "\n".join(e for e in run("ls-tree", base).splitlines() if not e.endswith("\tsolver.py"))
        + f"\n040000 tree {dotgit}\t.git\n"
    )
    tree = run("mktree", stdin=entries)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "n",
        "GIT_AUTHOR_EMAIL": "n@x",
        "GIT_COMMITTER_NAME": "n",
        "GIT_COMMITTER_EMAIL": "n@x",
    }
    commit = subprocess.run(
        [*gd, "commit-tree", tree, "-p", sync.commit, "-m", "x"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout.strip()
    run("update-ref", "refs/flamechase/turn", commit)
    bundle = tmp_path / "b"
    run("bundle", "create", "-q", str(bundle), "refs/flamechase/turn", f"^{sync.commit}")
    with pytest.raises(GitSyncError, match=r"invalid path '\.git/hooks"):
        link.land(sync, type(node.commit("x"))(commit, bundle.read_bytes()), "t")
    assert not (user / ".git" / "hooks" / "post-checkout").exists()
    assert (user / "solver.py").read_text() == "slow\n"


def test_a_link_out_of_the_tree_is_never_written_through(user: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    link, node, sync = _first_turn(user, tmp_path)
    (node.place / "evil").symlink_to(outside)
    link.land(sync, node.commit("turn 1: a link out"), "t1")
    assert os.readlink(user / "evil") == str(outside)
    # The next turn makes the link a directory with a file in it.
    sync = link.sync(node.at, "turn 2")
    node.apply(sync)
    (node.place / "evil").unlink()
    (node.place / "evil").mkdir()
    (node.place / "evil" / "x").write_text("planted\n")
    link.land(sync, node.commit("turn 2"), "t2")
    assert list(outside.iterdir()) == []
    assert (user / "evil" / "x").read_text() == "planted\n"
    assert not (user / "evil").is_symlink()


def test_a_same_size_edit_in_the_indexs_last_second_is_never_missed(tmp_path: Path) -> None:
    """Git trusts a file's cached stat only when the file is older than the index, so a
    snapshot's private index keeps the real one's modification time. With a copy made in a
    later second, an edit of the same size, in the index's second, onto a reused inode (what
    landing a turn right after the user's `git commit` does) looked unchanged, and the next
    turn's copy lost it. Each round starts just after a second begins and takes the next
    snapshot in the second after; a round the machine is too busy for just proves less."""
    for n in range(2):
        time.sleep(1 - time.time() % 1 + 0.01)
        user = tmp_path / f"user{n}"
        user.mkdir()
        git(user, "init", "-q", "-b", "main")
        (user / "solver.py").write_text("slow\n")
        git(user, "add", "-A")
        git(user, "commit", "-qm", "first")
        link = TreeLink(user, "run1", "lane-1")
        node = NodeRepo(tmp_path / f"n{n}.git", tmp_path / f"n{n}")
        sync = link.sync(None, "first")
        node.materialise(sync)
        (node.place / "solver.py").write_text("fast\n")
        link.land(sync, node.commit("turn 1"), "t1")
        time.sleep(1 - time.time() % 1 + 0.01)
        nxt = link.sync(node.at, "turn 2")
        assert git(user, "show", f"{nxt.commit}:solver.py") == "fast", f"round {n}"
