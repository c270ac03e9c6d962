"""Start-up and turns: `--help`, launch -> first agent, the turn gap and peak RSS, each with
and without the jail, against a bare spawn (loop) from a running interpreter with and without
the same jail (bubblewrap, as the engine builds it for a lane turn in the user's tree).

The agent is an instant `exec:` script that stamps the clock first thing into a FIFO
(bench/common.py: a jailed agent can write nothing else outside its grants), so every
figure is taken at the agent's side, the same way for flamechase and its floor.
"""

from __future__ import annotations

import itertools
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench.common import (
    PROGRESS,
    PY,
    Figure,
    Stamps,
    exec_usage,
    interleave,
    make_actor,
    wall_ms,
)


def help_figures(rounds: int, hmz: Path | None) -> list[Figure]:
    helpcmd = [PY, "-m", "flamechase", "--help"]
    out = []
    if hmz is not None:
        xs, ys = interleave(rounds, wall_ms(helpcmd), wall_ms([str(hmz), "--help"]))
        out.append(Figure("`flamechase --help`", "ms", xs, "`hmz --help` (0.2.2)", ys, "help-hmz"))
    xs, ys = interleave(rounds, wall_ms(helpcmd), wall_ms([PY, "-c", "import click"]))
    out.append(Figure("`flamechase --help`", "ms", xs, "`python -c 'import click'`", ys))
    xs, ys = interleave(rounds, wall_ms(helpcmd), wall_ms([PY, "-S", "-c", "pass"]))
    out.append(Figure("`flamechase --help`", "ms", xs, "bare interpreter", ys))
    return out


