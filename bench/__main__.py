"""`python -m bench [--quick] [--out FILE]`: every figure against its peer or floor, in one run.

Each pair is measured interleaved (A B A B ...) so a machine whose speed drifts (this one is
shared) moves both sides alike; a figure is the median of A, the median of its floor B and
the median of the pair-by-pair ratios A/B with their min-max spread. Writes bench/RESULTS.md
(machine, date, load) unless --out says where; the README's performance section is taken
from it. `--quick` (under 3 minutes) is run by tests/test_bench.py under `-m bench`.

The published runtime (hmz 0.2.2) needs Python >= 3.12: its column is measured in a venv of
the newest such Python found (bench/hmz.py makes it once, under ~/.cache/flamechase-bench),
and skipped, saying so, when none is found.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench import history, launch
from bench import hmz as hmz_peer

HERE = Path(__file__).resolve().parent
PY = sys.executable

ACTOR = """#!/bin/sh
date +%s%N >> "$STAMPS"
if [ -z "$FLAMECHASE_LANE" ]; then
  echo '{"lanes":[]}' > "$FLAMECHASE_REPORT"
else
  echo '{"status":"progress","summary":"instant"}' > "$FLAMECHASE_REPORT"
fi
date +%s%N >> "$STAMPS"
"""


@dataclass
class Figure:
    what: str
    unit: str
    a: list[float]
    peer: str
    b: list[float]

    def row(self) -> str:
        ratios = [x / y for x, y in zip(self.a, self.b, strict=True) if y > 0]
        med = statistics.median
        spread = f"{min(ratios):.2f}-{max(ratios):.2f}" if ratios else "-"
        ratio = f"x{med(ratios):.2f}" if ratios else "-"
        return (
            f"| {self.what} | {med(self.a):.1f} {self.unit} | {self.peer} | "
            f"{med(self.b):.1f} {self.unit} | {ratio} | {spread} | {len(self.a)} |"
        )


def interleave(
    rounds: int, a: Callable[[], float], b: Callable[[], float]
) -> tuple[list[float], list[float]]:
    a(), b()  # warm-up, not counted
    xs: list[float] = []
    ys: list[float] = []
    for _ in range(rounds):
        xs.append(a())
        ys.append(b())
    return xs, ys


def wall_ms(argv: list[str], **kw: object) -> Callable[[], float]:
    def run() -> float:
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, **kw)  # type: ignore[call-overload]
        return (time.perf_counter() - t0) * 1000

    return run


# ---- start-up ---------------------------------------------------------------------------


def startup(rounds: int) -> list[Figure]:
    helpcmd = [PY, "-m", "flamechase", "--help"]
    out = []
    xs, ys = interleave(rounds, wall_ms(helpcmd), wall_ms([PY, "-c", "import click"]))
    out.append(Figure("`flamechase --help`", "ms", xs, "`python -c 'import click'`", ys))
    xs, ys = interleave(rounds, wall_ms(helpcmd), wall_ms([PY, "-S", "-c", "pass"]))
    out.append(Figure("`flamechase --help`", "ms", xs, "bare interpreter", ys))
    return out


def launch_jailed(tmp: Path, rounds: int) -> tuple[list[Figure], list[str]]:
    """Launch -> first agent with the jail on, in CPU time (bench/launch.py)."""
    why = launch.available()
    if why is not None:
        return [], [f"launch -> first agent with the jail: not measured ({why})"]
    run = launch.Launch(tmp)
    xs, ys = interleave(rounds, run.exec_run, run.bare)
    over = statistics.median(xs) - statistics.median(ys)
    note = (
        f"launch -> first agent with the jail: {over:.0f} ms of CPU above a bare spawn of the "
        "same jailed command (the target: within 300 ms); CPU of the whole process tree from "
        "start to the first agent's end, the run stopped there"
    )
    if not run.jailed():
        note += "; the default sandbox here is not bubblewrap"
    what = "launch -> first agent (`exec`, jail on), CPU"
    return [Figure(what, "ms", xs, "bare spawn of the same jailed command, CPU", ys)], [note]


# ---- turns ------------------------------------------------------------------------------


def _stamps(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def exec_run(tmp: Path, turns: int, flow: str = "flame_chase") -> tuple[float, list[float], float]:
    """(launch -> first actor stamp ms, start-to-start gaps ms, peak RSS MB) of one run."""
    ws = Path(tempfile.mkdtemp(dir=tmp))
    actor = tmp / "actor.sh"
    actor.write_text(ACTOR)
    actor.chmod(0o755)
    stamps = ws.parent / (ws.name + ".stamps")
    env = dict(os.environ, FLAMECHASE_HOME=str(tmp / "home"), STAMPS=str(stamps))
    agents = 2 if flow == "flame_chase" else 7
    argv = [PY, "-m", "flamechase", "exec", "-f", flow, *(["-a", f"exec:{actor}"] * agents)]
    argv += ["-p", f"budget.turns={turns},rest_seconds=0.05,sandbox=off", "bench"]
    t0 = time.time_ns()
    proc = subprocess.Popen(
        argv, cwd=ws, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 3):
        raise SystemExit(f"flamechase exec failed ({proc.returncode})")
    got = _stamps(stamps)
    starts = got[0::2]
    gaps = [(b - a) / 1e6 for a, b in itertools.pairwise(starts)]
    return (got[0] - t0) / 1e6, gaps, usage.ru_maxrss / 1024


def bare_loop(tmp: Path, turns: int) -> tuple[float, list[float]]:
    """The floor: the same actor spawned `turns` times in a row by a plain loop."""
    actor = tmp / "actor.sh"
    stamps = tmp / f"bare-{time.time_ns()}.stamps"
    report = tmp / "report.json"
    env = dict(
        os.environ, STAMPS=str(stamps), FLAMECHASE_LANE="lane-1", FLAMECHASE_REPORT=str(report)
    )
    t0 = time.time_ns()
    for _ in range(turns):
        subprocess.run([str(actor)], env=env, check=True)
    got = _stamps(stamps)
    starts = got[0::2]
    return (got[0] - t0) / 1e6, [(b - a) / 1e6 for a, b in itertools.pairwise(starts)]


def turns_figures(tmp: Path, rounds: int, turns: int) -> list[Figure]:
    launch_a, launch_b, gap_a, gap_b, rss_a, rss_b = [], [], [], [], [], []
    exec_run(tmp, 2)
    for _ in range(rounds):
        first, gaps, rss = exec_run(tmp, turns)
        bfirst, bgaps = bare_loop(tmp, turns)
        launch_a.append(first)
        launch_b.append(bfirst)
        gap_a.append(statistics.median(gaps))
        gap_b.append(statistics.median(bgaps))
        rss_a.append(rss)
        rss_b.append(_python_rss())
    return [
        Figure(
            "launch -> first agent (`exec`, jail off)",
            "ms",
            launch_a,
            "bare spawn from a running interpreter",
            launch_b,
        ),
        Figure(
            f"turn start-to-start gap, flame_chase, {turns} turns",
            "ms",
            gap_a,
            "bare spawn loop",
            gap_b,
        ),
        Figure(
            "turns/s", "/s", [1000 / g for g in gap_a], "bare spawn loop", [1000 / g for g in gap_b]
        ),
        Figure("peak RSS of `flamechase exec`", "MB", rss_a, "bare interpreter", rss_b),
    ]


def _python_rss() -> float:
    proc = subprocess.Popen([PY, "-S", "-c", "pass"])
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_maxrss / 1024


# ---- copies -----------------------------------------------------------------------------


def make_tree(root: Path, files: int, size: int) -> None:
    blob = os.urandom(size)
    for i in range(files):
        d = root / f"d{i // 100}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.txt").write_bytes(blob[i % 97 :] + str(i).encode())
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "t"],
        check=True,
    )


def allocated(path: Path) -> float:
    out = subprocess.run(["du", "-s", "--block-size=1", str(path)], capture_output=True, text=True)
    return int(out.stdout.split()[0]) / 1e6


def copies(tmp: Path, rounds: int, files: int, size: int) -> tuple[list[Figure], list[str]]:
    from flamechase.workspace import overlay
    from flamechase.workspace.snapshots import snapshot

    src = tmp / "tree"
    make_tree(src, files, size)
    n = [0]

    def fresh() -> Path:
        n[0] += 1
        return tmp / f"copy-{n[0]}"

    sizes: dict[str, list[float]] = {}

    def timed(name: str, make: Callable[[Path], None]) -> Callable[[], float]:
        def run() -> float:
            dest = fresh()
            t0 = time.perf_counter()
            make(dest)
            ms = (time.perf_counter() - t0) * 1000
            sizes.setdefault(name, []).append(allocated(dest))
            shutil.rmtree(dest, ignore_errors=True)
            return ms

        return run

    def cp(*args: str) -> Callable[[Path], None]:
        def run(dest: Path) -> None:
            subprocess.run(["cp", *args, "--", str(src), str(dest)], check=True)

        return run

    def worktree(dest: Path) -> None:
        subprocess.run(
            ["git", "-C", str(src), "worktree", "add", "-q", "--detach", str(dest)], check=True
        )
        subprocess.run(["git", "-C", str(src), "worktree", "prune"], check=False)

    def measurement_place(dest: Path) -> None:
        # What a submission's measurement costs today: a copy of the baseline, 3 files laid over.
        changed = ["d0/f1.txt", "d1/f101.txt", "d2/f201.txt"]
        snapshot(src, dest)
        lay = tmp / "lane"
        if not lay.exists():
            snapshot(src, lay)
            for rel in changed:
                (lay / rel).write_text("changed\n")
        ch, de = overlay.differences(dest, lay)
        overlay.lay_over(dest, lay, ch, de)

    mine = timed("snapshot", lambda dest: snapshot(src, dest))
    out: list[Figure] = []
    notes: list[str] = []
    peers = [
        ("`cp -a`", timed("cp -a", cp("-a"))),
        ("`cp -a --reflink=auto`", timed("reflink", cp("-a", "--reflink=auto"))),
        ("`git worktree add`", timed("worktree", worktree)),
    ]
    tree_mb = allocated(src / "d0") * (files / 100)
    label = f"{files:,} files, {tree_mb:.0f} MB"
    for peer, run in peers:
        xs, ys = interleave(rounds, mine, run)
        out.append(Figure(f"snapshot of a {label} tree", "ms", xs, peer, ys))
    xs, ys = interleave(rounds, timed("measure", measurement_place), peers[0][1])
    out.append(Figure(f"measurement place, 3 of {files:,} files changed", "ms", xs, "`cp -a`", ys))
    med = statistics.median
    notes.append(
        "bytes allocated per copy (du): "
        + ", ".join(f"{k} {med(v):.1f} MB" for k, v in sorted(sizes.items()))
    )
    return out, notes


# ---- a 3-lane run's copies ----------------------------------------------------------------

PLAN3 = ",".join(
    json.dumps(
        {
            "lane": f"lane-{n}",
            "mission": {"title": "t", "objective": "o", "success_criteria": ["c"]},
        }
    )
    for n in (1, 2, 3)
)


def lanes3_bytes(tmp: Path, rounds: int, mb: int) -> list[Figure]:
    """Bytes a 3-lane parallel_flame_chase run writes (the kernel's count of blocks written by
    it and its children; 0 on tmpfs) and keeps (du of its state home at the end), against the
    floor: the two private lanes' copies."""
    actor = tmp / "actor3.sh"
    actor.write_text(ACTOR.replace('{"lanes":[]}', '{"lanes":[' + PLAN3 + "]}"))
    actor.chmod(0o755)
    written: list[float] = []
    kept: list[float] = []
    floor: list[float] = []
    for r in range(rounds):
        ws = tmp / f"lanes3-{r}"
        ws.mkdir()
        for i in range(100):
            (ws / f"f{i}.bin").write_bytes(os.urandom(mb * 10_000))
        home = tmp / f"home3-{r}"
        argv = [PY, "-m", "flamechase", "exec", "-f", "parallel_flame_chase"]
        argv += [*(["-a", f"exec:{actor}"] * 7), "-p", "budget.turns=6,sandbox=off", "bench"]
        env = dict(os.environ, FLAMECHASE_HOME=str(home), STAMPS=str(tmp / "lanes3.stamps"))
        proc = subprocess.Popen(
            argv, cwd=ws, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status) not in (0, 3):
            raise SystemExit("the 3-lane flamechase exec failed")
        written.append(usage.ru_oublock * 512 / 1e6)
        kept.append(allocated(home))
        floor.append(2 * allocated(ws))
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(ws, ignore_errors=True)
    what = f"3-lane run on a {mb} MB tree"
    return [
        Figure(f"{what}: MB written", "MB", written, "2 private lanes' copies", floor),
        Figure(f"{what}: MB kept at the end", "MB", kept, "2 private lanes' copies", floor),
    ]


