"""The user's own command lines (../shared/seeds/) run as written, with fake CLIs on PATH.

Seed line 1 names models no price table lists yet (`codex/gpt-5.6-sol`, `claude/claude-opus-5`)
beside a cost budget. It runs: codex's tokens are counted at the highest openai rates listed,
said once at start; claude reports its own cost. A cost budget on such a model still stops.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from flamechase.agents.usage import TokenCounts, cost_bound, unpriced_notice
from flamechase.errors import StoreError
from flamechase.store.reader import Reader
from tests.agents.fakes import install_fakes, path_with
from tests.helpers import status

SEED_1 = """flamechase exec -f parallel_flame_chase \\
    -a coordinator=codex/gpt-5.6-sol:max \\
    -a lane_1_actor_a=claude/claude-opus-5:max,lane_1_actor_b=codex/gpt-5.6-sol:max \\
    -a lane_2_actor_a=claude/claude-opus-5:max,lane_2_actor_b=codex/gpt-5.6-sol:max \\
    -a lane_3_actor_a=claude/claude-opus-5:max,lane_3_actor_b=codex/gpt-5.6-sol:max \\
    -p budget.duration=12h,budget.cost=500 "$(cat TASK.md)"
"""

PLAN = {
    "lanes": [
        {
            "lane": f"lane-{i}",
            "mission": {"title": f"m{i}", "objective": "o", "success_criteria": ["c"]},
        }
        for i in (1, 2, 3)
    ]
}

# What fake codex reports per turn: 1000 input tokens of which 800 cached, 50 output.
CODEX_TURN = TokenCounts(input=200, output=50, cache_read=800)


@pytest.fixture
def seed_env(tmp_path: Path) -> dict[str, str]:
    """The fake CLIs and a `flamechase` launcher first on PATH; fakes keep state in TMPDIR."""
    bin_dir = install_fakes(tmp_path / "bin")
    launcher = bin_dir / "flamechase"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m flamechase "$@"\n')
    launcher.chmod(0o755)
    (tmp_path / "tmp").mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("FAKE_") and k not in ("FLAMECHASE_PRICES", "CODEX_HOME")
    }
    return {
        **env,
        "PATH": path_with(bin_dir),
        "TMPDIR": str(tmp_path / "tmp"),
        "FAKE_REPORT_COORDINATOR": json.dumps(PLAN),
        "FLAMECHASE_RETRY_DELAYS": "0,0,0",
    }


@pytest.fixture
def task_tree(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "TASK.md").write_text("get the solver under 10 s on every benchmark in bench/\n")
    (ws / "solver.py").write_text("print('slow')\n")
    return ws


def _events(home: Path) -> list[dict[str, Any]]:
    dbs = list((home / "runs").glob("*/run.db")) if (home / "runs").exists() else []
    if not dbs:
        return []
    try:
        with Reader(dbs[0]) as r:
            return r.events()
    except StoreError:  # not created yet
        return []


def test_seed_line_with_unpriced_models_and_a_cost_budget_runs_as_written(
    seed_env: dict[str, str], task_tree: Path, state_home: Path
) -> None:
    proc = subprocess.Popen(
        ["bash", "-c", SEED_1],
        cwd=task_tree,
        env=seed_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        # Runs until its budget or a stop: stop it once every lane's codex actor has counted.
        deadline = time.monotonic() + 90
        while proc.poll() is None and time.monotonic() < deadline:
            done = {
                e["lane"]
                for e in _events(state_home)
                if e["kind"] == "turn_valid" and str(e["actor"]).endswith("_actor_b")
            }
            if done == {"lane-1", "lane-2", "lane-3"}:
                break
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    notice = unpriced_notice("gpt-5.6-sol")
    assert notice is not None
    # Four roles share the model: said once, in one line, before any turn.
    said = out + err
    assert said.count("gpt-5.6-sol has no price") == 1, said
    assert notice in said
    assert said.index(notice) < said.index(" turn 1 ")
    assert "claude-opus-5 has no price" not in said  # claude reports its own cost
    evs = _events(state_home)
    bound = cost_bound("gpt-5.6-sol")
    assert bound is not None
    codex_turns = [
        e for e in evs if e["kind"] == "turn_valid" and str(e["actor"]).endswith("_actor_b")
    ]
    assert len(codex_turns) >= 3
    for e in codex_turns:
        assert e["payload"]["cost_usd"] == pytest.approx(bound.price.cost(CODEX_TURN))
    st = status(task_tree)
    assert st["budget"]["cost"]["limit"] == 500
    assert st["budget"]["duration"]["limit"] == 12 * 3600
    assert st["budget"]["cost"]["used"] > len(codex_turns) * bound.price.cost(CODEX_TURN)


def test_a_cost_budget_stops_a_run_of_an_unpriced_model(
    seed_env: dict[str, str], task_tree: Path
) -> None:
    per_turn = cost_bound("gpt-5.6-sol").price.cost(CODEX_TURN)  # type: ignore[union-attr]
    # Two turns stay under the budget, the third crosses it: the run stops there.
    limit = 2.5 * per_turn
    proc = subprocess.run(
        [
            "flamechase",
            "exec",
            "-f",
            "flame_chase",
            "-a",
            "codex/gpt-5.6-sol:max",
            "-a",
            "codex/gpt-5.6-sol:max",
            "-p",
            f"budget.cost={limit},rest_seconds=0.05",
            "get the solver faster",
        ],
        cwd=task_tree,
        env=seed_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr
    said = proc.stdout + proc.stderr
    assert said.count("gpt-5.6-sol has no price") == 1, said
    st = status(task_tree)
    assert st["status"] == "finished"
    assert st["budget"]["turns"]["used"] == 3
    assert st["budget"]["cost"]["used"] == pytest.approx(3 * per_turn)


SEED_2 = """flamechase exec -f parallel_flame_chase \\
    -a codex/gpt-5.6-sol:max \\
    -a claude/claude-opus-5:max -a codex/gpt-5.6-sol:max \\
    -a claude/claude-opus-5:max -a codex/gpt-5.6-sol:max \\
    -a claude/claude-opus-5:max -a codex/gpt-5.6-sol:max "$(cat TASK.md)"
"""


def test_the_positional_seed_line_without_a_budget_runs_until_stopped(
    seed_env: dict[str, str], task_tree: Path, state_home: Path
) -> None:
    proc = subprocess.Popen(
        ["bash", "-c", SEED_2],
        cwd=task_tree,
        env=seed_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        # Positional agents fill the roles in order: the coordinator plans, then every lane
        # works; with no budget the run goes on until it is stopped.
        deadline = time.monotonic() + 90
        while proc.poll() is None and time.monotonic() < deadline:
            lanes = {e["lane"] for e in _events(state_home) if e["kind"] == "turn_valid"}
            if {"lane-1", "lane-2", "lane-3"} <= lanes:
                break
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    said = out + err
    assert "no budget: this run goes on until you stop it" in said
    assert "stopping:" in said.lower()  # the first Ctrl-C is answered at once
    st = status(task_tree)
    assert st["status"] == "stopped" and st["budget"]["unbounded"] is True
    roles = {e["actor"] for e in _events(state_home) if e["kind"] == "turn_started"}
    assert {"coordinator", "lane_1_actor_a", "lane_2_actor_a", "lane_3_actor_a"} <= roles
