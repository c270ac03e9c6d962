"""With no RUN named, the view commands show this directory's latest run, and say so when it
is not the newest anywhere; `last` keeps meaning the newest run anywhere."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.helpers import cli


def _run(ws: Path, params: str = "budget.turns=1,resume_mode=fresh") -> str:
    proc = cli(
        "exec",
        "-f",
        "flame_chase",
        "-a",
        "sim/steady",
        "-a",
        "sim/steady",
        "-p",
        f"{params},rest_seconds=0.05",
        "improve it",
        cwd=ws,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    st = json.loads(cli("status", "--json", cwd=ws, check=True).stdout)
    return str(st["id"])


def test_the_view_commands_pick_this_directorys_latest_run(
    source_tree: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    shutil.copytree(source_tree, other)
    mine = _run(source_tree)
    newest = _run(other)
    assert mine != newest
    (source_tree / "pkg").mkdir(exist_ok=True)
    for where in (source_tree, source_tree / "pkg"):
        st = cli("status", "--json", cwd=where, check=True)
        assert json.loads(st.stdout)["id"] == mine
        assert f"run {mine}: this directory's latest" in st.stderr
        assert f"the newest anywhere is {newest}, `last`" in st.stderr
    for args in (["events", "--json"], ["show"], ["artifacts", "--json"]):
        proc = cli(*args, cwd=source_tree, check=True)
        assert mine in proc.stderr, args
    trace = cli("trace", "-o", str(tmp_path / "t.json"), cwd=source_tree, check=True)
    assert f"of run {mine}" in trace.stdout
    # `last` is the newest anywhere, said without a note; the newest's own directory needs none.
    last = cli("status", "last", "--json", cwd=source_tree, check=True)
    assert json.loads(last.stdout)["id"] == newest and not last.stderr
    here = cli("status", "--json", cwd=other, check=True)
    assert json.loads(here.stdout)["id"] == newest and not here.stderr
    # A directory no run was made on: the newest anywhere, said as such.
    (tmp_path / "empty").mkdir()
    elsewhere = cli("status", "--json", cwd=tmp_path / "empty", check=True)
    assert json.loads(elsewhere.stdout)["id"] == newest
    assert "no run on" in elsewhere.stderr and f"run {newest} on {other}" in elsewhere.stderr


def test_after_a_resume_the_view_commands_pick_the_resumed_run(
    source_tree: Path, tmp_path: Path
) -> None:
    mine = _run(source_tree)
    other = tmp_path / "other"
    shutil.copytree(source_tree, other)
    newer = _run(other)
    # The same command with more room resumes this directory's run.
    assert _run(source_tree, "budget.turns=2") == mine
    for args in (["status", "--json"], ["events", "--json"], ["show"], ["artifacts", "--json"]):
        proc = cli(*args, cwd=source_tree, check=True)
        assert f"run {mine}: this directory's latest (the newest anywhere is {newer}" in (
            proc.stderr
        ), args
    st = json.loads(cli("status", "--json", cwd=source_tree, check=True).stdout)
    assert st["id"] == mine and st["budget"]["turns"]["used"] == 2
    assert '"run_resumed"' in cli("events", "--json", cwd=source_tree, check=True).stdout
    # `last` keeps its meaning, the newest run made anywhere; its own directory needs no note.
    assert (
        json.loads(cli("status", "last", "--json", cwd=source_tree, check=True).stdout)["id"]
        == newer
    )
    there = cli("status", "--json", cwd=other, check=True)
    assert json.loads(there.stdout)["id"] == newer and not there.stderr
