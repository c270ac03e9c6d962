"""Snapshot creation vs `cp -a`: seconds and bytes written for a 20k-file, 500 MB tree.

    python bench/snapshots.py [--files 20000] [--mb 500] [--dir /path/on/disk]

Builds the tree once, then times `flamechase.workspace.snapshots.snapshot` (cp --reflink=auto
under a temporary name, then rename) and plain `cp -a` into the same file system. Bytes
written = the drop in free space (so a copy-on-write clone shows ~0).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from flamechase.workspace.snapshots import snapshot


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def build(src: Path, files: int, total_mb: int) -> None:
    size = total_mb * 1024 * 1024 // files
    block = os.urandom(size)
    for i in range(files):
        d = src / f"d{i // 500:03d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:05d}.bin").write_bytes(block)


def timed(fn: object, where: Path) -> dict[str, float]:
    os.sync()
    before = free_bytes(where)
    t0 = time.monotonic()
    fn()  # type: ignore[operator]
    os.sync()
    elapsed = time.monotonic() - t0
    return {
        "seconds": round(elapsed, 2),
        "bytes_written_mb": round((before - free_bytes(where)) / 2**20, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--mb", type=int, default=500)
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        root = Path(d)
        src = root / "src"
        build(src, args.files, args.mb)
        out = {
            "files": args.files,
            "mb": args.mb,
            "fs": subprocess.run(
                ["stat", "-f", "-c", "%T", str(root)], capture_output=True, text=True
            ).stdout.strip(),
        }
        out["flamechase_snapshot"] = timed(lambda: snapshot(src, root / "snap"), root)
        out["cp_a"] = timed(
            lambda: subprocess.run(["cp", "-a", f"{src}/.", str(root / "cpa")], check=True), root
        )
        shutil.rmtree(root / "snap")
        shutil.rmtree(root / "cpa")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
