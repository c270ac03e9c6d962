"""The README's two first commands work where `pip install` into the system Python is refused
(PEP 668, Debian and Ubuntu): they make and use a virtual environment, and CI runs them as
written (`.ci/readme-commands`, called by `.ci/run`) in a clean clone."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = Path("/usr/bin/python3")


def _commands() -> list[str]:
    out = subprocess.run(
        [str(REPO / ".ci" / "readme-commands"), "--print"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.splitlines()


def test_the_readme_opens_with_two_commands_into_a_virtual_environment() -> None:
    demo, tests = _commands()
    readme = (REPO / "README.md").read_text()
    assert readme.index(demo) < readme.index(tests) < readme.index("## What it does")
    for command in (demo, tests):
        assert command.startswith("python3 -m venv .venv && .venv/bin/pip install -e ")
        steps = command.split(" && ")
        # Nothing goes through the system's pip, and what runs comes from the environment.
        assert not any(s.startswith(("pip ", "python3 -m pip", "pip3 ")) for s in steps)
        assert steps[-1].startswith(".venv/bin/")
    assert demo.endswith(".venv/bin/flamechase demo")
    assert tests.endswith(".venv/bin/python -m pytest -n 2")
    assert ".venv/" in (REPO / ".gitignore").read_text().splitlines()


def test_ci_runs_the_readme_commands_and_nothing_else_installs() -> None:
    run = (REPO / ".ci" / "run").read_text()
    assert "\n.ci/readme-commands\n" in run
    # flamechase is installed only by the README's commands; later steps reuse their venv.
    assert "pip install" not in run
    assert "python3 -m pytest" not in run
    later = run.split("\n.ci/readme-commands\n", 1)[1]
    # Later steps reuse the venv the README's commands made: no other Python, no other
    # install of flamechase (.ci/ray-tests adds the `ray` extra to that venv afterwards).
    code = [ln for ln in later.splitlines() if ln.strip() and not ln.startswith("#")]
    assert not any("python3" in ln or "pip " in ln for ln in code), later
    assert "FLAMECHASE_REALCLI_REQUIRED=1 .venv/bin/python -m pytest" in later
    assert "\n.ci/ray-tests\n" in later
    helper = (REPO / ".ci" / "readme-commands").read_text()
    assert 'bash -euo pipefail -c "$command"' in helper


def test_a_readme_without_two_commands_fails_ci(tmp_path: Path) -> None:
    ci = tmp_path / ".ci"
    ci.mkdir()
    shutil.copy(REPO / ".ci" / "readme-commands", ci / "readme-commands")
    (tmp_path / "README.md").write_text("# x\n\n```\nmake\n```\n\ntext only\n")
    proc = subprocess.run([str(ci / "readme-commands"), "--print"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "expected two one-line commands" in proc.stderr


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_demo_command_runs_as_written_on_an_externally_managed_python(tmp_path: Path) -> None:
    """The first command, literally, with Debian's own python3 first on PATH."""
    managed = list(Path("/usr/lib").glob("python3*/EXTERNALLY-MANAGED"))
    if not managed or not SYSTEM_PYTHON.exists():
        pytest.skip("this machine's python3 is not externally managed (PEP 668)")
    probe = subprocess.run([str(SYSTEM_PYTHON), "-c", "import ensurepip"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("python3-venv is not installed (the README says to install it)")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", "--no-local", str(REPO), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYENV"))}
    env["PATH"] = "/usr/bin:/bin"
    env["HOME"] = str(tmp_path / "home")
    # The premise: the system Python refuses an install.
    refused = subprocess.run(
        ["python3", "-m", "pip", "install", "-e", "."],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
    )
    assert refused.returncode != 0 and "externally-managed" in refused.stderr
    demo = _commands()[0]
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", demo],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=850,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "replay" in done.stdout + done.stderr
