"""`python -m bench --quick` runs end to end and reports every figure against its peer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.bench
@pytest.mark.timeout(900)
def test_quick_bench_reports_each_figure_with_its_peer_and_ratio(tmp_path: Path) -> None:
    out = tmp_path / "RESULTS.md"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    figures = "\n".join(rows[1:])
    for what in (
        "--help",
        "first agent",
        "first agent (`exec`, jail on), CPU",
        "start-to-start gap",
        "turns/s",
        "peak RSS",
        "3-lane",
        "`status` (run_status), 10,000 turns",
        "resume's reads, 10,000 turns",
    ):
        assert what in figures, what
    for peer in ("`cp -a`", "`cp -a --reflink=auto`", "`git worktree add`", "`sha256sum`"):
        assert peer in figures, peer
    assert all(row.split("|")[5].strip().startswith("x") for row in rows[1:]), figures
    assert "hmz 0.2.2" in text and "load average" in text
    # The peer's rows are there, or a line says why they are not.
    assert "| hmz 0.2.2 |" in figures or "hmz 0.2.2 column skipped: " in text
    assert "files a turn leaves under lanes/*/turns" in text