class Turns:
    """Runs of flame_chase (two chasers, the instant agent) and of the bare spawn loop."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.stamps = Stamps(tmp / "stamps.fifo")
        self.actor = make_actor(tmp / "actor.sh", PROGRESS)
        self.env = dict(os.environ, STAMPS=str(self.stamps.path))

    def exec_run(self, turns: int, sandbox: str) -> tuple[float, list[float], float]:
        """(launch -> first agent's stamp ms, start-to-start gaps ms, peak RSS MB)."""
        ws = Path(tempfile.mkdtemp(dir=self.tmp))
        env = dict(self.env, FLAMECHASE_HOME=str(self.tmp / "home"))
        argv = [PY, "-m", "flamechase", "exec", "-f", "flame_chase"]
        argv += ["-a", f"exec:{self.actor}", "-a", f"exec:{self.actor}"]
        argv += ["-p", f"budget.turns={turns},rest_seconds=0.05,sandbox={sandbox}", "bench"]
        self.stamps.read()
        t0 = time.time_ns()
        usage = exec_usage(argv, ws, env, f"flamechase exec (sandbox={sandbox})")
        starts = [ns for _, ns in self.stamps.read()]
        gaps = [(b - a) / 1e6 for a, b in itertools.pairwise(starts)]
        return (starts[0] - t0) / 1e6, gaps, usage.ru_maxrss / 1024

    def jailed(self, argv: list[str]) -> list[str]:
        """`argv` in the jail the engine gives a lane turn in the user's tree."""
        from flamechase.jail import JailSpec, ready, wrap

        own = self.tmp / "bare-lane"
        (own / "turn").mkdir(parents=True, exist_ok=True)
        (self.tmp / "bare-ws").mkdir(exist_ok=True)
        spec = JailSpec(
            mode="bwrap",
            place=self.tmp / "bare-ws",
            tmp=own / "tmp",
            turn_dir=own / "turn",
            grants=(own,),
            protected=(self.tmp / "home",),
        )
        ready(spec)
        return wrap(argv, spec)

    def bare_launch(self, jail: bool) -> float:
        """The launch floor: a bare interpreter (`python -S`) started to spawn the agent once
        (through the same jail when `jail`): start -> the agent's stamp, ms."""
        report = self.tmp / "bare-lane" / "turn" / "report.json"
        report.parent.mkdir(parents=True, exist_ok=True)
        env = dict(self.env, FLAMECHASE_LANE="lane-1", FLAMECHASE_REPORT=str(report))
        argv = self.jailed([str(self.actor)]) if jail else [str(self.actor)]
        spawn = "import subprocess, sys; subprocess.run(sys.argv[1:], check=True)"
        self.stamps.read()
        t0 = time.time_ns()
        subprocess.run([PY, "-S", "-c", spawn, *argv], env=env, check=True)
        return (self.stamps.read()[0][1] - t0) / 1e6

    def bare_loop(self, turns: int, jail: bool) -> tuple[float, list[float]]:
        """The floor: the same agent spawned `turns` times in a row by a plain loop (through
        the same jail when `jail`): (spawn -> first stamp ms, start-to-start gaps ms)."""
        report = self.tmp / "bare-lane" / "turn" / "report.json"
        report.parent.mkdir(parents=True, exist_ok=True)
        env = dict(self.env, FLAMECHASE_LANE="lane-1", FLAMECHASE_REPORT=str(report))
        argv = self.jailed([str(self.actor)]) if jail else [str(self.actor)]
        self.stamps.read()
        t0 = time.time_ns()
        for _ in range(turns):
            subprocess.run(argv, env=env, check=True)
        starts = [ns for _, ns in self.stamps.read()]
        return (starts[0] - t0) / 1e6, [(b - a) / 1e6 for a, b in itertools.pairwise(starts)]


def _python_rss() -> float:
    proc = subprocess.Popen([PY, "-S", "-c", "pass"])
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_maxrss / 1024


def _launch_rows(cols: dict[str, list[float]], modes: list[str]) -> list[Figure]:
    """Launch -> first agent against two floors: an interpreter already running that spawns
    the agent (the jail's and the spawn's own cost), and a bare interpreter started to spawn
    it (what any launcher in Python pays; the floor of issue 25's target)."""
    out = []
    for mode in modes:
        label = "jail off" if mode == "off" else "bubblewrap jail"
        through = "" if mode == "off" else " through the same jail"
        what = f"launch -> first agent (`exec`, {label})"
        out.append(
            Figure(
                what,
                "ms",
                cols[f"first-{mode}"],
                f"bare spawn{through} from a running interpreter",
                cols[f"bfirst-{mode}"],
            )
        )
        out.append(
            Figure(
                what,
                "ms",
                cols[f"first-{mode}"],
                f"a bare interpreter started to spawn it{through}",
                cols[f"blaunch-{mode}"],
                f"first-{mode}",
            )
        )
    return out


def turn_figures(tmp: Path, rounds: int, turns: int, jail: str | None) -> list[Figure]:
    """`jail`: None when bubblewrap runs here (the jailed rows are measured), else why not."""
    t = Turns(tmp)
    cols: dict[str, list[float]] = {}
    modes = [("off", False)] + ([("bwrap", True)] if jail is None else [])
    for mode, _ in modes:
        t.exec_run(2, mode)  # warm-up: bytecode, the jail's probe
    for _ in range(rounds):
        for mode, jailed in modes:
            first, gaps, rss = t.exec_run(turns, mode)
            bfirst, bgaps = t.bare_loop(turns, jailed)
            cols.setdefault(f"first-{mode}", []).append(first)
            cols.setdefault(f"bfirst-{mode}", []).append(bfirst)
            cols.setdefault(f"blaunch-{mode}", []).append(t.bare_launch(jailed))
            cols.setdefault(f"gap-{mode}", []).append(statistics.median(gaps))
            cols.setdefault(f"bgap-{mode}", []).append(statistics.median(bgaps))
            if mode == "off":
                cols.setdefault("rss", []).append(rss)
                cols.setdefault("brss", []).append(_python_rss())
    out = _launch_rows(cols, [m for m, _ in modes])
    for mode, jailed in modes:
        label = "jail off" if mode == "off" else "bubblewrap jail"
        floor = "bare spawn loop" + (" through the same jail" if jailed else "")
        gap, bgap = cols[f"gap-{mode}"], cols[f"bgap-{mode}"]
        out.append(
            Figure(
                f"turn start-to-start gap, flame_chase, {turns} turns, {label} (50 ms rest in it)",
                "ms",
                gap,
                floor,
                bgap,
                f"gap-{mode}",
            )
        )
        out.append(
            Figure(
                f"turns/s, the same, {label}",
                "/s",
                [1000 / g for g in gap],
                floor,
                [1000 / g for g in bgap],
            )
        )
    if jail is None:
        out.append(
            Figure(
                "bare spawn loop through the jail: start-to-start gap",
                "ms",
                cols["bgap-bwrap"],
                "bare spawn loop, no jail",
                cols["bgap-off"],
            )
        )
    out.append(
        Figure("peak RSS of `flamechase exec`", "MB", cols["rss"], "bare interpreter", cols["brss"])
    )
    t.stamps.close()
    return out
