"""Failover through the real command line, with the fake claude and codex first on PATH: the
first chaser is given two saved claude accounts; account `work` hits a usage window (the fake
says "You've hit your session limit · resets in N seconds"), its turn is taken again on `home`
at once, and after the reset the role is back on `work`. `status` lists the alternatives and
the current one, and the budget counts what both accounts spent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.agents.fakes import install_fakes, path_with
from tests.agents.test_end_to_end import events, flamechase, status

WORK = "claude@work/claude-opus-4-5"
HOME = "claude@home/claude-opus-4-5"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    bin_dir = install_fakes(tmp_path / "bin")
    base = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_")}
    env = {
        **base,
        "PATH": path_with(bin_dir),
        "FLAMECHASE_HOME": str(tmp_path / "fc-home"),
        "FAKE_STATE_DIR": str(tmp_path / "fake-state"),
        "CODEX_HOME": str(tmp_path / "codex-home"),
        "FLAMECHASE_RETRY_DELAYS": "0,0,0",
        # Account `work`'s window closes at its first ask and reopens two seconds later.
        "FAKE_CLAUDE_SCENARIO_WORK": "limit_for:2",
    }
    key = tmp_path / "key"
    key.write_text("sk-test\n")
    for name in ("work", "home"):
        added = flamechase(
            ["accounts", "add", "claude", name, "--api-key-file", str(key)], env, tmp_path
        )
        assert added.returncode == 0, added.stderr
    return env


def test_a_usage_window_moves_the_role_to_its_second_account_and_back_after_the_reset(
    env: dict[str, str], tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("sample\n")
    done = flamechase(
        [
            "exec",
            "-f",
            "flame_chase",
            "-a",
            f"first_chaser={WORK}|{HOME}",
            "-a",
            "second_chaser=codex/gpt-5",
            # Three rests of a second between the window's close and the first chaser's next
            # turn: it starts after the two-second window, however fast the turns are.
            "-p",
            "budget.turns=4,rest_seconds=1,sandbox=off",
            "add a line",
        ],
        env,
        ws,
    )
    assert done.returncode == 0, done.stderr
    log = events(env, ws)
    starts = [
        (e["payload"]["turn"], e["payload"]["backend"])
        for e in log
        if e["kind"] == "turn_started" and e["actor"] == "first_chaser"
    ]
    assert starts == [(1, WORK), (1, HOME), (3, WORK)]
    moves = [
        (e["payload"]["previous"], e["payload"]["to"]) for e in log if e["kind"] == "agent_switched"
    ]
    assert moves == [(WORK, HOME), (HOME, WORK)]
    [paused] = [e for e in log if e["kind"] == "lane_paused"]
    assert paused["payload"]["next_agent"] == HOME
    # The log says it in words.
    said = flamechase(["events", "last"], env, ws).stdout
    assert f"moves to {HOME}" in said and f"goes back to {WORK}" in said

    st = status(env, ws)
    assert st["status"] == "finished" and st["budget"]["turns"]["used"] == 4
    [role] = st["alternatives"]
    spent = role.pop("spent")
    assert role == {
        "role": "first_chaser",
        "alternatives": [WORK, HOME],
        "current": WORK,
        "closed": {},
    }
    # Each account's spend is its own turns': the limited attempt and turn 3 on `work`, the
    # retake on `home`.
    assert {a: s["turns"] for a, s in spent.items()} == {WORK: 2, HOME: 1}
    assert all(s["cost_usd"] > 0 for s in spent.values())
    # Every turn's spend counts, the limited one on `work` and the one on `home` included.
    ends = [e for e in log if e["kind"] in ("turn_valid", "lane_paused")]
    assert paused["payload"]["cost_usd"] > 0
    assert st["budget"]["cost"]["used"] == pytest.approx(
        sum(e["payload"]["cost_usd"] for e in ends), abs=1e-6
    )
    chased = sum(e["payload"]["cost_usd"] for e in ends if e["actor"] == "first_chaser")
    assert sum(s["cost_usd"] for s in spent.values()) == pytest.approx(chased, abs=1e-5)
    text = flamechase(["status", "last"], env, ws).stdout
    work, home = (f"${spent[a]['cost_usd']:.4f}" for a in (WORK, HOME))
    said = f"{WORK} (current, 2 turns, {work}) | {HOME} (1 turn, {home})"
    assert f"first_chaser alternatives: {said}" in text
    assert f"4 turns, ${st['budget']['cost']['used']:.4f}" in text  # the whole run's spend


def _scripts(tmp_path: Path) -> tuple[Path, Path]:
    ok = tmp_path / "ok.sh"
    ok.write_text(
        "#!/bin/sh\n"
        'echo "{\\"status\\":\\"progress\\",\\"summary\\":\\"on $0\\"}" > "$FLAMECHASE_REPORT"\n'
    )
    broken = tmp_path / "broken.sh"  # a wrapper whose interpreter is gone: it never starts
    broken.write_text("#!/nonexistent/interpreter\necho never\n")
    for p in (ok, broken):
        p.chmod(0o755)
    return ok, broken


def test_a_cli_that_does_not_start_moves_the_role_to_its_next_agent(tmp_path: Path) -> None:
    ok, broken = _scripts(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("sample\n")
    env = {**os.environ, "FLAMECHASE_HOME": str(tmp_path / "fc-home")}
    done = flamechase(
        ["exec", "-f", "flame_chase", "-a", f"first_chaser=exec:{broken}|exec:{ok}",
         "-a", f"second_chaser=exec:{ok}", "-p", "budget.turns=4,rest_seconds=0.05",
         "add a line"],
        env, ws,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    log = events(env, ws)
    starts = [
        (e["payload"]["turn"], e["payload"]["backend"])
        for e in log
        if e["kind"] == "turn_started" and e["actor"] == "first_chaser"
    ]
    assert starts == [(1, f"exec:{broken}"), (3, f"exec:{ok}")]
    [moved] = [e["payload"] for e in log if e["kind"] == "agent_switched"]
    assert moved["to"] == f"exec:{ok}" and "did not start" in moved["reason"]
    [role] = status(env, ws)["alternatives"]
    assert role["current"] == f"exec:{ok}" and role["closed"][f"exec:{broken}"]["why"] == (
        "did not start"
    )
    text = flamechase(["status", "last"], env, ws).stdout
    assert f"exec:{broken} (did not start until" in text


@pytest.mark.parametrize(
    ("second", "said"),
    [
        ("exec:{tmp}/gone.sh", "does not exist"),
        ("claude@nobody/claude-opus-4-5", "there is no claude account called 'nobody'"),
        ("nocli/model", "unknown CLI 'nocli'"),
        ("codex/gpt-5:turbo", "codex cannot take effort 'turbo'"),
    ],
)
def test_every_alternative_is_checked_before_the_run_starts(
    tmp_path: Path, second: str, said: str
) -> None:
    ok, _ = _scripts(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "fc-home"
    env = {**os.environ, "FLAMECHASE_HOME": str(home)}
    alternative = second.replace("{tmp}", str(tmp_path))
    done = flamechase(
        ["exec", "-f", "flame_chase", "-a", f"first_chaser=exec:{ok}|{alternative}",
         "-a", f"second_chaser=exec:{ok}", "-p", "budget.turns=2", "add a line"],
        env, ws,
    )  # fmt: skip
    assert done.returncode == 2 and said in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not home.exists()  # refused before anything was written
