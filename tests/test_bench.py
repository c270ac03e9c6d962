"""`python -m bench --quick` runs end to end and reports every figure of issue 25 against its
peer or floor, or says why a row is not there; and each of the issue's targets as met or
missed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_takes_the_results_between_its_markers(tmp_path: Path) -> None:
    from bench.__main__ import END, START, into_readme

    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n## Performance\nhow\n{START}\nold figures\n{END}\nafter\n")
    into_readme(readme, "# Benchmark results\n\nrun line\n\n## Targets\n\n| t |\n")
    assert readme.read_text() == (
        f"# x\n## Performance\nhow\n{START}\nrun line\n\n### Targets\n\n| t |\n{END}\nafter\n"
    )


def _rows(text: str, heading: str) -> list[str]:
    part = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return [ln for ln in part.splitlines() if ln.startswith("| ") and "---" not in ln][1:]


def _row_or_said(text: str, rows: str, row: str, skipped: str) -> None:
    said = text.split("## Not measured in this run, and why", 1)[1]
    assert row in rows or skipped in said, f"no row {row!r}, and nothing says why ({skipped!r})"


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
    assert "load average" in text and "cores" in text
    rows = _rows(text, "Figures")
    figures = "\n".join(rows)
    for row in rows:  # a ratio, or none where the peer's median is 0 (reflink writes nothing)
        cells = [c.strip() for c in row.split("|")]
        assert cells[5].startswith("x") or (cells[5] == "-" and cells[4].startswith("0")), row
    for what, peer in (
        ("`flamechase --help`", "bare interpreter"),
        ("launch -> first agent (`exec`, jail off)", "bare spawn from a running interpreter"),
        ("launch -> first agent (`exec`, jail off)", "a bare interpreter started to spawn it"),
        ("jail off (50 ms rest in it)", "bare spawn loop"),
        ("peak RSS", "bare interpreter"),
        ("1 lane x", "1 bare spawn loop"),
        ("3 lanes x", "3 bare spawn loops"),
        ("8 lanes x", "8 bare spawn loops"),
        ("snapshot of a", "`cp -a --reflink=never`"),
        ("snapshot of a", "`cp -a --reflink=auto`"),
        ("snapshot of a", "`git worktree add`"),
        ("measurement place, 3 of 20,000 files changed", "`cp -a --reflink=never` of the tree"),
        ("evaluator, 6 submissions: MB written", "2 private lanes' copies"),
        ("artifact publish", "`sha256sum`"),
        ("artifact verify", "`sha256sum`"),
        ("`status` (run_status, in-process), 10,000", "the same at 100"),
        ("resume's reads, 10,000", "the same at 100"),
        ("`flamechase status RUN` (the command), 10,000", "the same at 100"),
        ("`show --html` (the command), 10,000", "the same at 100"),
        ("replay page, 10,000", "the same at 100"),
    ):
        assert any(what in r and peer in r for r in rows), (what, peer)
    _row_or_said(text, figures, "| hmz 0.2.2 |", "the hmz 0.2.2 column")
    _row_or_said(text, figures, "`hmz --help` (0.2.2)", "the hmz 0.2.2 column")
    _row_or_said(text, figures, "bare spawn through the same jail from a", "the jail's rows")
    _row_or_said(text, figures, "to spawn it through the same jail", "the jail's rows")
    _row_or_said(text, figures, "to spawn the same jailed command, CPU", "the jail's rows")
    _row_or_said(text, figures, "xfs+reflink", "copies on a file system with reflink")
    _row_or_said(text, figures, "replay opens in chromium", "the replay's opening")
    assert "files a turn leaves under lanes/*/turns" in text
    goals = _rows(text, "Targets")
    assert len(goals) == 7, goals
    for goal in goals:
        verdict = goal.split("|")[3].strip()
        assert verdict.startswith(("**met**", "**missed**: ")) or verdict == "-", goal
