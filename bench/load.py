"""Load: 8 lanes of instant `exec:` actors for N turns; memory and scheduling must stay flat.

    python bench/load.py [--turns 10000] [--lanes 8] [--sample-every 500] [--sandbox off]

Runs parallel_flame_chase through the real CLI. While it runs, every `--sample-every` recorded
turns it samples the engine's resident memory (/proc/PID/status VmRSS) and the size of the run
database on disk (run.db plus its WAL). At the end it reads the turns table and computes the
scheduling gap per lane (a turn's start minus the same lane's previous turn's end, minus
rest_seconds): everything the engine does between two turns of a lane. Prints JSON:

    samples            [{turns, rss_kib, db_bytes, events}] at each sample
    rss_kib_per_1000_turns, db_bytes_per_turn   least-squares slopes after the first window
    median_gap_ms      median scheduling gap per 1000-turn window (by turn id)
    turns_per_second, wall_seconds, peak_rss_kib (VmHWM)

Issue 6, point 8: memory must not grow per turn beyond the event log's own size on disk, and
the gap must not grow as history grows. Exit 1 if the run fails.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ACTOR = r"""#!/bin/bash
if [ -z "$FLAMECHASE_LANE" ]; then
  sep=; printf '{"lanes":[' > "$FLAMECHASE_REPORT"
  for l in ${FLAMECHASE_LANES//,/ }; do
    printf '%s{"lane":"%s","mission":{"title":"t","objective":"o","success_criteria":["c"]}}' \
      "$sep" "$l" >> "$FLAMECHASE_REPORT"; sep=,
  done
  printf ']}' >> "$FLAMECHASE_REPORT"; exit 0
fi
echo '{"status":"progress","summary":"instant"}' > "$FLAMECHASE_REPORT"
"""


def _status_kib(pid: int, key: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _db_bytes(run_dir: Path) -> int:
    return sum(p.stat().st_size for p in run_dir.glob("run.db*") if p.is_file())


def _ro(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)


def _count(db: Path, table: str) -> int:
    """Rows of `table` (for turns: lane turns only, not the coordinator's planning)."""
    where = " WHERE lane != ''" if table == "turns" else ""
    try:
        with _ro(db) as conn:
            return int(conn.execute(f"SELECT COUNT(*) FROM {table}{where}").fetchone()[0])
    except sqlite3.Error:
        return 0


def _slope(xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 2 or len(set(xs)) < 2:
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    num = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    den = sum((x - mx) ** 2 for x in xs)
    return num / den


def _at(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _gaps(db: Path, rest: float, window: int) -> list[dict[str, Any]]:
    with _ro(db) as conn:
        rows = conn.execute(
            "SELECT id, lane, started, ended FROM turns WHERE lane != '' ORDER BY id"
        ).fetchall()
    last_end: dict[str, float] = {}
    per_window: dict[int, list[float]] = {}
    for i, (_id, lane, started, ended) in enumerate(rows):
        if lane in last_end:
            gap = (_at(started) - last_end[lane] - rest) * 1000
            per_window.setdefault(i // window, []).append(gap)
        last_end[lane] = _at(ended)
    return [
        {
            "turns": f"{w * window + 1}-{(w + 1) * window}",
            "median_gap_ms": round(statistics.median(g), 1),
            "p90_gap_ms": round(statistics.quantiles(g, n=10)[-1], 1) if len(g) >= 10 else None,
        }
        for w, g in sorted(per_window.items())
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--turns", type=int, default=10_000)
    ap.add_argument("--lanes", type=int, default=8)
    ap.add_argument("--rest", type=float, default=0.05)
    ap.add_argument("--sample-every", type=int, default=500)
    ap.add_argument("--window", type=int, default=1000)
    ap.add_argument(
        "--sandbox",
        default="off",
        choices=["off", "auto", "landlock"],
        help="off (default) measures the engine, not the sandbox launcher",
    )
    ap.add_argument("--keep", type=Path, help="keep the run's state home here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        home = args.keep or tmp / "home"
        ws = tmp / "ws"
        ws.mkdir()
        (ws / "README.md").write_text("load\n")
        actor = tmp / "actor.sh"
        actor.write_text(ACTOR)
        actor.chmod(0o755)
        env = dict(os.environ, FLAMECHASE_HOME=str(home))
        err_path = tmp / "stderr"
        t0 = time.monotonic()
        with open(err_path, "wb") as err:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "flamechase",
                    "exec",
                    "-f",
                    "parallel_flame_chase",
                    *(["-a", f"exec:{actor}"] * (1 + 2 * args.lanes)),
                    "-p",
                    f"lanes={args.lanes},budget.turns={args.turns},rest_seconds={args.rest},"
                    f"sandbox={args.sandbox}",
                    "load",
                ],
                cwd=ws,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        samples: list[dict[str, Any]] = []
        next_at = args.sample_every
        run_dir: Path | None = None
        peak = 0
        while proc.poll() is None:
            time.sleep(0.2)
            if run_dir is None:
                found = list((home / "runs").glob("*/run.db")) if (home / "runs").exists() else []
                if not found:
                    continue
                run_dir = found[0].parent
            rss = _status_kib(proc.pid, "VmRSS")
            peak = max(peak, _status_kib(proc.pid, "VmHWM") or 0)
            turns = _count(run_dir / "run.db", "turns")
            if turns >= next_at and rss is not None:
                samples.append(
                    {
                        "turns": turns,
                        "rss_kib": rss,
                        "db_bytes": _db_bytes(run_dir),
                        "events": _count(run_dir / "run.db", "events"),
                        "seconds": round(time.monotonic() - t0, 1),
                    }
                )
                print(json.dumps(samples[-1]), file=sys.stderr, flush=True)
                while next_at <= turns:
                    next_at += args.sample_every
        wall = time.monotonic() - t0
        if proc.returncode != 0 or run_dir is None:
            sys.exit(f"flamechase failed ({proc.returncode}): {err_path.read_text()[-2000:]}")
        db = run_dir / "run.db"
        total = _count(db, "turns")
        later = [s for s in samples if s["turns"] > args.window] or samples
        xs = [float(s["turns"]) for s in later]
        rss_slope = _slope(xs, [float(s["rss_kib"]) for s in later])
        db_slope = _slope(xs, [float(s["db_bytes"]) for s in later])
        print(
            json.dumps(
                {
                    "command": " ".join(["python", "bench/load.py", *sys.argv[1:]]),
                    "turns": total,
                    "lanes": args.lanes,
                    "rest_seconds": args.rest,
                    "sandbox": args.sandbox,
                    "wall_seconds": round(wall, 1),
                    "turns_per_second": round(total / wall, 1),
                    "peak_rss_kib": peak,
                    "final_db_bytes": _db_bytes(run_dir),
                    "events": _count(db, "events"),
                    "rss_kib_per_1000_turns": None
                    if rss_slope is None
                    else round(rss_slope * 1000, 1),
                    "db_bytes_per_turn": None if db_slope is None else round(db_slope, 1),
                    "median_gap_ms": _gaps(db, args.rest, args.window),
                    "samples": samples,
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
