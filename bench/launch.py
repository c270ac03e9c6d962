"""Launch -> first agent with the jail on, in CPU time: `flamechase exec` (flame_chase, an
`exec:` agent, the default sandbox: bubblewrap) from process start until its first agent,
jailed, has run to its end, against a bare interpreter started to spawn that same jailed
command line (the floor of issue 25's target, as bench/startup.py reads it in wall time).

CPU time (user + system of the whole process tree, from `wait4`) beside the wall-time rows:
on a shared, loaded machine wall time also measures the neighbours. The run is stopped once
its first agent ends (the spawner wrapped, in the measured process, to wait for that agent
and exit): what follows is the turn gap's figure, not the launch's.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench.common import PY, Figure, interleave

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
    """One `exec` to its first jailed agent, and a bare interpreter spawning what it ran."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.actor = tmp / "launch-actor.sh"
        self.actor.write_text(ACTOR)
        self.actor.chmod(0o755)
        self.seen: dict[str, Any] = {}
        self.env = dict(os.environ, FLAMECHASE_HOME=str(tmp / "launch-home"))

    def exec_run(self) -> float:
        ws = Path(tempfile.mkdtemp(dir=self.tmp))  # a new tree each time: a new run
        (ws / "README").write_text("x\n")
        out = ws.parent / (ws.name + ".json")
        argv = [PY, "-c", FIRST_AGENT, str(out), "exec", "-f", "flame_chase"]
        argv += ["-a", f"exec:{self.actor}", "-a", f"exec:{self.actor}"]
        argv += ["-p", "budget.turns=1", "bench"]
        ms = _cpu_ms(argv, cwd=ws, env=self.env)
        self.seen = json.loads(out.read_text())
        return ms

    def bare(self) -> float:
        spawn = "import subprocess, sys; subprocess.run(sys.argv[1:], check=True)"
        argv = [PY, "-S", "-c", spawn, *map(str, self.seen["argv"])]
        env = {"PATH": os.environ.get("PATH", ""), "FLAMECHASE_REPORT": os.devnull}
        return _cpu_ms(argv, cwd=str(self.seen["cwd"]), env=env)

    def jailed(self) -> bool:
        return any("bwrap" in str(a) for a in self.seen.get("argv", []))


def cpu_figures(tmp: Path, rounds: int) -> tuple[list[Figure], list[str]]:
    """The CPU row (key `first-bwrap-cpu`, read by bench/targets.py), or why it is not."""
    run = Launch(tmp)
    xs, ys = interleave(rounds, run.exec_run, run.bare)
    if not run.jailed():
        return [], ["launch -> first agent in CPU time: the default sandbox here is not bubblewrap"]
    what = "launch -> first agent (`exec`, bubblewrap jail), CPU of the process tree"
    peer = "a bare interpreter started to spawn the same jailed command, CPU"
    return [Figure(what, "ms", xs, peer, ys, "first-bwrap-cpu")], []
