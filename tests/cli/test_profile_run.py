"""`flamechase profile set|show|list|rm` and `flamechase run FLOW TASK`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.helpers import REPORT_OK, actor, cli, status


def _refused(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    for word in words:
        assert word in line, line


@pytest.fixture
def chasers(tmp_path: Path) -> list[str]:
    script = actor(tmp_path, "chaser.sh", REPORT_OK)
    return [
        "-a",
        f"first_chaser=exec:{script},second_chaser=exec:{script}",
        "-p",
        "budget.turns=2,rest_seconds=0.05",
    ]


def test_a_profile_is_kept_in_the_config_directory_and_run_uses_it(
    tmp_path: Path, config_home: Path, chasers: list[str]
) -> None:
    saved = cli("profile", "set", "flame_chase", *chasers, cwd=tmp_path)
    assert saved.returncode == 0, saved.stderr
    stored = yaml.safe_load((config_home / "profiles.yaml").read_text())
    assert stored["flame_chase"]["params"] == ["budget.turns=2,rest_seconds=0.05"]
    shown = cli("profile", "show", "flame_chase", cwd=tmp_path, check=True).stdout
    assert shown.startswith("exec -f flame_chase -a first_chaser=exec:")
    ws = tmp_path / "ws"
    ws.mkdir()
    run = cli("run", "flame_chase", "make", "it", "better", cwd=ws)
    assert run.returncode == 0, run.stderr
    st = status(ws)
    assert (st["flow"], st["task"]) == ("flame_chase", "make it better")
    assert st["budget"]["turns"] == {"limit": 2, "used": 2}
    # -p on the command line goes on top of the profile's.
    more = cli("run", "flame_chase", "-p", "budget.turns=3", "make it better", cwd=ws)
    assert more.returncode == 0, more.stderr
    assert "budget turns is spent" in more.stderr


def test_the_platform_config_directory_is_the_default(
    tmp_path: Path, chasers: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FLAMECHASE_CONFIG")
    xdg = tmp_path / "xdg"
    proc = cli(
        "profile", "set", "flame_chase", *chasers, cwd=tmp_path, env={"XDG_CONFIG_HOME": str(xdg)}
    )
    assert proc.returncode == 0, proc.stderr
    assert (xdg / "flamechase" / "profiles.yaml").is_file()


def test_a_profile_exec_would_refuse_is_refused_when_set(tmp_path: Path, config_home: Path) -> None:
    _refused(
        cli(
            "profile",
            "set",
            "flame_chase",
            "-a",
            "nobody=sim/steady",
            "-p",
            "budget.turns=1",
            cwd=tmp_path,
        ),
        "no agent role 'nobody'",
    )
    _refused(
        cli(
            "profile",
            "set",
            "flame_chase",
            "-a",
            "sim/steady",
            "-a",
            "sim/steady",
            "-p",
            "budget.turns=x",
            cwd=tmp_path,
        ),
        "budget.turns",
    )
    _refused(
        cli(
            "profile",
            "set",
            "flame_chase",
            "-a",
            "sim/steady",
            "-a",
            "sim/steady",
            "-p",
            "budget.turns=1,lanes=3",
            cwd=tmp_path,
        ),
        "lanes",
    )
    _refused(cli("profile", "set", "no_such_flow", cwd=tmp_path), "no flow called")
    assert not (config_home / "profiles.yaml").exists()


def test_a_profile_without_a_budget_is_kept_as_exec_would_run_it(
    tmp_path: Path, config_home: Path
) -> None:
    # exec runs with no budget until stopped (it says so at start); a profile may too.
    proc = cli(
        "profile", "set", "flame_chase", "-a", "sim/steady", "-a", "sim/steady", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert "flame_chase" in (config_home / "profiles.yaml").read_text()


def test_run_without_a_profile_and_rm(tmp_path: Path, chasers: list[str]) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    _refused(
        cli("run", "flame_chase", "go", cwd=ws),
        "no profile for flame_chase",
        "flamechase profile set flame_chase",
    )
    # A flow that does not exist is said so, not given a profile to make.
    _refused(cli("run", "nope", "go", cwd=ws), "no flow called 'nope'")
    cli("profile", "set", "flame_chase", *chasers, cwd=tmp_path, check=True)
    assert "flame_chase" in cli("profile", "list", cwd=tmp_path, check=True).stdout
    cli("profile", "rm", "flame_chase", cwd=tmp_path, check=True)
    _refused(cli("profile", "rm", "flame_chase", cwd=tmp_path), "no profile for flame_chase")


def test_a_profile_keeps_a_roles_alternatives_and_checks_each(
    tmp_path: Path, config_home: Path
) -> None:
    one = actor(tmp_path, "one.sh", REPORT_OK)
    two = actor(tmp_path, "two.sh", REPORT_OK)
    agents = f"first_chaser=exec:{one}|exec:{two},second_chaser=exec:{one}"
    saved = cli("profile", "set", "flame_chase", "-a", agents, cwd=tmp_path)
    assert saved.returncode == 0, saved.stderr
    shown = cli("profile", "show", "flame_chase", cwd=tmp_path, check=True).stdout
    assert f"'first_chaser=exec:{one}|exec:{two},second_chaser=exec:{one}'" in shown
    bad = cli(
        "profile", "set", "flame_chase", "-a",
        f"first_chaser=exec:{one}|exec:{tmp_path / 'gone.sh'},second_chaser=exec:{one}",
        cwd=tmp_path,
    )  # fmt: skip
    _refused(bad, "gone.sh", "does not exist")
