"""Indexes by name: `flows install NAME` with no index installs from `official` (offline, with
its variants); `flows index add NAME SOURCE` makes `--index NAME` work everywhere."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.flows.loading_repos import index_yaml, make_repo
from tests.helpers import cli

# No network and no git transport: what installs from `official` must need neither.
OFFLINE = {"GIT_ALLOW_PROTOCOL": "none", "https_proxy": "http://127.0.0.1:9"}


def _one_line_refusal(proc: subprocess.CompletedProcess[str], words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert words in line, line


def test_install_with_no_index_takes_the_official_release_and_its_variant(
    tmp_path: Path, state_home: Path
) -> None:
    proc = cli("flows", "install", "parallel_flame_chase", cwd=tmp_path, env=OFFLINE, check=True)
    assert "from the official index" in proc.stdout
    assert "with parallel_flame_chase:git_pr" in proc.stdout
    record = json.loads((state_home / "flows/installed/parallel_flame_chase.json").read_text())
    assert record["index"] == "official"
    assert record["variants"] == ["parallel_flame_chase:git_pr"]
    rows = json.loads(cli("flows", "list", "--json", cwd=tmp_path, check=True).stdout)
    got = {r["name"]: r["from"] for r in rows}
    assert got["parallel_flame_chase"].startswith("built-in, installed from official")
    assert got["parallel_flame_chase:git_pr"].startswith("built-in, installed from official")
    assert [r["name"] for r in rows].count("parallel_flame_chase") == 1
    # Both run from the installed release: the built-in code, verified against its hash.
    for ref in ("parallel_flame_chase", "parallel_flame_chase:git_pr"):
        shown = cli("flows", "show", ref, cwd=tmp_path, check=True).stdout
        assert f"source: builtin:{ref}" in shown


def test_an_installed_release_whose_code_changed_is_refused_with_the_fix(
    tmp_path: Path, state_home: Path
) -> None:
    cli("flows", "install", "parallel_flame_chase@2", cwd=tmp_path, check=True)
    path = state_home / "flows/installed/parallel_flame_chase.json"
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "code_hash": "0" * 64}))
    _one_line_refusal(
        cli("flows", "show", "parallel_flame_chase", cwd=tmp_path),
        "`flamechase flows install parallel_flame_chase` installs that one",
    )
    cli("flows", "install", "parallel_flame_chase", cwd=tmp_path, check=True)
    cli("flows", "show", "parallel_flame_chase", cwd=tmp_path, check=True)


def test_official_refuses_what_it_does_not_have(tmp_path: Path) -> None:
    _one_line_refusal(
        cli("flows", "install", "parallel_flame_chase@9", cwd=tmp_path),
        "has no version 9 of parallel_flame_chase; it has 2",
    )
    _one_line_refusal(
        cli("flows", "install", "nope", "--index", "official", cwd=tmp_path),
        "index official has no flow 'nope'; it has: flame_chase, parallel_flame_chase",
    )


def test_an_added_index_is_used_by_name(tmp_path: Path) -> None:
    repo, sha = make_repo(tmp_path / "repo", message="v1 ran")
    index = tmp_path / "index.yaml"
    entry = {
        "name": "once",
        "version": "1.0.0",
        "repo": f"file://{repo}",
        "commit": sha,
        "subdir": "once",
    }
    index.write_text(index_yaml([entry]))
    added = cli("flows", "index", "add", "mine", str(index), cwd=tmp_path, check=True)
    assert "added index mine (1 flows)" in added.stdout
    listed = cli("flows", "index", "list", cwd=tmp_path, check=True).stdout.splitlines()
    assert listed[0].startswith("official  shipped with flamechase")
    assert listed[1] == f"mine  {index}"
    rows = json.loads(cli("flows", "list", "--index", "mine", "--json", cwd=tmp_path).stdout)
    assert any(r["name"] == "once" for r in rows)
    proc = cli("flows", "install", "once", "--index", "mine", cwd=tmp_path, check=True)
    assert f"installed once 1.0.0 from file://{repo}@{sha}" in proc.stdout
    cli("flows", "index", "remove", "mine", cwd=tmp_path, check=True)
    _one_line_refusal(cli("flows", "index", "remove", "mine", cwd=tmp_path), "no added index")


def test_adding_refuses_a_bad_name_or_an_index_that_does_not_read(tmp_path: Path) -> None:
    _one_line_refusal(
        cli("flows", "index", "add", "official", str(tmp_path), cwd=tmp_path),
        "official is the index flamechase ships",
    )
    _one_line_refusal(
        cli("flows", "index", "add", "gone", str(tmp_path / "nowhere.yaml"), cwd=tmp_path),
        "does not exist",
    )
    _one_line_refusal(
        cli("flows", "index", "add", "a b", str(tmp_path), cwd=tmp_path), "not an index name"
    )
