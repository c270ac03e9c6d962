"""Every program the runtime starts on its own behalf imports the real flamechase, whatever an
agent left where it runs: a shadowing `flamechase.py` or `flamechase/`, a `sitecustomize.py`,
a `usercustomize.py` or a `.pth` in a user site, `PYTHONPATH` naming the place. Each program is
started exactly as the flows build it, in a real process, in a planted directory."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from flamechase.flows.git_pr import programs
from flamechase.flows.parrallello import runtime as rt
from flamechase.flows.parrallello.plan import PlanSpec
from flamechase.tools.git_pr import central
from tests import plants

SHADOWS = ["module", "package"]


def _spec(exclusive: bool) -> rt.FrontSpec:
    plan = {
        "fronts": [
            {
                "id": "P",
                "goal": "g",
                "gate": "sh gates/P.sh",
                "owners": {"core": ["src/**"]},
                "targets": {"T.P.x": ">=1"},
                "exclusive": exclusive,
            }
        ]
    }
    return PlanSpec.model_validate(plan).fronts[0]


def _shell(command: str) -> tuple[str, ...]:
    return ("/bin/sh", "-c", command)


def _hook(tmp: Path) -> tuple[str, ...]:
    script = tmp / "pre-receive"
    script.write_text(central.hook_script())
    script.chmod(0o755)
    return (str(script),)


# name -> (argv builder given the test's directory, exit code expected)
PROGRAMS: dict[str, tuple[Callable[[Path], tuple[str, ...]], int]] = {
    "gitpr": (lambda _: (*programs.GITPR, "--help"), 0),
    "publish": (lambda _: (*programs.PUBLISH, "--help"), 0),
    "pr (as agents are told)": (lambda _: _shell(f"{programs.pr_cli()} --help"), 0),
    "treesync hash": (lambda _: rt.freeze_hash("k", _spec(False), "P").argv, 0),
    "treesync mirror": (lambda t: rt.mirror("k", "p", "P", "o", str(t / "other")).argv, 0),
    "gitpoint checkpoint": (lambda _: rt.checkpoint("t", "m", require=False).argv, 0),
    "job reap": (lambda _: rt.reap("k", "p", "P").argv, 0),
    "lock run (a builder's quick gate)": (
        lambda _: _shell(rt.quick_command(_spec(True), "P.core")),
        0,
    ),
    "lock acquire and release": (
        lambda _: _shell(
            f"{rt.machine_commands()['lock']} acquire --who t --max 60 && "
            f"{rt.machine_commands()['lock']} release"
        ),
        0,
    ),
    "job start and wait": (
        lambda _: _shell(
            f"id=$({rt.machine_commands()['job']} start -- true) && "
            f'{rt.machine_commands()["job"]} wait "$id" --max 60'
        ),
        0,
    ),
    "the central repository's hook": (_hook, 1),  # no policy: it refuses, as it must
}


def _run(argv: tuple[str, ...], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _planted(tmp: Path, shadow: str) -> tuple[Path, Path, dict[str, str]]:
    """(the planted directory, the marks directory, an environment that reaches the plants)."""
    marks, place = tmp / "marks", tmp / "place"
    marks.mkdir()
    place.mkdir()
    plants.plant(place, marks, shadow)
    (place / "gates").mkdir()
    (place / "gates" / "P.sh").write_text("echo gate ran\n")
    (tmp / "other").mkdir()
    run = tmp / "run"
    (run / "lanes" / "P").mkdir(parents=True)
    env = {
        **plants.env_without_python(),
        **plants.user_site(place, marks),
        "FLAMECHASE_RUN_DIR": str(run),
        "FLAMECHASE_LANE": "P",
    }
    return place, marks, env


@pytest.mark.parametrize("shadow", SHADOWS)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_runtime_program_never_imports_what_is_planted_where_it_runs(
    tmp_path: Path, name: str, shadow: str
) -> None:
    place, marks, env = _planted(tmp_path, shadow)
    build, code = PROGRAMS[name]
    proc = _run(build(tmp_path), place, env)
    assert plants.marks(marks, tmp_path / "run") == [], proc.stdout + proc.stderr
    assert plants.SAID not in proc.stdout + proc.stderr
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("shadow", SHADOWS)
def test_the_plants_do_run_in_a_python_that_is_not_isolated(tmp_path: Path, shadow: str) -> None:
    place, marks, env = _planted(tmp_path, shadow)
    _run((sys.executable, "-m", "flamechase.tools.treesync", "hash"), place, env)
    kinds = {n.removeprefix(plants.MARKER).rsplit("-", 1)[0] for n in os.listdir(marks)}
    # A virtual environment has no user site: usercustomize and a user .pth run only outside one.
    probe = (sys.executable, "-c", "import site; print(site.ENABLE_USER_SITE)")
    user_site = _run(probe, place, plants.env_without_python()).stdout.strip() == "True"
    wanted = {shadow, "sitecustomize"} | ({"usercustomize", "pth"} if user_site else set())
    assert kinds == wanted
