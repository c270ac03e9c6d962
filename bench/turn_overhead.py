"""Turn overhead and peak RSS of `flamechase exec` with an instant `exec:` actor.

    python bench/turn_overhead.py [--turns 200]

The actor stamps the wall clock (ns) as its first and last act. The gap between one turn's
last stamp and the next turn's first stamp is everything flamechase does between turns
(collect, commit with fsync, rest, prompt, spawn) plus the actor's own start-up, which is
measured separately (`sh` launched the same way) and subtracted; rest_seconds is subtracted
too, since it is a deliberate pause. Peak RSS is the flamechase process's max RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ACTOR = """#!/bin/sh
echo "$FLAMECHASE_LANE $(date +%s%N)" >> "$STAMPS"
if [ -z "$FLAMECHASE_LANE" ]; then
  echo '{"lanes":[{"lane":"lane-1","mission":{"title":"t","objective":"o","success_criteria":["c"]}},{"lane":"lane-2","mission":{"title":"t","objective":"o","success_criteria":["c"]}},{"lane":"lane-3","mission":{"title":"t","objective":"o","success_criteria":["c"]}}]}' > "$FLAMECHASE_REPORT"
else
  echo '{"status":"progress","summary":"instant"}' > "$FLAMECHASE_REPORT"
fi
echo "$FLAMECHASE_LANE $(date +%s%N)" >> "$STAMPS"
"""


def shell_startup_ms(tmp: Path, n: int = 50) -> float:
    """Median ms from fork to the first `date` in a fresh sh (the actor's own start-up)."""
    script = tmp / "stamp.sh"
    script.write_text("#!/bin/sh\ndate +%s%N\n")
    script.chmod(0o755)
    samples = []
    for _ in range(n):
        t0 = time.time_ns()
        out = subprocess.run([str(script)], capture_output=True, text=True, check=True)
        samples.append((int(out.stdout.strip()) - t0) / 1e6)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--rest", type=float, default=0.05)
    ap.add_argument(
        "--flow", default="flame_chase", choices=["flame_chase", "parallel_flame_chase"]
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        ws = tmp / "ws"
        ws.mkdir()
        actor = tmp / "actor.sh"
        actor.write_text(ACTOR)
        actor.chmod(0o755)
        stamps = tmp / "stamps"
        env = dict(os.environ, FLAMECHASE_HOME=str(tmp / "home"), STAMPS=str(stamps))
        t0 = time.monotonic()
        agents = 2 if args.flow == "flame_chase" else 7
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "flamechase",
                "exec",
                "-f",
                args.flow,
                *(["-a", f"exec:{actor}"] * agents),
                "-p",
                f"budget.turns={args.turns},rest_seconds={args.rest},sandbox=off",
                "bench",
            ],
            cwd=ws,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.monotonic() - t0
        if proc.returncode != 0:
            sys.exit(f"flamechase failed: {proc.stderr}")
        rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        by_lane: dict[str, list[int]] = {}
        for line in stamps.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2:  # planner stamps have no lane
                by_lane.setdefault(parts[0], []).append(int(parts[1]))
        gaps = []
        for values in by_lane.values():
            gaps += [(values[i + 1] - values[i]) / 1e6 for i in range(1, len(values) - 1, 2)]
        startup = shell_startup_ms(tmp)
        median_gap = statistics.median(gaps)
        overhead = median_gap - args.rest * 1000 - startup
        result = {
            "flow": args.flow,
            "turns": args.turns,
            "wall_s": round(wall, 2),
            "median_gap_ms": round(median_gap, 2),
            "p90_gap_ms": round(sorted(gaps)[int(len(gaps) * 0.9)], 2),
            "rest_ms": args.rest * 1000,
            "actor_startup_ms": round(startup, 2),
            "median_overhead_ms": round(overhead, 2),
            "peak_rss_mb": round(rss_kb / 1024, 1),
        }
        print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
