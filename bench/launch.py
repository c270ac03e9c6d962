"""Launch -> first agent with the jail on, in CPU time: `flamechase exec` (a flame_chase run of
an `exec:` agent, the default sandbox: bubblewrap) from process start until its first agent,
jailed, has run to its end, against a bare spawn of that same jailed command line.

CPU time (user + system of the whole process tree, from `wait4`) rather than wall time: on a
shared, loaded machine wall time measures the neighbours. The run is stopped once its first
agent ends (the spawn wrapped, in the measured process, to wait for that agent and exit):
what follows is the turn gap's figure, not the launch's. The issue's target: within 300 ms of
the bare spawn.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The measured process: `flamechase` itself, its spawner wrapped once imported (imports keep
# the console script's order) to wait for the first agent's end, say what it ran, and exit.
FIRST_AGENT = """
import importlib.abc, importlib.machinery, json, os, sys

def wrap(spawn):
    started = spawn.Proc.start.__func__

    async def first(cls, argv, **kwargs):
        proc = await started(cls, argv, **kwargs)
        await proc.process.wait()
        with open(sys.argv[1], "w") as out:
            json.dump({"argv": list(argv), "cwd": str(kwargs["cwd"])}, out)
        os._exit(0)

    spawn.Proc.start = classmethod(first)

class Spawner(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "flamechase.procs.spawn":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            wrap(module)

        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, Spawner())
from flamechase.cli import main
main(sys.argv[2:])
"""

ACTOR = '#!/bin/sh\necho \'{"status":"progress","summary":"x"}\' > "$FLAMECHASE_REPORT"\n'


def _cpu_ms(argv: list[str], **kw: object) -> float:
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)  # type: ignore[call-overload]
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise RuntimeError(f"{argv[0]} failed: {proc.stderr.read().decode()[-300:]}")
    return (usage.ru_utime + usage.ru_stime) * 1000


class Launch:
    """One `exec` to its first jailed agent, and a bare spawn of the command it ran."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.actor = tmp / "launch-actor.sh"
        self.actor.write_text(ACTOR)
        self.actor.chmod(0o755)
        self.seen: dict[str, object] = {}
        self.env = dict(os.environ, FLAMECHASE_HOME=str(tmp / "launch-home"))

    def exec_run(self) -> float:
        ws = Path(tempfile.mkdtemp(dir=self.tmp))  # a new tree each time: a new run
        (ws / "README").write_text("x\n")
        out = ws.parent / (ws.name + ".json")
        argv = [sys.executable, "-c", FIRST_AGENT, str(out), "exec", "-f", "flame_chase"]
        argv += ["-a", f"exec:{self.actor}", "-a", f"exec:{self.actor}"]
        argv += ["-p", "budget.turns=1", "bench"]
        ms = _cpu_ms(argv, cwd=ws, env=self.env)
        self.seen = json.loads(out.read_text())
        return ms

    def bare(self) -> float:
        argv = [str(a) for a in self.seen["argv"]]  # type: ignore[attr-defined]
        env = {"PATH": os.environ.get("PATH", ""), "FLAMECHASE_REPORT": os.devnull}
        return _cpu_ms(argv, cwd=str(self.seen["cwd"]), env=env, start_new_session=True)

    def jailed(self) -> bool:
        return any("bwrap" in str(a) for a in self.seen.get("argv", []))  # type: ignore[attr-defined]


def available() -> str | None:
    """Why the figure cannot be measured here, or None."""
    return None if shutil.which("bwrap") else "bubblewrap (bwrap) is not installed"
