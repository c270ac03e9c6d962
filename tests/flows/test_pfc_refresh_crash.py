"""A SIGKILL in the middle of a lane refresh, through the real CLI: the engine killed while
the refresh program runs (the program going on alone, or killed with it wherever it was),
then the same command again: lane 2's next turn starts on lane 1's tree with its own edits
kept and its conflict named, as after an uncut refresh; no journal left, nothing half made."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.flows.pfc import Team

FILES = 1500  # enough paths for a refresh to last while the test finds and kills it

HOOK = f"""
if c.lane == "lane-1":
    if c.turn == 1:
        for i in range(0, {FILES}, 5):  # lane 1 changes a fifth of the tree
            (c.ws / "pkg" / f"m{{i:04d}}.py").write_text(f"lane 1 {{i}}\\n")
        (c.ws / "README.md").write_text("lane 1's readme\\n")
        return None
    assert c.wait(lambda es: any(e["lane"] == "lane-2" and e["turn"] >= 2 for e in es), 120)
    return c.ok("blocked", "stop here")
if c.turn == 1:
    (c.ws / "README.md").write_text("lane 2's readme\\n")
    (c.ws / "own.txt").write_text("lane 2's work\\n")
    (c.ws / "pkg" / "m0001.py").write_text("lane 2's edit\\n")
    assert c.wait(lambda es: any(e["lane"] == "lane-1" and e["turn"] >= 2 for e in es), 120)
    return None
files = {{str(p.relative_to(c.ws)): p.read_text() for p in sorted(c.ws.rglob("*"))
         if p.is_file() and ".git" not in p.parts}}
c.save("lane-2-turn-2.json", json.dumps({{"files": files, "prompt": c.prompt}}))
return c.ok("blocked", "stop here")
"""


def _refresh_program(home: Path) -> int | None:
    """The pid of a running `lanerefresh refresh` of lane-2 of a run in `home` (other
    tests, and other people's, may be refreshing lanes on this machine too)."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ours = any(a.startswith(bytes(home)) for a in argv)
        if ours and b"flamechase.tools.lanerefresh" in argv and b"refresh" in argv:
            return int(entry.name)
    return None


def _want(files: dict[str, str]) -> None:
    assert files["README.md"] == "lane 2's readme\n"  # both changed it: the lane's kept
    assert files["own.txt"] == "lane 2's work\n"
    assert files["pkg/m0001.py"] == "lane 2's edit\n"
    for i in range(FILES):
        want = f"lane 1 {i}\n" if i % 5 == 0 else f"X = {i}\n"
        if i != 1:
            assert files[f"pkg/m{i:04d}.py"] == want, i


@pytest.mark.parametrize(
    ("kill", "after"),
    [
        ("engine", 0.0),
        pytest.param("both", 0.0, marks=pytest.mark.slow),
        ("both", 0.15),
        pytest.param("both", 0.4, marks=pytest.mark.slow),
    ],
)
def test_an_engine_killed_mid_refresh_then_run_again_refreshes_the_lane_once_and_whole(
    source_tree: Path, tmp_path: Path, state_home: Path, kill: str, after: float
) -> None:
    for i in range(FILES):
        (source_tree / "pkg" / f"m{i:04d}.py").write_text(f"X = {i}\n")
    team = Team(tmp_path / "team", HOOK)
    args = ("lanes=2", "lane_refresh=rebase", "budget.duration=180s")
    engine = team.popen(source_tree, *args, lanes=2)
    deadline = time.monotonic() + 150
    program = None
    while program is None and engine.poll() is None and time.monotonic() < deadline:
        program = _refresh_program(state_home)
        time.sleep(0.005)
    assert program is not None, "the refresh never ran"
    time.sleep(after)
    engine.send_signal(signal.SIGKILL)
    if kill == "both":
        # Gone already: it had finished, and the engine is killed after the refresh.
        with contextlib.suppress(ProcessLookupError):
            os.kill(program, signal.SIGKILL)
    engine.wait(timeout=30)
    # The same command again: the run resumes and asks for the same refresh.
    again = team.run(source_tree, *args, lanes=2, timeout=240)
    assert again.returncode == 3, again.stderr
    seen = json.loads(team.saved("lane-2-turn-2.json"))
    _want(seen["files"])
    assert "reconcile them deliberately: README.md" in seen["prompt"]
    repo = next(state_home.glob("runs/*/lanerefresh.git"))
    assert not list(repo.glob("refresh-*.json"))  # no journal of a refresh left half done
    # Lane 1's tree was only read.
    assert (source_tree / "README.md").read_text() == "lane 1's readme\n"
    assert not (source_tree / "own.txt").exists()
