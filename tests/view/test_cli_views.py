"""`simulate`, `demo` and `show` through the real CLI."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flamechase.flows import builtin_names
from flamechase.view.replay_pack import read_document
from tests.helpers import cli, status


def _doc(html: Path) -> dict:  # type: ignore[type-arg]
    return read_document(html.read_text())


def test_help_lists_the_view_commands(tmp_path: Path) -> None:
    out = cli("--help", cwd=tmp_path, check=True).stdout
    for name in ("show", "simulate", "demo", "serve", "trace"):
        assert re.search(rf"^\s+{name}\s", out, re.M), name


@pytest.mark.parametrize("flow", builtin_names())
def test_simulate_every_builtin_flow(flow: str, tmp_path: Path, state_home: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    # parrallello runs its protocol to the end (a planner, prep, rounds, the runtime's gate
    # runs), not to a turn budget: it takes longer.
    fronts = flow == "parrallello"
    proc = cli(
        "simulate", flow, cwd=tmp_path, env={"TMPDIR": str(scratch)}, timeout=400 if fronts else 110
    )
    assert proc.returncode == 0, proc.stderr
    html = tmp_path / f"{flow}-simulation.html"
    doc = _doc(html)
    kinds = [p["k"] for p in doc["points"]]
    assert kinds[0] == "run_created" and kinds[-1] == "run_finished"
    assert doc["run"]["flow"] == flow
    assert f"replay: {html.name}" in proc.stdout
    # Every place, program and measurement is said as the flow labels it: never the words
    # the engine falls back on (a place's name in brackets, a program's argv, a key).
    said = [str(p["x"]) for p in doc["points"]]
    for fallback in (
        r"\ba private copy of your tree \(",
        r"an empty place \(",
        r" laid over \(",
        r"The runtime runs [^ ]*(python|/bin/sh|gitpr|treesync)",
        r"measures [a-z]+/",
    ):
        assert not [s for s in said if re.search(fallback, s)], fallback
    if fronts:
        assert kinds.count("verdict_recorded") >= 2 and "front_integrated" in kinds
        assert "turns per lane: f1 " in proc.stdout
    else:
        # Twelve lane turns, and the planning sessions (turns outside lanes) of flows
        # that plan, and the audit decisions of parallel_flame_chase_mission.
        outside = sum(
            kinds.count(k) for k in ("plan_attempt", "audit_decided", "decision_discarded")
        )
        assert kinds.count("turn_valid") == 12 + outside
        assert "turns per lane: lane-1 " in proc.stdout
    # Throw-away: nothing left in the scratch area nor in the user's state home.
    assert list(scratch.iterdir()) == []
    assert not (state_home / "runs").exists()
    if flow == "parallel_flame_chase":
        assert "best candidate: steps = " in proc.stdout
        assert re.search(r"artifacts: [1-9]\d* published", proc.stdout)
        # Its run and copy are gone: nothing says to take a candidate from them.
        assert "artifacts apply" not in proc.stdout + proc.stderr


def test_simulate_a_users_workspace_leaves_it_untouched(source_tree: Path, tmp_path: Path) -> None:
    before = {p: p.read_bytes() for p in source_tree.rglob("*") if p.is_file()}
    out = tmp_path / "mine.html"
    proc = cli(
        "simulate",
        "parallel_flame_chase",
        "--workspace",
        str(source_tree),
        "--html",
        str(out),
        "-p",
        "lanes=2,budget.turns=4",
        cwd=tmp_path,
        timeout=110,
    )
    assert proc.returncode == 0, proc.stderr
    assert {p: p.read_bytes() for p in source_tree.rglob("*") if p.is_file()} == before
    doc = _doc(out)
    assert [ln["name"] for ln in doc["lanes"]] == ["lane-1", "lane-2"]
    assert any("NOTES.md" in p["x"] for p in doc["points"])
    assert "best candidate: none ranked" in proc.stdout


def test_simulate_keep_records_the_run(tmp_path: Path, state_home: Path) -> None:
    proc = cli(
        "simulate",
        "flame_chase",
        "--keep",
        "-p",
        "budget.turns=2",
        "--html",
        str(tmp_path / "r.html"),
        cwd=tmp_path,
        env={"TMPDIR": str(tmp_path)},
        timeout=110,
    )
    assert proc.returncode == 0, proc.stderr
    st = status(tmp_path)
    assert st["status"] == "finished" and st["budget"]["turns"]["used"] == 2
    assert f"run {st['id']}" in proc.stdout
    shown = cli("show", "last", cwd=tmp_path, check=True).stdout
    assert shown.startswith(f"run {st['id']} · flame_chase · finished · 2 turns")
    del state_home


def test_simulate_refuses_an_unknown_flow_and_real_agents(tmp_path: Path) -> None:
    proc = cli("simulate", "no_such_flow", cwd=tmp_path)
    assert proc.returncode == 2
    assert "no flow called" in proc.stderr
    proc = cli("simulate", "flame_chase", "-a", "first_chaser=claude/opus:high", cwd=tmp_path)
    assert proc.returncode == 2
    assert "sim/PROFILE only" in proc.stderr


def test_demo_runs_the_sample_and_summarises(tmp_path: Path) -> None:
    proc = cli("demo", cwd=tmp_path, timeout=110)
    assert proc.returncode == 0, proc.stderr
    dest = tmp_path / "flamechase-demo"
    out = proc.stdout
    assert f"copied the sample repository to {dest}" in out
    assert (dest / "bench.py").is_file() and (dest / "TASK.md").is_file()
    for line in (
        "turns per lane: lane-1 ",
        "reports: ",
        "artifacts: ",
        "best candidate: steps",
        f"replay: {dest}.html",
    ):
        assert line in out, line
    assert re.search(r"(\d+) received by another lane", out)
    # Progress while it ran (no terminal here: a line per finished turn, on stderr).
    assert proc.stderr.count(" turn ") >= 12
    # Recorded in the user's state home, so `status last` finds it.
    st = status(tmp_path)
    assert st["workspace"] == str(dest) and st["status"] == "finished"
    doc = _doc(Path(f"{dest}.html"))
    assert doc["run"]["id"] == st["id"]
    # Its hints name the run it made.
    assert f"next: flamechase status {st['id']} · flamechase events {st['id']}" in out
    # Again: a fresh directory, never the first one.
    again = cli("demo", "-p", "budget.turns=3", cwd=tmp_path, timeout=110)
    assert again.returncode == 0, again.stderr
    assert f"copied the sample repository to {dest}-2" in again.stdout


def test_demo_refuses_a_non_empty_dir(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    proc = cli("demo", "--dir", str(tmp_path / "full"), cwd=tmp_path)
    assert proc.returncode == 2
    assert "not empty" in proc.stderr
