"""`-f git+URL[@REV][#SUBDIR][:FLOW]`: cloned once per commit, pinned, loaded from the cache;
offline, from `git+file://` repositories made here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flamechase.errors import FlowNotFound
from flamechase.loader import flow_identity, load_flow
from tests.flows.loading_repos import change_flow, commit, flow_source, git, make_repo, worker
from tests.helpers import cli, status


def _exec(ws: Path, tmp: Path, ref: str, *extra: str, params: str = "budget.turns=5"):
    return cli(
        "exec",
        "-f",
        ref,
        "-a",
        worker(tmp),
        "-p",
        f"{params},rest_seconds=0.05",
        *extra,
        "do it",
        cwd=ws,
    )


def _runs(ws: Path) -> list[dict[str, object]]:
    runs: list[dict[str, object]] = json.loads(cli("runs", "--json", cwd=ws, check=True).stdout)
    return runs


def _one_line_refusal(proc, *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for word in words:
        assert word in lines[0], lines[0]


def _setup(tmp_path: Path) -> tuple[Path, Path, str]:
    ws = tmp_path / "ws"
    ws.mkdir()
    repo, sha = make_repo(tmp_path / "repo", message="v1 ran")
    return ws, repo, sha


def test_a_tagged_release_runs_and_the_run_records_its_commit(
    tmp_path: Path, state_home: Path
) -> None:
    ws, repo, sha = _setup(tmp_path)
    proc = _exec(ws, tmp_path, f"git+file://{repo}@v1#once")
    assert proc.returncode == 0, proc.stderr
    assert "v1 ran" in proc.stderr
    st = status(ws)
    assert st["flow"] == "once"
    assert st["flow_source"] == f"git+file://{repo}@{sha}#once"
    # Cloned once, under its commit, in the state home.
    [checkout] = (state_home / "flows" / "git").glob(f"*/{sha}")
    assert (checkout / "once" / "__init__.py").is_file()
    assert not list(checkout.rglob("__pycache__"))  # the checkout stays exactly its commit


def test_a_pinned_tag_loads_from_the_cache_when_the_remote_is_gone(tmp_path: Path) -> None:
    ws, repo, _sha = _setup(tmp_path)
    assert _exec(ws, tmp_path, f"git+file://{repo}@v1#once").returncode == 0
    shutil.move(repo, tmp_path / "elsewhere")
    proc = _exec(
        ws, tmp_path, f"git+file://{repo}@v1#once", params="budget.turns=5,resume_mode=fresh"
    )
    assert proc.returncode == 0, proc.stderr
    assert "v1 ran" in proc.stderr


def test_a_tag_that_moved_is_refused_unless_refreshed(tmp_path: Path) -> None:
    ws, repo, _sha = _setup(tmp_path)
    ref = f"git+file://{repo}@v1#once"
    assert _exec(ws, tmp_path, ref).returncode == 0
    change_flow(repo, "v1 re-tagged")
    moved = commit(repo, "re-tag", "v1", force=True)
    proc = _exec(ws, tmp_path, ref, params="budget.turns=5,resume_mode=fresh")
    _one_line_refusal(proc, "tag v1", moved[:12], "--refresh")
    assert len(_runs(ws)) == 1  # nothing new ran
    proc = _exec(ws, tmp_path, ref, "--refresh", params="budget.turns=5,resume_mode=fresh")
    assert proc.returncode == 0, proc.stderr
    assert "v1 re-tagged" in proc.stderr
    assert status(ws)["flow_source"] == f"git+file://{repo}@{moved}#once"


def test_a_lightweight_tag_a_branch_and_a_commit_all_resolve(tmp_path: Path) -> None:
    _ws, repo, first = _setup(tmp_path)
    change_flow(repo, "v2 ran")
    second = commit(repo, "v2", "v2", annotated=False)
    for rev, sha, said in (
        ("v2", second, "v2 ran"),
        ("main", second, "v2 ran"),
        (first[:10], first, "v1 ran"),
        (first, first, "v1 ran"),
        (None, second, "v2 ran"),
    ):
        ref = f"git+file://{repo}" + (f"@{rev}" if rev else "") + "#once"
        flow = load_flow(ref)
        assert said == sys.modules[type(flow).__module__].MESSAGE
        assert flow_identity(flow, ref)[0] == f"git+file://{repo}@{sha}#once"


def test_one_commit_hashes_the_same_in_every_process(tmp_path: Path) -> None:
    _ws, repo, _sha = _setup(tmp_path)
    ref = f"git+file://{repo}@v1#once"
    code = (
        "from flamechase.loader import load_flow, flow_identity as i; "
        f"r = {ref!r}; print(*i(load_flow(r), r))"
    )
    seen = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(n)},
        ).stdout
        for n in (1, 2)
    }
    assert len(seen) == 1
    source, digest = seen.pop().split()
    assert (source, digest) == flow_identity(load_flow(ref), ref)
    change_flow(repo, "v2")
    other = commit(repo, "v2")
    assert flow_identity(load_flow(f"git+file://{repo}@{other}#once"), "")[1] != digest


def test_a_named_flow_in_the_subdir_is_picked(tmp_path: Path) -> None:
    ws, repo, sha = _setup(tmp_path)
    proc = _exec(ws, tmp_path, f"git+file://{repo}@v1#once:OTHER")
    assert proc.returncode == 0, proc.stderr
    st = status(ws)
    assert st["flow"] == "once_other"
    assert st["flow_source"] == f"git+file://{repo}@{sha}#once:OTHER"


def test_a_flow_at_the_repository_root(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    repo = tmp_path / "rootflow"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "__init__.py").write_text(flow_source("root ran"))
    commit(repo, "root", "v1")
    proc = _exec(ws, tmp_path, f"git+file://{repo}@v1")
    assert proc.returncode == 0, proc.stderr
    assert "root ran" in proc.stderr


def test_resuming_with_other_code_from_a_moved_branch_is_refused(tmp_path: Path) -> None:
    ws, repo, _sha = _setup(tmp_path)
    ref = f"git+file://{repo}@main#once"
    first = _exec(ws, tmp_path, ref, params="budget.turns=1,turns=3")
    assert first.returncode == 0, first.stderr  # the budget ended it after one of three turns
    change_flow(repo, "v2 ran")
    commit(repo, "v2")
    proc = _exec(ws, tmp_path, ref, params="budget.turns=5")
    _one_line_refusal(proc, "other code of flow once", "--refresh")
    proc = _exec(ws, tmp_path, ref, "--refresh", params="budget.turns=5")
    assert proc.returncode == 0, proc.stderr
    assert "v2 ran" in proc.stderr
    assert len(_runs(ws)) == 1  # the same run, picked up with the new code


def test_the_same_commit_resumes_without_refresh(tmp_path: Path) -> None:
    ws, repo, _sha = _setup(tmp_path)
    ref = f"git+file://{repo}@v1#once"
    assert _exec(ws, tmp_path, ref, params="budget.turns=1,turns=2").returncode == 0
    proc = _exec(ws, tmp_path, ref, params="budget.turns=5")
    assert proc.returncode == 0, proc.stderr
    assert len(_runs(ws)) == 1


def test_an_unreachable_url_is_one_line(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    _one_line_refusal(
        _exec(ws, tmp_path, f"git+file://{tmp_path}/missing@v1#once"), "could not be reached"
    )
    # Loopback only: a port nobody listens on.
    _one_line_refusal(
        _exec(ws, tmp_path, "git+http://127.0.0.1:9/none.git@v1"), "could not be reached"
    )


@pytest.mark.parametrize(
    ("suffix", "words"),
    [
        ("@nope#once", "no branch, tag or commit"),
        ("@v1#missing", "has no missing"),
        ("@v1", "not a flow package"),
        ("@v1#once:NOPE", "defines no NOPE"),
        ("@v1#../etc", "inside the repository"),
        ("@v1#once:1x", "not a flow name"),
    ],
)
def test_git_refusals_are_one_line(tmp_path: Path, suffix: str, words: str) -> None:
    _ws, repo, _sha = _setup(tmp_path)
    with pytest.raises(FlowNotFound) as caught:
        load_flow(f"git+file://{repo}{suffix}")
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_a_git_refusal_through_exec_writes_no_run(tmp_path: Path, state_home: Path) -> None:
    ws, repo, _sha = _setup(tmp_path)
    _one_line_refusal(_exec(ws, tmp_path, f"git+file://{repo}@v1#missing"), "has no missing")
    assert not (state_home / "runs").exists()


def test_a_changed_cached_checkout_is_refused(tmp_path: Path, state_home: Path) -> None:
    ws, repo, sha = _setup(tmp_path)
    assert _exec(ws, tmp_path, f"git+file://{repo}@v1#once").returncode == 0
    [checkout] = (state_home / "flows" / "git").glob(f"*/{sha}")
    (checkout / "once" / "__init__.py").write_text("FLOW = None\n")
    proc = _exec(
        ws, tmp_path, f"git+file://{repo}@v1#once", params="budget.turns=5,resume_mode=fresh"
    )
    _one_line_refusal(proc, "was changed", "delete it")


def test_a_pinned_flows_helper_it_never_imports_is_in_its_code_hash(tmp_path: Path) -> None:
    repo, _ = make_repo(tmp_path / "repo")
    (repo / "once" / "words.py").write_text("PROMPT = 'first'\n")
    commit(repo, "words", "v2")
    (repo / "once" / "words.py").write_text("PROMPT = 'second'\n")
    commit(repo, "other words", "v3")
    hashes = {
        flow_identity(load_flow(f"git+file://{repo}@{tag}#once"), "")[1]
        for tag in ("v1", "v2", "v3")
    }
    assert len(hashes) == 3
