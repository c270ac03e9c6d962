"""Lanes 2..N run in a jail (bubblewrap, or the Landlock fallback): they write their own
directory and nothing else of ours."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flamechase.jail import probe, safe_grants

JAILS = probe()
MODES = [
    pytest.param(
        "bwrap", marks=pytest.mark.skipif(not JAILS.bwrap_ok, reason=str(JAILS.bwrap_reason))
    ),
    pytest.param(
        "landlock", marks=pytest.mark.skipif(not JAILS.landlock_ok, reason="kernel has no Landlock")
    ),
]

ACTOR = r"""#!/usr/bin/env python3
import json, os, sys
lane, report = os.environ["FLAMECHASE_LANE"], os.environ["FLAMECHASE_REPORT"]
if lane == "":
    plan = {"lanes": [{"lane": l, "mission": {"title": "t", "objective": "o",
            "success_criteria": ["c"]}} for l in os.environ["FLAMECHASE_LANES"].split(",")]}
    open(report, "w").write(json.dumps(plan)); sys.exit(0)
run = os.environ["FLAMECHASE_RUN_DIR"]
targets = json.loads(os.environ["ATTEMPTS"])
results = {}
for name, path in targets.items():
    path = path.replace("{run}", run)
    try:
        with open(path, "a") as f:
            f.write("x")
        results[name] = "wrote"
    except OSError as e:
        results[name] = f"refused {e.errno}"
try:
    with open(os.path.join(os.environ["TMPDIR"], "t"), "w") as f:
        f.write("t")
    results["tmpdir"] = "wrote"
except (OSError, KeyError) as e:
    results["tmpdir"] = f"refused {e}"
open(os.path.join(os.environ["FLAMECHASE_WORKSPACE"], f"results-{lane}.json"), "w").write(
    json.dumps(results))
open(report, "w").write(json.dumps({"status": "progress", "summary": json.dumps(results)}))
"""


@pytest.mark.parametrize("mode", MODES)
def test_lane_two_cannot_write_source_database_or_other_lanes(tmp_path: Path, mode: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "src.txt").write_text("original\n")
    actor = tmp_path / "actor.py"
    actor.write_text(ACTOR)
    actor.chmod(0o755)
    attempts = {
        "source": str(ws / "src.txt"),
        "database": "{run}/run.db",
        "other_lane": "{run}/lanes/lane-3/artifacts/evil.txt",
        "blobs": "{run}/blobs/evil",
        "own_artifacts": "{run}/lanes/lane-2/artifacts/ok.txt",
        "own_checkpoint": "{run}/lanes/lane-2/checkpoint.json",
        "etc": "/etc/flamechase-evil",
    }
    env = dict(os.environ, FLAMECHASE_HOME=str(tmp_path / "home"), ATTEMPTS=json.dumps(attempts))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "flamechase",
            "exec",
            "-f",
            "parallel_flame_chase",
            *(["-a", f"exec:{actor}"] * 5),
            "-p",
            f"lanes=2,budget.turns=2,sandbox={mode}",
            "try to escape",
        ],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    run = next((tmp_path / "home" / "runs").iterdir())
    lane2 = json.loads((run / "lanes" / "lane-2" / "workspace" / "results-lane-2.json").read_text())
    assert lane2["own_artifacts"] == "wrote"
    assert lane2["own_checkpoint"] == "wrote"
    assert lane2["tmpdir"] == "wrote"
    for name in ("source", "database", "other_lane", "blobs", "etc"):
        assert lane2[name].startswith("refused"), (name, lane2[name])
    # Only lane 1's one turn wrote the source.
    assert (ws / "src.txt").read_text() == "original\nx"
    # Lane 1 works in the source, unconfined.
    lane1 = json.loads((ws / "results-lane-1.json").read_text())
    assert lane1["source"] == "wrote"


def test_a_grant_containing_the_source_is_dropped(tmp_path: Path) -> None:
    src = tmp_path / "outer" / "src"
    src.mkdir(parents=True)
    own = tmp_path / "own"
    own.mkdir()
    assert safe_grants([tmp_path / "outer", own], [src]) == [own.resolve()]
