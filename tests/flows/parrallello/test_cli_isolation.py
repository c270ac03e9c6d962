"""parrallello against builders that attack the runtime's own programs, end to end through the
real `flamechase` command: a builder owning `*.py` adds a `flamechase.py` (and a `flamechase/`
package, a `sitecustomize.py`, a `usercustomize.py`, a `.pth`) that reach the front's tree,
the critic's copy, the user's tree and the next front's tree; a builder's code swaps a frozen
gate file between the hash and the run. None of it runs; the gate that runs is the frozen one."""

from __future__ import annotations

import json
from pathlib import Path

from tests import plants
from tests.flows.parrallello.scripted import git, repo
from tests.flows.parrallello.test_cli import by_front, run
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


# A gate that measures the builders' code in its own process and reads its target from a
# second frozen file, after that code ran.
GATE = """\
import json, sys
sys.path.insert(0, "src/S")
import core
target = json.load(open("gates/S_targets.json"))["value"]
items = [{"id": "T.S.value", "value": core.VALUE, "target": f">={target}",
          "pass": core.VALUE >= target}]
ok = all(i["pass"] for i in items)
print("RESULT_JSON " + json.dumps({"pass": ok, "items": items}))
print(f"SUMMARY {sum(i['pass'] for i in items)}/{len(items)} PASS")
sys.exit(0 if ok else 1)
"""
# What the builder adds to its own code: lower the target while the gate runs, put it back as
# the gate exits (so that no hash before or after sees it).
SWAP = """
import atexit, json
_path = "gates/S_targets.json"
try:
    _was = open(_path).read()
    open(_path, "w").write(json.dumps({"value": 0}))
    atexit.register(lambda: open(_path, "w").write(_was))
    print("swap: done")
except OSError as exc:
    print(f"swap: refused ({exc.__class__.__name__})")
"""


def test_a_gate_file_a_builders_code_swaps_while_the_gate_runs_is_not_the_one_that_runs(
    tmp_path: Path, state_home: Path
) -> None:
    freeze = ["gates/S.py", "gates/S_targets.json"]
    ws = repo(
        tmp_path, {"S": {"target": 99, "plan": {"freeze": freeze}}}, blocks=1, rounds_per_block=1
    )
    (ws / "gates" / "S.py").write_text(GATE)
    (ws / "gates" / "S_targets.json").write_text(json.dumps({"value": 99}))
    git(ws, "add", "-A")
    git(ws, "-c", "user.email=u@example.invalid", "-c", "user.name=u", "commit", "-qm", "gate")
    proc = run(tmp_path, ws, {"S": {"write": {"src/S/core.py": SWAP}}})
    assert proc.returncode == 1, proc.stderr  # not approved: VALUE 2 misses the target 99
    evs = events(ws)
    (baseline, rnd) = by_front(evs, "gate_ran")["S"]
    assert not baseline["passed"] and not rnd["passed"], rnd
    gate = next(
        e["payload"]["receipt"]
        for e in evs
        if e["kind"] == "ran" and e["payload"]["key"] == "pll:S:gate:1:"
    )
    assert "swap: refused" in gate["output"] and '"target": ">=99"' in gate["output"], gate
    assert set(gate["frozen"]) == set(freeze)
    (end,) = by_front(evs, "front_ended")["S"]
    assert end["status"] == "not_approved"
    assert json.loads((ws / "gates" / "S_targets.json").read_text()) == {"value": 99}
