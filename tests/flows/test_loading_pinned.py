"""A pinned flow runs only its commit's own files: symlinks that lead out of the flow's
directory and submodules are refused in one line, and nothing written into the checkout after
it was cloned (hidden from git or not) runs. Real repositories, through `flamechase exec`."""

from __future__ import annotations

import importlib.util
import os
import py_compile
from pathlib import Path

import pytest

from tests.flows.loading_repos import commit, flow_source, git, worker
from tests.helpers import cli, status

# From `<home>/flows/git/<url key>/<commit>/once/` up to the test's directory: where a
# relative link must climb to reach code beside the state home.
UP = "../" * 6
# Evil code writes a marker next to itself: if the marker exists, the code ran.
EVIL = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\n"


def _evil(path: Path, marker: Path, extra: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(EVIL.format(marker=str(marker)) + extra)
    return path


def _repo(tmp: Path, init_extra: str = "") -> Path:
    repo = tmp / "repo"
    (repo / "once").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "once" / "__init__.py").write_text(flow_source("committed ran") + init_extra)
    return repo


def _exec(tmp: Path, ref: str):
    ws = tmp / "ws"
    ws.mkdir(exist_ok=True)
    return cli(
        "exec",
        "-f",
        ref,
        "-a",
        worker(tmp),
        "-p",
        "budget.turns=1,rest_seconds=0.05,resume_mode=fresh",
        "do it",
        cwd=ws,
    )


def _refused(proc, *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    for word in words:
        assert word in line, line


def _link(repo: Path, rel: str, target: str | Path) -> None:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)


@pytest.mark.parametrize(
    ("where", "target", "extra"),
    [
        # A module of the flow is a link to an absolute path outside the repository.
        ("once/helper.py", "abs:outside/helper.py", "from . import helper\n"),
        # A relative link that climbs out of the repository.
        ("once/helper.py", UP + "outside/helper.py", "from . import helper\n"),
        # A linked directory: a subpackage that lives outside.
        ("once/lib", "abs:outside/lib", "from .lib import helper\n"),
        # Inside the repository but outside the flow's directory: not the flow's code.
        ("once/helper.py", "../shared/helper.py", "from . import helper\n"),
    ],
)
def test_a_symlink_out_of_the_flow_is_refused_and_runs_nothing(
    tmp_path: Path, where: str, target: str, extra: str
) -> None:
    marker = tmp_path / "ran"
    repo = _repo(tmp_path, extra)
    outside = tmp_path / "outside"
    _evil(outside / "helper.py", marker)
    _evil(outside / "lib" / "__init__.py", marker)
    _evil(outside / "lib" / "helper.py", marker)
    _evil(repo / "shared" / "helper.py", marker)
    _link(repo, where, tmp_path / target[4:] if target.startswith("abs:") else target)
    commit(repo, "linked", "v1")
    _refused(
        _exec(tmp_path, f"git+file://{repo}@v1#once"),
        where,
        "symlink",
        "outside the flow's directory once",
    )
    assert not marker.exists()
    assert not (tmp_path / "fc-home" / "runs").exists()


def test_an_init_that_is_a_symlink_out_of_the_repository_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    repo = tmp_path / "repo"
    (repo / "once").mkdir(parents=True)
    git(repo, "init", "-q")
    _evil(tmp_path / "outside" / "init.py", marker, flow_source("outside ran"))
    _link(repo, "once/__init__.py", UP + "outside/init.py")
    commit(repo, "linked", "v1")
    _refused(_exec(tmp_path, f"git+file://{repo}@v1#once"), "once/__init__.py", "symlink")
    assert not marker.exists()


def test_a_subdir_that_is_a_symlink_out_of_the_repository_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "README").write_text("a flow elsewhere\n")
    _evil(tmp_path / "outside" / "flow" / "__init__.py", marker, flow_source("outside ran"))
    _link(repo, "once", tmp_path / "outside" / "flow")
    commit(repo, "linked", "v1")
    _refused(_exec(tmp_path, f"git+file://{repo}@v1#once"), "once", "out of the repository")
    assert not marker.exists()


def test_a_symlink_inside_the_flow_is_read_from_the_commit(tmp_path: Path) -> None:
    # A module linked to another of the flow's, and a data file read as a package resource.
    data = "import importlib.resources\nDATA = importlib.resources.files(__package__)\n"
    said = "MESSAGE = WORD + ' and ' + DATA.joinpath('word.txt').read_text().strip()\n"
    repo = _repo(tmp_path, "from .alias import WORD\n" + data + said)
    (repo / "once" / "impl.py").write_text("WORD = 'the link ran'\n")
    (repo / "once" / "word.txt").write_text("the data was read\n")
    _link(repo, "once/alias.py", "impl.py")
    sha = commit(repo, "alias", "v1")
    proc = _exec(tmp_path, f"git+file://{repo}@v1#once")
    assert proc.returncode == 0, proc.stderr
    assert "the link ran and the data was read" in proc.stderr
    assert status(tmp_path / "ws")["flow_source"] == f"git+file://{repo}@{sha}#once"


def test_a_submodule_in_the_flow_is_refused(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    sub = tmp_path / "other"
    sub.mkdir()
    git(sub, "init", "-q")
    (sub / "x.py").write_text("X = 1\n")
    other = commit(sub, "other")
    git(repo, "add", "-A")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{other},once/vendored")
    git(repo, "commit", "-q", "-m", "with a submodule")
    git(repo, "tag", "v1")
    assert "160000 commit" in git(repo, "ls-tree", "-r", "HEAD")
    _refused(_exec(tmp_path, f"git+file://{repo}@v1#once"), "once/vendored", "submodule")


def test_a_checkout_edited_behind_gits_back_runs_the_commit(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    repo = _repo(tmp_path)
    sha = commit(repo, "v1", "v1")
    ref = f"git+file://{repo}@v1#once"
    assert _exec(tmp_path, ref).returncode == 0
    [checkout] = (tmp_path / "fc-home" / "flows" / "git").glob(f"*/{sha}")
    init = checkout / "once" / "__init__.py"
    # git status would say it changed; told to assume it did not, it says nothing.
    git(checkout, "update-index", "--assume-unchanged", "once/__init__.py")
    _evil(init, marker, flow_source("edited ran"))
    proc = _exec(tmp_path, ref)
    assert proc.returncode == 0, proc.stderr
    assert "committed ran" in proc.stderr and "edited ran" not in proc.stderr
    assert not marker.exists()


def test_a_bytecode_cache_planted_in_the_checkout_does_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    repo = _repo(tmp_path)
    sha = commit(repo, "v1", "v1")
    ref = f"git+file://{repo}@v1#once"
    assert _exec(tmp_path, ref).returncode == 0
    [checkout] = (tmp_path / "fc-home" / "flows" / "git").glob(f"*/{sha}")
    init = checkout / "once" / "__init__.py"
    # Bytecode Python would load without looking at the source, hidden from git status.
    evil = _evil(tmp_path / "evil.py", marker, flow_source("bytecode ran"))
    cache = importlib.util.cache_from_source(str(init))
    py_compile.compile(
        str(evil),
        cfile=cache,
        dfile=str(init),
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    (checkout / ".git" / "info" / "exclude").write_text("__pycache__/\n")
    proc = _exec(tmp_path, ref)
    assert proc.returncode == 0, proc.stderr
    assert "committed ran" in proc.stderr and "bytecode ran" not in proc.stderr
    assert not marker.exists()