# ---- hashing ----------------------------------------------------------------------------


def hashing(tmp: Path, rounds: int, mb: int) -> list[Figure]:
    # The loop the blob store publishes and verifies every artifact with.
    from flamechase.store.blobs import _copy_hashing

    big = tmp / "big.bin"
    with open(big, "wb") as f:
        for _ in range(mb):
            f.write(os.urandom(1 << 20))

    def mine() -> float:
        t0 = time.perf_counter()
        fd = os.open(big, os.O_RDONLY)
        try:
            _copy_hashing(fd, None, 1 << 40)
        finally:
            os.close(fd)
        return mb / (time.perf_counter() - t0)

    def peer() -> float:
        t0 = time.perf_counter()
        subprocess.run(["sha256sum", str(big)], stdout=subprocess.DEVNULL, check=True)
        return mb / (time.perf_counter() - t0)

    xs, ys = interleave(rounds, mine, peer)
    return [Figure(f"artifact hash throughput ({mb} MB file)", "MB/s", xs, "`sha256sum`", ys)]


# ---- the report -------------------------------------------------------------------------


def slope(tmp: Path, rounds: int) -> list[Figure]:
    """`status` and resume at 10,000 turns against the same at 100 (bench/history.py)."""
    small = history.make_run(tmp / "hist-100", 100)
    big = history.make_run(tmp / "hist-10000", 10_000)
    out = []
    for what, timer in (
        ("`status` (run_status)", history.status_ms),
        ("resume's reads", history.resume_ms),
    ):
        a, b = interleave(rounds, timer(big), timer(small))
        out.append(Figure(f"{what}, 10,000 turns and events", "ms", a, "the same at 100", b))
    return out


