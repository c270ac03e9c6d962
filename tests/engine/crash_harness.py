"""Kill `flamechase exec` anywhere, resume, and check nothing was lost (issue: crash anywhere).

`kill_points(...)` runs parallel_flame_chase with scripted actors; for each kill point k the
first session SIGKILLs itself at its k-th store operation (FLAMECHASE_FAULT=any:k), then
resumes are run until the run finishes, some of them killed again at random times. After
every kill and at the end, `flamechase.engine.invariants.check_run` must find nothing, and
the source lock must be free.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from flamechase.engine.invariants import check_run
from flamechase.workspace.locks import owner

ACTOR = r"""#!/usr/bin/env python3
import json, os, sys
lane, turn = os.environ["FLAMECHASE_LANE"], int(os.environ["FLAMECHASE_TURN"])
report = os.environ["FLAMECHASE_REPORT"]
if lane == "":
    lanes = os.environ["FLAMECHASE_LANES"].split(",")
    plan = {"lanes": [{"lane": l, "mission": {"title": "m " + l, "objective": "o",
            "success_criteria": ["c"]}} for l in lanes]}
    open(report, "w").write(json.dumps(plan)); sys.exit(0)
inbox = json.load(open(os.environ["FLAMECHASE_INBOX"]))
if turn % 5 == 0 and lane == "lane-3":
    sys.exit(1)
out = {"status": "progress", "summary": f"{lane} turn {turn} read {len(inbox)}"}
if lane != "lane-1" and turn % 2 == 0:
    root = os.environ["FLAMECHASE_ARTIFACTS"]
    name = f"t{turn}-{os.environ['FLAMECHASE_ATTEMPT']}.txt"
    open(os.path.join(root, name), "w").write(f"{lane} {turn}\n")
    out = {"status": "deliverable_ready", "summary": "package",
           "deliverable": {"title": "p", "artifacts": [{"path": name, "description": "d"}],
                           "integration_notes": "copy it"}}
open(report, "w").write(json.dumps(out))
"""


@dataclass
class HarnessResult:
    kill_points: int = 0
    kills: int = 0
    resumes: int = 0
    violations: list[str] = field(default_factory=list)
    runs_finished: int = 0
    late_lock_releases: int = 0


def _exec(
    ws: Path, actor: Path, env: dict[str, str], turns: int, fault: str | None
) -> subprocess.Popen[bytes]:
    e = dict(env)
    if fault:
        e["FLAMECHASE_FAULT"] = fault
    agents = ["-a", f"exec:{actor}"] * 7
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flamechase",
            "exec",
            "-f",
            "parallel_flame_chase",
            *agents,
            "-p",
            f"budget.turns={turns},rest_seconds=0.05,sandbox=off",
            "crash test",
        ],
        cwd=ws,
        env=e,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def kill_points(
    base: Path, points: list[int], *, turns: int = 9, random_kills: int = 1, seed: int = 7
) -> HarnessResult:
    """Run one fresh run per kill point; return what was tried and every violation."""
    rng = random.Random(seed)
    res = HarnessResult()
    actor = base / "actor.py"
    actor.write_text(ACTOR)
    actor.chmod(0o755)
    for k in points:
        home = base / f"home-{k}"
        ws = base / f"ws-{k}"
        ws.mkdir(parents=True)
        (ws / "file.txt").write_text("source\n")
        env = dict(os.environ, FLAMECHASE_HOME=str(home))
        res.kill_points += 1
        p = _exec(ws, actor, env, turns, f"any:{k}")
        _, err = p.communicate(timeout=120)
        attempts = 0
        while True:
            if p.returncode == -9:
                res.kills += 1
            run_dirs = sorted((home / "runs").glob("*")) if (home / "runs").exists() else []
            for rd in run_dirs:
                for v in check_run(rd, turn_limit=turns):
                    res.violations.append(f"kill point {k}: {v}")
            if owner(home / "locks", ws) is not None:
                # A child forked in the instant of the kill holds the descriptor until its
                # exec closes it (O_CLOEXEC): give it a moment before calling it a leak.
                time.sleep(0.5)
                if owner(home / "locks", ws) is not None:
                    res.violations.append(f"kill point {k}: lock still held after the process died")
                else:
                    res.late_lock_releases += 1
            if p.returncode == 0:
                res.runs_finished += 1
                break
            if p.returncode not in (-9, 1) or attempts > 20:
                res.violations.append(
                    f"kill point {k}: exec exited {p.returncode}: {err.decode()[-300:]}"
                )
                break
            attempts += 1
            res.resumes += 1
            p = _exec(ws, actor, env, turns, None)
            if attempts <= random_kills:
                time.sleep(rng.uniform(0.2, 1.2))
                if p.poll() is None:
                    p.kill()
            _, err = p.communicate(timeout=120)
    return res
