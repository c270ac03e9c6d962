"""How long `-f` takes to load a flow, by form: built-in, file, and `git+file://` cold (the
clone), warm by tag (ls-remote + verify) and warm by commit (verify only).

    python bench/flow_loading.py [--repeat 5]

Each figure is the median of `--repeat` fresh processes, timing only `load_flow` inside
them (not the interpreter's start-up), with a private FLAMECHASE_HOME.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.flows.loading_repos import make_repo

PROBE = (
    "import time, sys; from flamechase.loader import load_flow, flow_identity; "
    "t = time.perf_counter(); f = load_flow(sys.argv[1]); flow_identity(f, sys.argv[1]); "
    "print((time.perf_counter() - t) * 1000)"
)


def once(ref: str, home: Path) -> float:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, ref],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "FLAMECHASE_HOME": str(home)},
    )
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo, sha = make_repo(root / "repo")
        (root / "once.py").write_text((repo / "once" / "__init__.py").read_text())
        home = root / "home"
        results: dict[str, float] = {}
        for label, ref in (("built-in", "parallel_flame_chase"), ("file", str(root / "once.py"))):
            results[label] = statistics.median(once(ref, home) for _ in range(args.repeat))
        cold = []
        for _ in range(args.repeat):
            shutil.rmtree(home, ignore_errors=True)
            cold.append(once(f"git+file://{repo}@v1#once", home))
        results["git cold (clone)"] = statistics.median(cold)
        results["git warm, by tag"] = statistics.median(
            once(f"git+file://{repo}@v1#once", home) for _ in range(args.repeat)
        )
        results["git warm, by commit"] = statistics.median(
            once(f"git+file://{repo}@{sha}#once", home) for _ in range(args.repeat)
        )
        print(json.dumps({k: round(v, 1) for k, v in results.items()}, indent=1))


if __name__ == "__main__":
    main()
