"""Benchmarks of the views (issue 5's numbers): run `python bench/views_replay.py`.

1. `flamechase show RUN --html FILE` on synthetic runs of 10,000 and 100,000 events
   (`--events`): wall time of the whole command (interpreter start-up included), the time the
   command reports for reading the run, building the replay and writing it, and the page's
   size. Target at 10,000: under 2 s.
2. Opening that page in headless chromium (Playwright, Debian's /usr/bin/chromium): from
   `goto` to the page ready (its document unpacked, folded, drawn) and two frames painted,
   the median of `--opens` fresh pages. Target at 100,000 events: under 2 s, a few MB.
3. Dragging the bar on that page:
   - repaint latency: from an `input` event on the bar to the frame after the repainted one
     (two requestAnimationFrame callbacks, so it includes up to two 16.7 ms vsync waits);
   - main-thread work per drag step from Chrome's Performance metrics (script, layout, style,
     whole task).
4. `flamechase simulate parallel_flame_chase` with its defaults: wall time. Target: under 5 s.

Numbers depend on load: run it on an otherwise idle machine (`uptime` is printed with them).
`--json FILE` also writes them as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.view.synth builds the synthetic run

from bench.slope import REPAINT  # noqa: E402  (the same drag, python -m bench's too)
from tests.view.synth import make_run  # noqa: E402

FLAMECHASE = [sys.executable, "-m", "flamechase"]
CHROMIUM = os.environ.get("FLAMECHASE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _stats(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {
        "n": len(xs),
        "min": round(xs[0], 3),
        "median": round(statistics.median(xs), 3),
        "p95": round(xs[min(len(xs) - 1, int(0.95 * len(xs)))], 3),
        "max": round(xs[-1], 3),
    }


def bench_show(home: Path, run_id: str, out: Path, repeat: int) -> dict[str, Any]:
    env = dict(os.environ, FLAMECHASE_HOME=str(home))
    walls, inner = [], []
    for _ in range(repeat):
        t0 = time.monotonic()
        proc = subprocess.run(
            [*FLAMECHASE, "show", run_id, "--html", str(out)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        walls.append(time.monotonic() - t0)
        m = re.search(r"in ([0-9.]+) s", proc.stdout)
        if m:
            inner.append(float(m.group(1)))
    return {"wall_s": _stats(walls), "command_s": _stats(inner), "html_bytes": out.stat().st_size}


PAINTED = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"


def bench_drag(html: Path, steps: int, opens: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        loads = []
        for _ in range(opens):
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            t0 = time.monotonic()
            page.goto(html.as_uri())
            page.wait_for_function(
                "() => window.fcReplay && window.fcReplay.count() > 0", timeout=120_000
            )
            page.evaluate(PAINTED)
            loads.append(time.monotonic() - t0)
            page.close()
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        page.goto(html.as_uri())
        page.wait_for_function(
            "() => window.fcReplay && window.fcReplay.count() > 0", timeout=120_000
        )
        page.evaluate(REPAINT, 5)  # warm up

        def metrics() -> dict[str, float]:
            return {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}

        before = metrics()
        lat: list[float] = page.evaluate(REPAINT, steps)
        after = metrics()
        per = {
            k: round((after[k] - before[k]) / steps * 1000, 3)
            for k in ("ScriptDuration", "LayoutDuration", "RecalcStyleDuration", "TaskDuration")
        }
        # A real mouse drag across the bar, end to end, for the record.
        box = page.locator("#bar").bounding_box()
        assert box is not None
        y = box["y"] + box["height"] / 2
        page.mouse.move(box["x"] + box["width"] - 2, y)
        page.mouse.down()
        t1 = time.monotonic()
        page.mouse.move(box["x"] + 2, y, steps=steps)
        page.mouse.up()
        drag_s = time.monotonic() - t1
        points = page.evaluate("() => window.fcReplay.count()")
        browser.close()
    return {
        "points": points,
        "page_open_s": _stats(loads),
        "repaint_ms": _stats(lat),
        "per_step_main_thread_ms": per,
        "mouse_drag": {
            "steps": steps,
            "seconds": round(drag_s, 3),
            "ms_per_step": round(1000 * drag_s / steps, 3),
        },
    }


def bench_simulate(tmp: Path, repeat: int) -> dict[str, Any]:
    walls = []
    for i in range(repeat):
        env = dict(os.environ, FLAMECHASE_HOME=str(tmp / f"simhome{i}"), TMPDIR=str(tmp))
        t0 = time.monotonic()
        subprocess.run(
            [*FLAMECHASE, "simulate", "parallel_flame_chase", "--html", str(tmp / f"sim{i}.html")],
            env=env,
            cwd=tmp,
            capture_output=True,
            text=True,
            check=True,
        )
        walls.append(time.monotonic() - t0)
    return {"wall_s": _stats(walls)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--opens", type=int, default=5, help="fresh pages opened, for the median")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    results: dict[str, Any] = {"uptime": os.getloadavg(), "cpus": os.cpu_count()}
    browser = not args.no_browser and Path(CHROMIUM).is_file()
    lines = []
    with tempfile.TemporaryDirectory(prefix="fc-bench-") as d:
        tmp = Path(d)
        for n in args.events:
            home = tmp / f"home{n}"
            run_dir = make_run(home, n)
            html = tmp / f"replay{n}.html"
            size: dict[str, Any] = {"show_html": bench_show(home, run_dir.name, html, args.repeat)}
            if browser:
                size["drag"] = bench_drag(html, args.steps, args.opens)
            results[f"events_{n}"] = size
            show = size["show_html"]
            line = (
                f"{n:,} events: page {show['html_bytes'] / 1e6:.2f} MB, show --html median "
                f"{show['wall_s']['median']} s wall ({show['command_s']['median']} s in the"
                " command)"
            )
            if browser:
                opened, r = size["drag"]["page_open_s"], size["drag"]["repaint_ms"]
                line += (
                    f"; opens in {opened['median']} s (median of {opened['n']}), drag to"
                    f" repaint median {r['median']} ms, p95 {r['p95']} ms"
                )
            lines.append(line)
        results["simulate"] = bench_simulate(tmp, max(1, args.repeat // 2 + 1))
    results["loadavg_after"] = os.getloadavg()
    print(json.dumps(results, indent=1))
    for line in lines:
        print(line)
    ok_sim = results["simulate"]["wall_s"]["median"] < 5.0
    print(
        f"simulate: median {results['simulate']['wall_s']['median']} s"
        f" ({'OK' if ok_sim else 'OVER'} 5 s)"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
