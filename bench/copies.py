"""Copies: a snapshot (what a lane's private copy, the planner's and the baseline cost) against
`cp -a`, `cp -a --reflink=auto` and `git worktree add`, and a submission's measurement place
(a kept copy brought back to the baseline, the submission's changes laid over: what the
engine does, engine/setup.py) against `cp -a`; on this machine's file system and on one with
reflink (an XFS image, loop-mounted, made with reflink=1: needs root and mkfs.xfs).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from bench.common import Figure, allocated, interleave, written_by_me


def fs_type(path: Path) -> str:
    """The file system `path` is on, as mount names it (ext4, xfs, tmpfs, ...)."""
    out = subprocess.run(["df", "--output=fstype", str(path)], capture_output=True, text=True)
    lines = out.stdout.split()
    return lines[-1] if len(lines) > 1 else "?"


@contextlib.contextmanager
def reflink_fs(tmp: Path, size_mb: int) -> Iterator[tuple[Path | None, str]]:
    """(a directory on a loop-mounted XFS with reflink, "xfs") or (None, why not)."""
    if os.geteuid() != 0:
        yield None, "not root (a loop mount needs it)"
        return
    mkfs = shutil.which("mkfs.xfs")
    if mkfs is None:
        yield None, "mkfs.xfs is not installed (`apt-get install xfsprogs`)"
        return
    image, mnt = tmp / "reflink.img", tmp / "reflink"
    mnt.mkdir()
    with open(image, "wb") as f:
        f.truncate(size_mb << 20)  # sparse: costs what is written into it
    made = subprocess.run(
        [mkfs, "-q", "-m", "reflink=1", str(image)], capture_output=True, text=True
    )
    if made.returncode != 0:
        yield None, f"mkfs.xfs failed: {made.stderr.strip()[:200]}"
        return
    mounted = subprocess.run(
        ["mount", "-o", "loop", str(image), str(mnt)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        yield None, f"the loop mount failed: {mounted.stderr.strip()[:200]}"
        return
    try:
        yield mnt, "xfs (reflink=1, loop-mounted)"
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def make_tree(root: Path, files: int, size: int, *, git: bool = True) -> None:
    blob = os.urandom(size)
    for i in range(files):
        d = root / f"d{i // 100}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.txt").write_bytes(blob[i % 97 :] + str(i).encode())
    if not git:
        return
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    # No `gc --auto`: with 20,000 loose objects it would pack them in the background, under
    # the copies being timed (and take the files from under `cp`).
    subprocess.run(["git", "-C", str(root), "config", "gc.auto", "0"], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "t"],
        check=True,
    )


class Copier:
    """Timed copies of `src` into fresh directories beside it, each removed after; the MB
    each allocated (du) and wrote (this process's and its children's dirtied bytes)."""

    def __init__(self, src: Path) -> None:
        self.src = src
        self.n = 0
        self.allocated: dict[str, list[float]] = {}
        self.written: dict[str, list[float]] = {}

    def timed(self, name: str, make: Callable[[Path], None]) -> Callable[[], float]:
        def run() -> float:
            self.n += 1
            dest = self.src.parent / f"copy-{self.n}"
            before = written_by_me()
            t0 = time.perf_counter()
            make(dest)
            ms = (time.perf_counter() - t0) * 1000
            self.written.setdefault(name, []).append((written_by_me() - before) / 1e6)
            self.allocated.setdefault(name, []).append(allocated(dest))
            shutil.rmtree(dest, ignore_errors=True)
            return ms

        return run

    def cp(self, *args: str) -> Callable[[Path], None]:
        def run(dest: Path) -> None:
            subprocess.run(["cp", *args, "--", str(self.src), str(dest)], check=True)

        return run

    def worktree(self, dest: Path) -> None:
        subprocess.run(
            ["git", "-C", str(self.src), "worktree", "add", "-q", "--detach", str(dest)], check=True
        )
        subprocess.run(["git", "-C", str(self.src), "worktree", "prune"], check=False)


def copies(
    base: Path, rounds: int, files: int, size: int, where: str
) -> tuple[list[Figure], list[str]]:
    """Snapshot against its three peers on a tree of `files` files of about `size` bytes."""
    from flamechase.workspace.snapshots import snapshot

    src = base / "tree"
    make_tree(src, files, size)
    c = Copier(src)
    mine = c.timed("snapshot", lambda dest: snapshot(src, dest))
    peers = [
        ("`cp -a --reflink=never`", c.timed("cp -a", c.cp("-a", "--reflink=never"))),
        ("`cp -a --reflink=auto`", c.timed("cp --reflink", c.cp("-a", "--reflink=auto"))),
        ("`git worktree add`", c.timed("worktree", c.worktree)),
    ]
    mb = allocated(src) - allocated(src / ".git")
    label = f"snapshot of a {files:,}-file git checkout ({mb:.0f} MB of files), {where}"
    out: list[Figure] = []
    for peer, run in peers:
        xs, ys = interleave(rounds, mine, run)
        out.append(Figure(label, "ms", xs, peer, ys))
    # The same pairs' bytes: each interleave above called `mine` once more than `rounds`.
    for k, (peer, _) in enumerate(peers):
        name = ("cp -a", "cp --reflink", "worktree")[k]
        start = k * (rounds + 1) + 1
        mine_w = c.written["snapshot"][start : start + rounds]
        out.append(Figure(f"{label}: MB written", "MB", mine_w, peer, c.written[name][1:]))
    med = statistics.median
    note = (
        f"each copy on {where} ({files:,} files): MB allocated (du) / MB written: "
        + ", ".join(
            f"{k} {med(v):.1f} / {med(c.written[k]):.1f}" for k, v in sorted(c.allocated.items())
        )
        + " (git worktree add checks out the files; its objects are shared, not copied)"
    )
    shutil.rmtree(src, ignore_errors=True)
    return out, [note]


def measurement(
    base: Path, rounds: int, files: int, size: int, where: str
) -> tuple[list[Figure], list[str]]:
    """One submission's measurement place, as the engine makes it (engine/setup.py, with
    workspace/overlay.place): a copy of the baseline from the pool (kept from the previous
    measurement, brought back in O(changed)), the lane's changed files laid over; 3 files of
    `files` changed. Against a
    fresh `cp -a` of the tree."""
    from flamechase.workspace import overlay
    from flamechase.workspace.reuse import CopyPool
    from flamechase.workspace.snapshots import snapshot

    src = base / "mtree"
    make_tree(src, files, size, git=False)
    lane = base / "mlane"
    snapshot(src, lane)
    for rel in (
        "d0/f1.txt",
        f"d{files // 200}/f{files // 2 + 1}.txt",
        f"d{files // 100 - 1}/f{files - 2}.txt",
    ):
        (lane / rel).write_text("changed\n")
    pool = CopyPool(base / "pool")
    dest = base / "measure"
    wrote: list[float] = []

    def measure() -> float:
        before = written_by_me()
        t0 = time.perf_counter()
        changed, _ = overlay.place(pool, src, lane, dest)
        ms = (time.perf_counter() - t0) * 1000
        wrote.append((written_by_me() - before) / 1e6)
        assert len(changed) == 3, changed
        (dest / "d0" / "f5.txt").write_text("the evaluator wrote here\n")  # undone next time
        pool.give(dest)
        return ms

    c = Copier(src)
    first = measure()  # the first place is a whole copy; every later one reuses it
    xs, ys = interleave(
        rounds, measure, c.timed("cp -a", c.cp("-a", "--reflink=never")), warm=False
    )
    fig = Figure(
        f"measurement place, 3 of {files:,} files changed, {where} (kept copy reused)",
        "ms",
        xs,
        "`cp -a --reflink=never` of the tree",
        ys,
        f"measure-{where}",
    )
    bytes_fig = Figure(
        f"measurement place, 3 of {files:,} files changed, {where}: MB written",
        "MB",
        wrote[1:],
        "`cp -a --reflink=never` of the tree",
        c.written["cp -a"],
    )
    note = (
        f"measurement places on {where} ({files:,} files): the first is a whole copy "
        f"({first:.0f} ms), every later one the kept copy brought back (the rows); `cp -a "
        "--reflink=never` writes the whole tree on any file system"
    )
    CopyPool.remove(pool.root)
    for p in (src, lane):
        shutil.rmtree(p, ignore_errors=True)
    return [fig, bytes_fig], [note]
