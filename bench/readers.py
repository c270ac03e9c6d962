"""Readers against a live run: how fast they answer, and how little they delay the engine.

    python bench/readers.py [--turns 40] [--lanes 2]

Runs parallel_flame_chase (instant `exec:` actors, rest_seconds 0.05) and, while it runs,
repeatedly times `flamechase status --json` (a fresh interpreter each), `flamechase
--version` at the same moments (the interpreter starting alone, for comparison) and
`run_status` in this process (the read itself). At the end it computes each lane's
scheduling gaps (a turn's start minus the same lane's previous turn's end). Prints JSON:

    status_s, version_s        median and max, seconds
    read_ms                    median and max of the in-process read
    gap_s                      median and max scheduling gap under the readers
    turns, wall_s

tests/test_concurrency.py checks the behaviour (readers never block or corrupt the run);
these are its timings, which depend on the machine and how busy it is. On an idle 2-core box
`status` takes ~0.8 s (nearly all interpreter start), the read a few ms (median; a write
under way can make one wait a few hundred), gaps ~0.07 s.
Exit 1 if the run fails.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.test_concurrency import PFC_ACTOR

from flamechase.cli.runs import run_status
from flamechase.store.reader import Reader

FLAMECHASE = [sys.executable, "-m", "flamechase"]


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def gaps(events: list[dict[str, Any]]) -> list[float]:
    last_end: dict[str, datetime] = {}
    out = []
    for e in events:
        lane = e["lane"]
        if e["kind"] == "turn_started" and lane in last_end:
            out.append((_at(e["at"]) - last_end.pop(lane)).total_seconds())
        elif e["kind"] in ("turn_valid", "turn_failed"):
            last_end[lane] = _at(e["at"])
    return out


def timed(args: list[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.monotonic()
    subprocess.run([*FLAMECHASE, *args], cwd=cwd, env=env, capture_output=True, check=True)
    return time.monotonic() - t0


def spread(xs: list[float], scale: float = 1.0) -> dict[str, float]:
    if not xs:
        return {}
    return {"median": round(statistics.median(xs) * scale, 3), "max": round(max(xs) * scale, 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=40)
    ap.add_argument("--lanes", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        base = Path(d)
        ws = base / "ws"
        ws.mkdir()
        (ws / "f.txt").write_text("source\n")
        actor = base / "pfc.sh"
        actor.write_text(PFC_ACTOR)
        actor.chmod(0o755)
        env = dict(os.environ, FLAMECHASE_HOME=str(base / "home"))
        t0 = time.monotonic()
        run = subprocess.Popen(
            [
                *FLAMECHASE,
                "exec",
                "-f",
                "parallel_flame_chase",
                *(["-a", f"exec:{actor}"] * (1 + 2 * args.lanes)),
                "-p",
                f"lanes={args.lanes},budget.turns={args.turns},rest_seconds=0.05,sandbox=off",
                "readers",
            ],
            cwd=ws,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        while not list((base / "home" / "runs").glob("*/run.db")) and run.poll() is None:
            time.sleep(0.05)
        status_s: list[float] = []
        version_s: list[float] = []
        read_s: list[float] = []
        run_dir = None
        while run.poll() is None:
            version_s.append(timed(["--version"], ws, env))
            try:
                status_s.append(timed(["status", "--json"], ws, env))
            except subprocess.CalledProcessError:
                continue  # the run's database is not created yet
            run_dir = next((base / "home" / "runs").iterdir())
            for _ in range(5):
                r0 = time.monotonic()
                run_status(run_dir)
                read_s.append(time.monotonic() - r0)
        _, err = run.communicate()
        wall = time.monotonic() - t0
        if run.returncode != 0 or run_dir is None:
            print(err, file=sys.stderr)
            sys.exit(1)
        with Reader(run_dir / "run.db") as r:
            events = r.events()
    print(
        json.dumps(
            {
                "status_s": spread(status_s),
                "version_s": spread(version_s),
                "read_ms": spread(read_s, 1000),
                "gap_s": spread(gaps(events)),
                "turns": args.turns,
                "wall_s": round(wall, 1),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
