"""`python -m bench [--quick] [--out FILE]`: every figure against its peer or floor, in one run.

Each pair is measured interleaved (A B A B ...) so a machine whose speed drifts (this one is
shared) moves both sides alike; a figure is the median of A, the median of its floor B and
the median of the pair-by-pair ratios A/B with their min-max spread. Writes bench/RESULTS.md
(machine, date, load, what was skipped and why, issue 25's targets met or missed) unless
--out says where; the README's performance section is taken from it. `--quick` (smaller
sizes, fewer pairs, under 3 minutes) is run by tests/test_bench.py under `-m bench`.

The sections: start-up and turns (bench/startup.py), hmz 0.2.2 (bench/hmz.py), lanes and
what a 3-lane run writes (bench/lanes.py), copies (bench/copies.py), artifacts
(bench/artifacts.py), history: resume, status, replay (bench/slope.py), launch in CPU time
(bench/launch.py), targets
(bench/targets.py). Needs, or skips saying so: a Python >= 3.12 (hmz), bubblewrap (the
jail's rows), root and mkfs.xfs (the reflink rows), chromium and Playwright (the replay
opened).
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench import artifacts, copies, history, lanes, launch, slope, startup, targets
from bench import hmz as hmz_peer
from bench.common import Figure, interleave

HERE = Path(__file__).resolve().parent
REFLINK = "xfs+reflink"


@dataclass(frozen=True)
class Sizes:
    rounds: int
    hmz_rounds: int
    hmz_turns: int
    turns: int
    copy_files: int
    measure_files: int
    measure_files_reflink: int
    lanes3_mb: int
    lanes3_rounds: int
    lane_turns: int
    lane_rounds: int
    artifact_mb: int
    history: list[int]
    replay: list[int]
    replay_rounds: int


# The sizes in the full run; --quick keeps the 20,000-file measurement (a target) and
# shrinks the rest.
QUICK = Sizes(3, 2, 6, 10, 1_000, 20_000, 2_000, 5, 1, 3, 2, 16, [10_000], [10_000], 2)
FULL = Sizes(
    5,
    5,
    20,
    60,
    20_000,
    20_000,
    20_000,
    200,
    2,
    10,
    3,
    256,
    [10_000, 100_000],
    [10_000, 100_000],
    5,
)


def hmz_figures(hmz: Path, rounds: int, turns: int) -> list[Figure]:
    """flame_chase on the same fake `claude`, flamechase and hmz 0.2.2 in turn."""
    runs = interleave(
        rounds, lambda: hmz_peer.flamechase_run(turns), lambda: hmz_peer.hmz_run(hmz, turns)
    )
    fc, hz = runs
    med = statistics.median
    gap_a, gap_b = [med(r.gaps) for r in fc], [med(r.gaps) for r in hz]
    what = f"flame_chase on a fake `claude`, {turns} turns"
    return [
        Figure(f"turn start-to-start gap, {what}", "ms", gap_a, "hmz 0.2.2", gap_b, "gap-hmz"),
        Figure(
            f"turns/s, {what}",
            "/s",
            [1000 / g for g in gap_a],
            "hmz 0.2.2",
            [1000 / g for g in gap_b],
        ),
        Figure(
            f"launch -> first agent, {what}, jail off",
            "ms",
            [r.first_ms for r in fc],
            "hmz 0.2.2",
            [r.first_ms for r in hz],
            "first-hmz",
        ),
        Figure(
            f"peak RSS, {what}", "MB", [r.rss_mb for r in fc], "hmz 0.2.2", [r.rss_mb for r in hz]
        ),
    ]


class Bench:
    def __init__(self, quick: bool) -> None:
        self.quick = quick
        self.sizes = QUICK if quick else FULL
        self.figures: list[Figure] = []
        self.notes: list[str] = []
        self.skipped: list[str] = []

    def section(self, name: str, run: Callable[[], object]) -> None:
        t0 = time.monotonic()
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        run()
        print(f"bench: {name} took {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)

    def run(self, tmp: Path) -> None:
        s = self.sizes
        hmz, found = hmz_peer.venv()
        jail = _jail_problem()
        self.section(
            "start-up", lambda: self.figures.extend(startup.help_figures(s.rounds * 2, hmz))
        )
        if hmz is None:
            self.skipped.append(
                f"the hmz 0.2.2 column (`--help`, turn gap, turns/s, launch -> first agent, peak RSS): {found}"
            )
        else:
            self.notes.append(
                f"against {found}: flame_chase, two chasers on the fake `claude` of tests/agents/fakes, "
                "stamped by a `claude` wrapper; flamechase rests 50 ms between turns (its least "
                "rest_seconds), hmz does not; peak RSS is the largest of the runtime and the "
                "processes it waited for (the fake `claude` is smaller than either)"
            )
            self.section("hmz 0.2.2", lambda: self._hmz(hmz))
        if jail is not None:
            self.skipped.append(
                f"the jail's rows (launch -> first agent and the turn gap with bubblewrap): {jail}"
            )
        self.section(
            "turns", lambda: self.figures.extend(startup.turn_figures(tmp, s.rounds, s.turns, jail))
        )
        if jail is None:
            self.section("launch, CPU", lambda: self._launch_cpu(tmp))
        self.notes.append(history.turn_files(tmp / "home"))
        self.section(
            "lanes",
            lambda: self.figures.extend(
                lanes.lanes_figures(tmp, s.lane_rounds, s.lane_turns, (1, 3, 8))
            ),
        )
        self.section("copies", lambda: self._copies(tmp))
        self.section(
            "artifacts",
            lambda: self.figures.extend(artifacts.artifact_figures(tmp, s.rounds, s.artifact_mb)),
        )
        self.section(
            "history",
            lambda: self.figures.extend(slope.history_figures(tmp, s.rounds * 4, s.history)),
        )
        self.section("replay", lambda: self._replay(tmp))
        if self.quick:
            self.skipped.append(
                "`--quick` measures history and the replay at 10,000 events only: the 100,000-event "
                "rows (and the replay target) are the full `python -m bench`'s (making those runs "
                "takes about a minute)"
            )

    def _hmz(self, hmz: Path) -> None:
        try:
            self.figures.extend(hmz_figures(hmz, self.sizes.hmz_rounds, self.sizes.hmz_turns))
        except (RuntimeError, subprocess.SubprocessError) as exc:
            self.skipped.append(f"the hmz 0.2.2 turn rows: {exc}")

    def _launch_cpu(self, tmp: Path) -> None:
        figs, why = launch.cpu_figures(tmp, self.sizes.rounds * 2)
        self.figures += figs
        self.skipped += why

    def _copies(self, tmp: Path) -> None:
        ext = tmp / "ext"
        ext.mkdir()
        where = copies.fs_type(ext)
        self._copies_on(ext, where)
        with copies.reflink_fs(tmp, 8192 if self.quick else 16384) as (mnt, how):
            if mnt is None:
                self.skipped.append(f"copies on a file system with reflink: {how}")
                return
            self.notes.append(
                f"the reflink rows ran on {how}, an image in {where}; du counts a reflinked "
                'copy\'s shared blocks as its own, so the "MB kept" rows there overstate'
            )
            self._copies_on(mnt, REFLINK)

    def _copies_on(self, base: Path, where: str) -> None:
        s = self.sizes
        figs, notes = copies.copies(
            base, s.rounds, s.copy_files, 4096 if self.quick else 10_000, where
        )
        self.figures += figs
        self.notes += notes
        figs, notes = copies.measurement(base, max(2, s.rounds - 1), s.measure_files, 2_000, where)
        self.figures += figs
        self.notes += notes
        self.figures += lanes.lanes3_bytes(base, s.lanes3_rounds, s.lanes3_mb, where)

    def _replay(self, tmp: Path) -> None:
        figs, notes = slope.replay_figures(tmp, self.sizes.replay_rounds, self.sizes.replay)
        self.figures += figs
        self.skipped += notes


def _jail_problem() -> str | None:
    from flamechase.jail import probe

    return probe().bwrap_reason


def _bytecode() -> str:
    # Every start-up figure depends on it: without a bytecode cache each start compiles
    # every module it imports again.
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return "PYTHONDONTWRITEBYTECODE set: modules not yet compiled are compiled at every start"
    return "bytecode cached (PYTHONDONTWRITEBYTECODE unset)"


def report(b: Bench, load: tuple[float, float, float], took: float) -> str:
    lines = [
        "# Benchmark results",
        "",
        f"`python -m bench{' --quick' if b.quick else ''}`, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"this machine: {os.cpu_count()} cores, {platform.machine()}, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}; load average at start "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}, at the end "
        f"{os.getloadavg()[0]:.1f}; took {took:.0f} s; {_bytecode()}.",
        "Each row: flamechase (A) and its peer or floor (B) measured in turn, A B A B ...; "
        "medians, and the median of the pair-by-pair ratios A/B with their spread. For "
        "throughputs (/s, MB/s) higher is better; for everything else lower.",
        "",
        "## Targets",
        "",
        *targets.table(b.figures),
        "",
        "## Figures",
        "",
        "| figure | flamechase (median) | peer / floor | peer (median) | ratio A/B | spread | pairs |",
        "|---|---|---|---|---|---|---|",
        *(f.row() for f in b.figures),
        "",
        *(f"- {n}" for n in b.notes),
        "",
        "## Not measured in this run, and why",
        "",
        *(f"- {n}" for n in b.skipped or ["nothing: every row was measured"]),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench", description=(__doc__ or "").splitlines()[0]
    )
    ap.add_argument("--quick", action="store_true", help="small sizes, few pairs (< 3 min)")
    ap.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    ap.add_argument(
        "--readme",
        action="store_true",
        help="also put the results into README.md's performance section",
    )
    args = ap.parse_args(argv)
    # Stopped with SIGTERM, it still unmounts its XFS image and removes its temporary files.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load = os.getloadavg()
    t0 = time.monotonic()
    b = Bench(args.quick)
    with tempfile.TemporaryDirectory(prefix="fc-bench-") as d:
        b.run(Path(d))
    text = report(b, load, time.monotonic() - t0)
    args.out.write_text(text)
    if args.readme:
        into_readme(HERE.parent / "README.md", text)
    print(text)
    return 0


START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def into_readme(readme: Path, results: str) -> None:
    """Replace what lies between the README's bench markers with `results` (its headings one
    level down, under the README's own `## Performance`)."""
    body = results.split("\n", 1)[1].replace("\n## ", "\n### ")
    text = readme.read_text()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{START}\n{body.strip()}\n{END}{tail}")


if __name__ == "__main__":
    raise SystemExit(main())
