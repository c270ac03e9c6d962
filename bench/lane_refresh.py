"""An explorer lane's refresh on a 5,000-file tree: seconds for the first base, and for a
refresh after lane 1 changed some files and the lane others (one of them both).

    python bench/lane_refresh.py [--files 5000] [--kb 4] [--changed 50] [--dir /path]

Builds lane 1's tree, copies it as the lane's, records the base, then changes `--changed`
files on each side and times `flamechase.tools.lanerefresh.refresh` (its private git
repository: snapshot both trees through private indexes, merge-tree, write the result).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from flamechase.tools import lanerefresh


def build(root: Path, files: int, kb: int) -> None:
    for i in range(files):
        d = root / f"pkg{i // 250:03d}"
        d.mkdir(parents=True, exist_ok=True)
        lines = [f"line {n} of file {i} {os.urandom(8).hex()}\n" for n in range(kb * 16)]
        (d / f"m{i:05d}.py").write_text("".join(lines))


def touch(root: Path, picks: range, tag: str) -> None:
    for i in picks:
        p = root / f"pkg{i // 250:03d}" / f"m{i:05d}.py"
        text = p.read_text().splitlines(keepends=True)
        text[0 if tag == "lane-1" else -1] = f"changed by {tag}\n"
        p.write_text("".join(text))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--kb", type=int, default=4)
    ap.add_argument("--changed", type=int, default=50)
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        root = Path(d)
        lane1, lane2, repo = root / "lane1", root / "lane2", root / "refresh.git"
        build(lane1, args.files, args.kb)
        shutil.copytree(lane1, lane2, symlinks=True)
        t0 = time.monotonic()
        base = lanerefresh.record(repo, lane1)
        t_base = time.monotonic() - t0
        n = args.changed
        touch(lane1, range(0, n), "lane-1")
        touch(lane2, range(n - 1, 2 * n - 1), "lane-2")  # file n-1: both, other lines
        t0 = time.monotonic()
        done = lanerefresh.refresh(repo, base, lane2, lane1, lane="lane-2")
        t_refresh = time.monotonic() - t0
        t0 = time.monotonic()
        again = lanerefresh.refresh(repo, done.base, lane2, lane1, lane="lane-2")
        t_noop = time.monotonic() - t0
    print(
        json.dumps(
            {
                "files": args.files,
                "tree_mb": round(args.files * args.kb / 1024, 1),
                "base_seconds": round(t_base, 2),
                "refresh_seconds": round(t_refresh, 2),
                "written": done.written,
                "conflicts": len(done.conflicts),
                "unchanged_refresh_seconds": round(t_noop, 2),
                "unchanged_written": again.written,
            }
        )
    )


if __name__ == "__main__":
    main()
