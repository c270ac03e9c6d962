"""Real `flamechase exec` runs with the fake CLIs first on PATH: a claude/codex flame_chase
counts every turn's cost and links each turn's transcript; a mixed parallel_flame_chase
(coordinator on codex, lanes on claude, gemini, opencode and an ACP agent) runs to its budget;
a usage limit pauses the lane with `paused_until`; refusals (missing CLI, unknown effort, a
cost budget nothing can see) happen before anything runs, in one line, exit 2."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.agents.fakes import install_fakes, path_with

pytestmark = pytest.mark.slow


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    bin_dir = install_fakes(tmp_path / "bin")
    base = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_")}
    return {
        **base,
        "PATH": path_with(bin_dir),
        "FAKE_STATE_DIR": str(tmp_path / "fake-state"),
        "CODEX_HOME": str(tmp_path / "codex-home"),
        "FLAMECHASE_RETRY_DELAYS": "0,0,0",
    }


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("sample\n")
    return ws


def flamechase(
    args: list[str], env: dict[str, str], cwd: Path, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flamechase", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def status(env: dict[str, str], cwd: Path) -> dict[str, Any]:
    done = flamechase(["status", "last", "--json"], env, cwd)
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def events(env: dict[str, str], cwd: Path) -> list[dict[str, Any]]:
    done = flamechase(["events", "last", "--json"], env, cwd)
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def test_flame_chase_on_claude_and_codex_counts_cost_and_keeps_transcripts(
    env: dict[str, str], workspace: Path
) -> None:
    done = flamechase(
        [
            "exec",
            "-f",
            "flame_chase",
            "-a",
            "first_chaser=claude/claude-opus-4-5:high",
            "-a",
            "second_chaser=codex/gpt-5:high",
            "-p",
            # The fakes keep their state outside the lane (see the parallel test below).
            "budget.turns=4,rest_seconds=0.05,sandbox=off",
            "add a line to NOTES.md",
        ],
        env,
        workspace,
    )
    assert done.returncode == 0, done.stderr
    st = status(env, workspace)
    assert st["status"] == "finished"
    assert st["budget"]["turns"]["used"] == 4
    # 2 × claude (reported, 0.0009) + 2 × codex (priced gpt-5: 200 in, 800 cached, 50 out).
    codex_turn = (200 * 1.25 + 800 * 0.125 + 50 * 10) / 1e6
    assert st["budget"]["cost"]["used"] == pytest.approx(2 * 0.0009 + 2 * codex_turn, abs=1e-4)
    valid = [e for e in events(env, workspace) if e["kind"] == "turn_valid"]
    assert len(valid) == 4
    for event in valid:
        transcript = Path(event["payload"]["transcript"])
        assert gzip.decompress(transcript.read_bytes()).strip()


def test_a_mixed_parallel_run_works_end_to_end(env: dict[str, str], workspace: Path) -> None:
    plan = {
        "lanes": [
            {
                "lane": f"lane-{i}",
                "mission": {"title": f"m{i}", "objective": "o", "success_criteria": ["c"]},
            }
            for i in (1, 2, 3)
        ]
    }
    env = {**env, "FAKE_REPORT_COORDINATOR": json.dumps(plan)}
    done = flamechase(
        [
            "exec",
            "-f",
            "parallel_flame_chase",
            "-a",
            "coordinator=codex/gpt-5:high",
            "-a",
            "lane_1_actor_a=claude/claude-opus-4-5:max,lane_1_actor_b=gemini/gemini-2.5-pro",
            "-a",
            "lane_2_actor_a=acp:fake-acp,lane_2_actor_b=opencode/anthropic/claude-sonnet-4-5",
            "-a",
            "lane_3_actor_a=claude/opus,lane_3_actor_b=codex/gpt-5",
            "-p",
            # The fakes keep their own state outside the lanes' directories; the sandbox
            # (tested in tests/engine/test_sandbox.py) would refuse those writes.
            "budget.turns=6,rest_seconds=0.05,sandbox=off",
            "improve it",
        ],
        env,
        workspace,
    )
    assert done.returncode == 0, done.stderr
    st = status(env, workspace)
    assert st["status"] == "finished"
    assert {lane["lane"]: lane["valid_turns"] >= 1 for lane in st["lanes"]} == {
        "lane-1": True,
        "lane-2": True,
        "lane-3": True,
    }


def test_a_usage_limit_pauses_the_lane_until_the_reset(
    env: dict[str, str], workspace: Path
) -> None:
    env = {**env, "FAKE_CLAUDE_SCENARIO": "limit"}
    done = flamechase(
        [
            "exec",
            "-f",
            "flame_chase",
            "-a",
            "first_chaser=claude/claude-opus-4-5",
            "-a",
            "second_chaser=codex/gpt-5",
            "-p",
            "budget.turns=3,budget.duration=3s,rest_seconds=0.05,sandbox=off",
            "add a line",
        ],
        env,
        workspace,
    )
    assert done.returncode == 0, done.stderr
    st = status(env, workspace)
    assert st["budget"]["turns"]["used"] == 0  # a limited attempt is not a turn spent
    [lane] = st["lanes"]
    # The fake says "Weekly limit reached ∙ resets 5am": the next 5am, local time.
    paused = datetime.fromisoformat(lane["paused_until"].replace("Z", "+00:00"))
    assert paused > datetime.now(UTC)
    assert (paused.astimezone().hour, paused.astimezone().minute) == (5, 0)
    assert lane["consecutive_failures"] == 0
    assert lane["held"] is False


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        ("first_chaser=claude/opus:turbo", "claude cannot take effort 'turbo'; expected one of"),
        ("first_chaser=gemini/gemini-2.5-pro:high", "gemini cannot take effort 'high'"),
    ],
)
def test_bad_efforts_are_refused_before_the_run(
    env: dict[str, str], workspace: Path, agent: str, message: str
) -> None:
    done = flamechase(
        [
            "exec",
            "-f",
            "flame_chase",
            "-a",
            agent,
            "-a",
            "second_chaser=codex/gpt-5",
            "-p",
            "budget.turns=2",
            "x",
        ],
        env,
        workspace,
    )
    assert done.returncode == 2
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_missing_cli_is_refused_with_its_install_hint(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    env = {**env, "PATH": str(tmp_path / "nothing") + os.pathsep + "/usr/bin:/bin"}
    done = flamechase(
        [
            "exec",
            "-f",
            "flame_chase",
            "-a",
            "first_chaser=claude/opus",
            "-a",
            "second_chaser=claude/opus",
            "-p",
            "budget.turns=2",
            "x",
        ],
        env,
        workspace,
    )
    assert done.returncode == 2
    assert "claude is not installed: npm install -g @anthropic-ai/claude-code" in done.stderr


def test_a_cost_budget_nothing_can_see_is_refused(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    # codex reports tokens only, and a price table with no models cannot count them.
    empty = tmp_path / "prices.json"
    empty.write_text('{"date": "2026-01-01", "models": {}}')
    env = {**env, "FLAMECHASE_PRICES": str(empty)}
    done = flamechase(
        [
            "exec",
            "-f",
            "flame_chase",
            "-a",
            "first_chaser=claude/opus",
            "-a",
            "second_chaser=codex/gpt-unknown",
            "-p",
            "budget.cost=1",
            "x",
        ],
        env,
        workspace,
    )
    assert done.returncode == 2
    assert "FLAMECHASE_PRICES" in done.stderr
