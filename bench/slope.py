"""What grows with a run's history: resume, `status` and the replay at 100, 10,000 and
100,000 events, each size against the same at 100 (the slope: x1 is a cost that does not
grow).

- resume's reads and `run_status`, in this interpreter, on runs of N turn rows and N events
  (bench/history.py);
- `flamechase status RUN` (the whole command: interpreter, the flow's panels) and `flamechase
  show RUN --html` on synthetic parallel_flame_chase runs of N events (tests/view/synth.py),
  the page's size, and opening it in headless chromium (Debian's /usr/bin/chromium through
  Playwright) from `goto` to the page unpacked, folded, drawn and two frames painted, and the
  repaint after moving the bar (the median of 10 moves: two frames, so about 33 ms at best).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import history
from bench.common import PY, ROOT, Figure, interleave

CHROMIUM = os.environ.get("FLAMECHASE_CHROMIUM", "/usr/bin/chromium")
PAINTED = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"
REPAINT = """async (count) => {
  const bar = document.getElementById("bar"), out = [];
  for (let k = 0; k < count; k++) {
    const v = Math.floor((k + 0.5) * (+bar.max) / count);
    const t0 = performance.now();
    bar.value = String(v);
    bar.dispatchEvent(new Event("input", {bubbles: true}));
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    out.push(performance.now() - t0);
  }
  return out;
}"""


def history_figures(tmp: Path, rounds: int, sizes: list[int]) -> list[Figure]:
    small = history.make_run(tmp / "hist-100", 100)
    out = []
    for n in sizes:
        big = history.make_run(tmp / f"hist-{n}", n)
        for what, timer, key in (
            ("`status` (run_status, in-process)", history.status_ms, "status"),
            ("resume's reads", history.resume_ms, "resume"),
        ):
            a, b = interleave(rounds, timer(big), timer(small))
            out.append(
                Figure(
                    f"{what}, {n:,} turns and events", "ms", a, "the same at 100", b, f"{key}-{n}"
                )
            )
    return out


def _synth(home: Path, events: int) -> str:
    sys.path.insert(0, str(ROOT))
    from tests.view.synth import make_run

    return make_run(home, events).name


def _timed(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - t0) * 1000


class Replays:
    """Synthetic runs by size, their pages, and a browser to open them in."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.runs: dict[int, tuple[dict[str, str], str]] = {}
        self.pw: Any = None
        self.browser: Any = None

    def run(self, n: int) -> tuple[dict[str, str], str]:
        if n not in self.runs:
            home = self.tmp / f"synth-{n}"
            self.runs[n] = (dict(os.environ, FLAMECHASE_HOME=str(home)), _synth(home, n))
        return self.runs[n]

    def page(self, n: int) -> Path:
        return self.tmp / f"replay-{n}.html"

    def status(self, n: int) -> Callable[[], float]:
        env, run_id = self.run(n)
        return lambda: _timed([PY, "-m", "flamechase", "status", run_id], env)

    def show(self, n: int) -> Callable[[], float]:
        env, run_id = self.run(n)
        return lambda: _timed(
            [PY, "-m", "flamechase", "show", run_id, "--html", str(self.page(n))], env
        )

    def start_browser(self) -> str | None:
        """None, or why the page is not opened here."""
        if not Path(CHROMIUM).is_file():
            return f"no chromium at {CHROMIUM} (FLAMECHASE_CHROMIUM)"
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            return "Playwright is not installed (pip install -e '.[test]')"
        self.pw = sync_playwright().start()
        self.browser = self.pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
        )
        return None

    def opened(self, n: int, repaints: list[float]) -> Callable[[], float]:
        def run() -> float:
            page = self.browser.new_page(viewport={"width": 1280, "height": 900})
            t0 = time.perf_counter()
            page.goto(self.page(n).as_uri())
            page.wait_for_function(
                "() => window.fcReplay && window.fcReplay.count() > 0", timeout=120_000
            )
            page.evaluate(PAINTED)
            took = (time.perf_counter() - t0) * 1000
            repaints.append(statistics.median(page.evaluate(REPAINT, 10)))
            page.close()
            return took

        return run

    def close(self) -> None:
        if self.browser is not None:
            self.browser.close()
            self.pw.stop()


def replay_figures(tmp: Path, rounds: int, sizes: list[int]) -> tuple[list[Figure], list[str]]:
    r = Replays(tmp)
    out: list[Figure] = []
    notes: list[str] = []
    why = r.start_browser()
    if why is not None:
        notes.append(f"the replay's opening and dragging not measured: {why}")
    try:
        for n in sizes:
            label = f"{n:,} events"
            a, b = interleave(rounds, r.status(n), r.status(100))
            out.append(
                Figure(
                    f"`flamechase status RUN` (the command), {label}",
                    "ms",
                    a,
                    "the same at 100",
                    b,
                    f"status-cli-{n}",
                )
            )
            a, b = interleave(rounds, r.show(n), r.show(100))
            out.append(
                Figure(
                    f"`show --html` (the command), {label}",
                    "ms",
                    a,
                    "the same at 100",
                    b,
                    f"show-{n}",
                )
            )
            size = r.page(n).stat().st_size / 1e6
            small = r.page(100).stat().st_size / 1e6
            out.append(
                Figure(
                    f"replay page, {label}", "MB", [size], "the same at 100", [small], f"page-{n}"
                )
            )
            if why is None:
                big_rep: list[float] = []
                small_rep: list[float] = []
                a, b = interleave(rounds, r.opened(n, big_rep), r.opened(100, small_rep))
                out.append(
                    Figure(
                        f"replay opens in chromium, {label}",
                        "ms",
                        a,
                        "the same at 100",
                        b,
                        f"open-{n}",
                    )
                )
                out.append(
                    Figure(
                        f"replay: moving the bar to its repaint (two frames), {label}",
                        "ms",
                        big_rep[-rounds:],
                        "the same at 100",
                        small_rep[-rounds:],
                        f"drag-{n}",
                    )
                )
    finally:
        r.close()
    return out, notes