def hmz_figures(hmz: Path, rounds: int, turns: int) -> list[Figure]:
    """flame_chase on the same fake `claude`, flamechase and hmz 0.2.2 in turn."""
    a, b = interleave(
        rounds,
        lambda: hmz_peer.median_gap(hmz_peer.flamechase_gaps(turns)),
        lambda: hmz_peer.median_gap(hmz_peer.hmz_gaps(hmz, turns)),
    )
    what = f"turn start-to-start gap, flame_chase on a fake `claude`, {turns} turns"
    return [
        Figure(what, "ms", a, "hmz 0.2.2", b),
        Figure(
            "turns/s, the same", "/s", [1000 / g for g in a], "hmz 0.2.2", [1000 / g for g in b]
        ),
    ]


def report(figures: list[Figure], notes: list[str], quick: bool, took: float) -> str:
    load = os.getloadavg()
    lines = [
        "# Benchmark results",
        "",
        f"`python -m bench{' --quick' if quick else ''}`, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"{platform.node() and 'this machine'}: {os.cpu_count()} cores, {platform.machine()}, "
        f"Python {platform.python_version()}, load average at start {load[0]:.1f} / {load[1]:.1f} "
        f"/ {load[2]:.1f}; took {took:.0f} s.",
        "Each row: flamechase (A) and its peer or floor (B) measured in turn, A B A B ...; "
        "medians, and the median of the pair-by-pair ratios A/B with their spread.",
        "",
        "| figure | flamechase (median) | peer / floor | peer (median) | ratio A/B | spread | pairs |",
        "|---|---|---|---|---|---|---|",
        *(f.row() for f in figures),
        "",
        *(f"- {n}" for n in notes),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few rounds (< 3 min)")
    ap.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    args = ap.parse_args(argv)
    rounds = 3 if args.quick else 7
    t0 = time.monotonic()
    figures: list[Figure] = []
    notes: list[str] = []
    hmz, found = hmz_peer.venv()
    if hmz is None:
        notes.append(f"hmz 0.2.2 column skipped: {found}")
    else:
        notes.append(
            f"against {found}: flame_chase, two chasers on the fake `claude` of "
            "tests/agents/fakes, gaps stamped by a `claude` wrapper; flamechase rests 50 ms "
            "between turns (its least rest_seconds), hmz does not"
        )
    with tempfile.TemporaryDirectory(prefix="fc-bench-") as d:
        tmp = Path(d)
        figures += startup(rounds * 2)
        if hmz is not None:
            try:
                figures += hmz_figures(hmz, rounds, 10 if args.quick else 40)
            except (RuntimeError, subprocess.SubprocessError) as exc:
                notes.append(f"hmz 0.2.2 column not measured: {exc}")
        figures += turns_figures(tmp, rounds, 10 if args.quick else 60)
        more, said = launch_jailed(tmp, rounds * 2)
        figures += more
        notes += said
        notes.append(history.turn_files(tmp / "home"))
        more, said = copies(
            tmp, rounds, 500 if args.quick else 20_000, 4096 if args.quick else 10_000
        )
        figures += more
        notes += said
        figures += lanes3_bytes(tmp, 2 if args.quick else rounds, 5 if args.quick else 200)
        figures += hashing(tmp, rounds, 16 if args.quick else 256)
        figures += slope(tmp, rounds * 2)
    notes.append(
        "not measured yet: 8 lanes, "
        "replay at 100-100,000 events (bench/views_replay.py, below), status and resume at 100,000, copies on a reflink file system"
    )
    text = report(figures, notes, args.quick, time.monotonic() - t0)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
