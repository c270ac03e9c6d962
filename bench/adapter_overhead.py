"""Per-turn overhead of each agent adapter, driven through its fake CLI, next to `exec:`.

    python bench/adapter_overhead.py [--turns 30]

For each backend, runs flame_chase with both roles on that backend's fake executable
(tests/agents/fakes, speaking the real protocol) and reports, from the run's own turn
records, the median gap between one turn's end (the answer collected) and the next turn's
start, minus rest_seconds, and the median turn duration (mostly the fake's own start-up).
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
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.agents.fakes import install_fakes, path_with  # noqa: E402

SPECS = {
    "exec": None,
    "claude": "claude/claude-sonnet-4-5:high",
    "codex": "codex/gpt-5:high",
    "gemini": "gemini/gemini-2.5-pro",
    "opencode": "opencode/anthropic/claude-sonnet-4-5",
    "acp": "acp:fake-acp",
}
REST = 0.05


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def measure(name: str, spec: str | None, turns: int, tmp: Path, bin_dir: Path) -> dict[str, float]:
    ws = tmp / f"ws-{name}"
    ws.mkdir()
    home = tmp / f"home-{name}"
    if spec is None:
        actor = tmp / "instant.sh"
        actor.write_text(
            '#!/bin/sh\necho \'{"status":"progress","summary":"x"}\' > "$FLAMECHASE_REPORT"\n'
        )
        actor.chmod(0o755)
        spec = f"exec:{actor}"
    env = dict(
        os.environ,
        FLAMECHASE_HOME=str(home),
        PATH=path_with(bin_dir),
        FLAMECHASE_RETRY_DELAYS="0,0,0",
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "flamechase",
            "exec",
            "-f",
            "flame_chase",
            "-a",
            spec,
            "-a",
            spec,
            "-p",
            f"budget.turns={turns},rest_seconds={REST}",
            "bench",
        ],
        cwd=ws,
        env=env,
        check=True,
        capture_output=True,
    )
    db = next((home / "runs").iterdir()) / "run.db"
    rows = (
        sqlite3.connect(db)
        .execute("SELECT started, ended, duration FROM turns WHERE lane='lane-1' ORDER BY id")
        .fetchall()
    )
    gaps = [
        (_ts(rows[i + 1][0]) - _ts(rows[i][1])) * 1000 - REST * 1000 for i in range(len(rows) - 1)
    ]
    return {
        "median_gap_ms": round(statistics.median(gaps), 2),
        "median_turn_ms": round(statistics.median(r[2] for r in rows) * 1000, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        bin_dir = install_fakes(tmp / "bin")
        out = {name: measure(name, spec, args.turns, tmp, bin_dir) for name, spec in SPECS.items()}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
