"""parrallello against builders that attack the runtime's own programs, end to end through the
real `flamechase` command: a builder owning `*.py` adds a `flamechase.py` (and a `flamechase/`
package, a `sitecustomize.py`, a `usercustomize.py`, a `.pth`) that reach the front's tree,
the critic's copy, the user's tree and the next front's tree. None of it runs."""

from __future__ import annotations

from pathlib import Path

from tests import plants
from tests.flows.parrallello.scripted import git, repo
from tests.flows.parrallello.test_cli import run
from tests.helpers import events


def test_files_a_builder_plants_never_run_in_the_runtimes_programs(
    tmp_path: Path, state_home: Path
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    fronts = {
        "P": {"plan": {"owners": {"core": ["src/P/**", "*.py", "*.pth"]}}},
        # Opens from your tree once P landed in it, flamechase.py and all.
        "Q": {
            "plan": {
                "wave": 2,
                "depends_on": ["P"],
                "owners": {"core": ["src/Q/**", "flamechase/**", "*.py", "*.pth"]},
            }
        },
    }
    ws = repo(tmp_path, fronts, blocks=1, rounds_per_block=1)
    config = {
        "P": {"write": plants.files(marks, "module")},
        "Q": {"write": plants.files(marks, "package")},
    }
    proc = run(tmp_path, ws, config)
    evs = events(ws, isolated=True)
    assert plants.marks(marks, state_home / "runs") == [], proc.stderr
    assert plants.said(evs) == []
    assert proc.returncode == 0, proc.stderr
    landed = [e["payload"]["front"] for e in evs if e["kind"] == "front_integrated"]
    assert landed == ["P", "Q"]
    # The plants did reach every tree the runtime worked in, your own included.
    for rel in ("flamechase.py", "flamechase/__init__.py", "sitecustomize.py", "plant.pth"):
        assert (ws / rel).is_file(), rel
    assert git(ws, "log", "-1", "--format=%s") == "parrallello: front Q approved (round 1)"
