"""parallel_flame_chase:git_pr against lanes that attack the runtime's own programs, through the
real CLI: a PR adds a `flamechase.py` (with a `sitecustomize.py`, a `usercustomize.py` and a
`.pth`) and code the evaluator imports (its `solver.py`: the evaluator's own files are frozen)
that plants them in every checkout it runs in; a lane leaves a
`flamechase/` package in its clone. The PR is merged, merged again with another, and published
into your tree, so the plants reach a lane's clone, both kinds of checkout, the integration
clone and your tree, where the runtime's programs run next. None of them runs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests import plants
from tests.flows.git_pr.team import SCORE, Team
from tests.helpers import events, status

HOOK = """
import json, pathlib
plant = json.loads(pathlib.Path(PLANTS).read_text())
if c.lane == "lane-1" and c.turn == 1:
    c.propose("lane-1/a", {"a.txt": "10\\n", "solver.py": plant["evaluator"], **plant["module"]})
    return "proposed lane-1/a"
if c.lane == "lane-2" and c.turn == 1:
    base = c.main()
    c.change("lane-2/b", {"b.txt": "5\\n"}, start=base)      # on the old main: a real merge
    for rel, text in plant["package"].items():               # and a package, in its clone
        (c.ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (c.ws / rel).write_text(text)
    c.wait("lane-1's merge", lambda: c.main() != base)
    c.git("push", "-q", "origin", "lane-2/b")
    c.pr("open", "--title", "b down", "--hypothesis", "b")
    c.pr("ready")
    return "proposed lane-2/b on the old main"
if c.lane == "lane-1" and c.turn == 2:
    c.wait("lane-2's merge", lambda: c.git("fetch", "-q", "origin", quiet=True) and "PR000002"
           in c.git("log", "-1", "--format=%B", "origin/main", quiet=True).stdout)
    c.propose("lane-1/c", {"a.txt": "1\\n"})  # checked out where the evaluator planted
    return "proposed lane-1/c"
c.wait("lane-1's second turn", lambda: c.done("lane-1", 2))
"""


def test_files_lanes_plant_never_run_in_the_runtimes_programs(
    tmp_path: Path, state_home: Path
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    module = plants.files(marks, "module")
    # The PR's solver.py, which the evaluator imports, plants the same files where it runs:
    # the checkout.
    evaluator = (
        "\nimport pathlib as _p\n"
        f"for _rel, _text in {module!r}.items():\n"
        "    _p.Path(_rel).write_text(_text)\n"
    )
    spec = {"module": module, "package": plants.files(marks, "package"), "evaluator": evaluator}
    (tmp_path / "plants.json").write_text(json.dumps(spec))
    team = Team(
        tmp_path,
        HOOK.replace("PLANTS", repr(str(tmp_path / "plants.json"))),
        {"score.py": "import solver\n" + SCORE, "solver.py": ""},
    )
    try:
        proc = team.run(turns=4, timeout=100)
    except subprocess.TimeoutExpired:  # a hijacked publication is held, and tried for ever
        proc = None
    assert plants.marks(marks, state_home / "runs") == []
    evs = events(team.src, isolated=True)
    assert plants.said(evs) == []
    assert proc is not None and proc.returncode == 0, proc and proc.stderr
    st = status(team.src, isolated=True)
    prs = {p["id"]: p["status"] for p in st["pull_requests"]}
    assert prs == {"PR000001": "merged", "PR000002": "merged", "PR000003": "merged"}
    ledger = st["ledger"]
    assert [e["fast"] for e in ledger] == [True, False, True]  # the integration clone merged
    assert st["main"]["published"] == ledger[-1]["merge"]
    # What the PRs carried is in your tree now, where the later publications ran.
    assert (team.src / "flamechase.py").read_text() == module["flamechase.py"]
    assert (team.src / "solver.py").read_text() == evaluator
    published = [e for e in evs if e["kind"] == "main_published"]
    assert len(published) == 3
