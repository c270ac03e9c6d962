"""Artifacts: publishing a file into the blob store (checked, hashed, copied, fsynced:
`BlobStore.freeze`) and verifying it there (`BlobStore.verify`, what every extraction and
integration does first), in MB/s, against `sha256sum` of the same file (the floor of
reading and hashing it once)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from bench.common import Figure, interleave


def artifact_figures(tmp: Path, rounds: int, mb: int) -> list[Figure]:
    from flamechase.store.blobs import BlobStore

    root = tmp / "artifacts"
    root.mkdir()
    big = root / "big.bin"
    with open(big, "wb") as f:
        for _ in range(mb):
            f.write(os.urandom(1 << 20))
    stores = tmp / "stores"
    stores.mkdir()
    n = [0]
    sha = [""]

    def publish() -> float:
        n[0] += 1
        store = BlobStore(stores / str(n[0]), file_limit=(mb + 1) << 20)
        t0 = time.perf_counter()
        (frozen,) = store.freeze(root, [("big.bin", "bench")])
        took = time.perf_counter() - t0
        sha[0] = frozen.sha256
        store.allow_removal()
        shutil.rmtree(store.root)
        return mb / took

    publish()
    kept = BlobStore(stores / "kept", file_limit=(mb + 1) << 20)
    kept.freeze(root, [("big.bin", "bench")])

    def verify() -> float:
        t0 = time.perf_counter()
        assert kept.verify(sha[0])
        return mb / (time.perf_counter() - t0)

    def sha256sum(path: Path) -> float:
        t0 = time.perf_counter()
        subprocess.run(["sha256sum", str(path)], stdout=subprocess.DEVNULL, check=True)
        return mb / (time.perf_counter() - t0)

    out = []
    xs, ys = interleave(rounds, publish, lambda: sha256sum(big))
    out.append(Figure(f"artifact publish ({mb} MB file)", "MB/s", xs, "`sha256sum`", ys))
    xs, ys = interleave(rounds, verify, lambda: sha256sum(kept.blob_path(sha[0])))
    out.append(Figure(f"artifact verify ({mb} MB blob)", "MB/s", xs, "`sha256sum`", ys))
    kept.allow_removal()
    shutil.rmtree(stores, ignore_errors=True)
    shutil.rmtree(root, ignore_errors=True)
    return out
