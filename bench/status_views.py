"""What the flow's panels and alerts cost `flamechase status`: run `python bench/status_views.py`.

On a synthetic 10,000-event run of parallel_flame_chase (900 of its events the flow's own):

1. the whole `flamechase status RUN` command (interpreter start-up included), and the same
   without the panels (the CLI imported, `run_status` without `views`: what `status` did
   before it showed them);
2. in one interpreter: folding only the flow's own events (`view.summary.fold_shown`, what
   `status` does) against folding every event (`fold_run`, what `show` does).

Numbers depend on load: `uptime` is printed with them. `--json FILE` also writes them.
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
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.view.synth builds the synthetic run

from tests.view.synth import make_run  # noqa: E402

# `status` as it was before it showed panels: the CLI imported, the tables read and printed.
PLAIN = (
    "import flamechase.cli; from pathlib import Path; "
    "from flamechase.cli.runs import run_status, status_lines; "
    "print(status_lines(run_status(Path({!r}))))"
)


def _wall(argv: list[str], env: dict[str, str], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, check=True, capture_output=True)
        out.append(time.perf_counter() - t0)
    return out


def _folds(run_dir: Path, n: int) -> dict[str, list[float]]:
    from flamechase.view.summary import fold_run, fold_shown

    fold_shown(run_dir)  # imports and the flow's import out of the way
    shown, every = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        fold_shown(run_dir)
        shown.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        fold_run(run_dir)
        every.append(time.perf_counter() - t0)
    return {"fold_shown": shown, "fold_run": every}


def _line(name: str, xs: list[float]) -> str:
    return f"{name:<40} median {statistics.median(xs):.3f} s  min {min(xs):.3f} s  (n={len(xs)})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=7, help="repetitions of each measurement")
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fc-bench-status-") as tmp:
        return _measure(Path(tmp), args.n, args.json)


def _measure(home: Path, n: int, out: Path | None) -> int:
    run_dir = make_run(home, 10_000)
    env = {**os.environ, "FLAMECHASE_HOME": str(home)}
    numbers: dict[str, Any] = {
        "status": _wall([sys.executable, "-m", "flamechase", "status", run_dir.name], env, n),
        "status without panels": _wall([sys.executable, "-c", PLAIN.format(str(run_dir))], env, n),
    }
    os.environ["FLAMECHASE_HOME"] = str(home)
    numbers.update(_folds(run_dir, n))
    for name, xs in numbers.items():
        print(_line(name, xs))
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} cores")
    if out:
        out.write_text(json.dumps({**numbers, "load": load}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
