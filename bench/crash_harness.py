"""The long crash sweep: SIGKILL the engine at every store operation and at random times.

    python bench/crash_harness.py [--points 80] [--random-kills 2]

Prints kill points tried, kills, resumes, runs finished and violations (must be 0).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.engine.crash_harness import kill_points


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=80)
    ap.add_argument("--random-kills", type=int, default=2)
    ap.add_argument("--turns", type=int, default=9)
    args = ap.parse_args()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as d:
        res = kill_points(
            Path(d),
            list(range(1, args.points + 1)),
            turns=args.turns,
            random_kills=args.random_kills,
        )
    print(
        json.dumps(
            {
                "kill_points": res.kill_points,
                "kills": res.kills,
                "resumes": res.resumes,
                "runs_finished": res.runs_finished,
                "late_lock_releases": res.late_lock_releases,
                "violations": res.violations,
                "seconds": round(time.monotonic() - t0, 1),
            },
            indent=1,
        )
    )
    sys.exit(1 if res.violations else 0)


if __name__ == "__main__":
    main()
