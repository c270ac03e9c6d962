"""Fixtures for the views: real simulated runs, a synthetic 10,000-event run, a browser.

The browser is Debian's chromium driven by Playwright for Python (never `playwright
install`). Browser tests skip, saying why, only when chromium or playwright is missing.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flamechase.view.replay import load_run
from tests.helpers import cli
from tests.view.synth import make_run

CHROMIUM = Path(os.environ.get("FLAMECHASE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Set to write the README's screenshots (docs/img/) from the test run.
SCREENSHOTS = os.environ.get("FLAMECHASE_SCREENSHOTS")
REPO = Path(__file__).resolve().parents[2]


@dataclasses.dataclass
class Run:
    home: Path
    run_dir: Path
    html: Path
    run: dict[str, Any]
    lanes: list[dict[str, Any]]
    events: list[dict[str, Any]]
    stdout: str


def simulate(tmp: Path, *args: str) -> Run:
    """`flamechase simulate parallel_flame_chase --keep` in a subprocess, into `tmp`."""
    home = tmp / "home"
    html = tmp / "replay.html"
    # TMPDIR: the kept workspace copy lands under pytest's tmp, not in /tmp for good.
    env = {"FLAMECHASE_HOME": str(home), "TMPDIR": str(tmp)}
    proc = cli(
        "simulate",
        "parallel_flame_chase",
        "--keep",
        "--html",
        str(html),
        *args,
        cwd=tmp,
        env=env,
        timeout=110,
    )
    assert proc.returncode in (0, 3), proc.stderr
    (run_dir,) = list((home / "runs").iterdir())
    run, lanes, events = load_run(run_dir)
    return Run(home, run_dir, html, run, lanes, events, proc.stdout)


@pytest.fixture(scope="session")
def sim_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """A real parallel_flame_chase run with steady sim actors, as `simulate` makes it."""
    return simulate(tmp_path_factory.mktemp("sim"))


@pytest.fixture(scope="session")
def rough_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """A run with failures and a held lane: in lane 2 a flaky actor and one that never
    reports (every one of its turns fails), in lane 3 an actor that reports blocked."""
    return simulate(
        tmp_path_factory.mktemp("rough"),
        "-a",
        "lane_2_actor_a=sim/flaky,lane_2_actor_b=sim/silent,lane_3_actor_a=sim/blocked",
        "-p",
        "budget.turns=16",
    )


@pytest.fixture(scope="session")
def big_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic finished run of 10,000 events (its run directory)."""
    return make_run(tmp_path_factory.mktemp("big") / "home", 10_000)


# Per module, not per session: while Playwright's sync API is open, its event loop counts as
# running in this thread, and any later test of the same worker that calls asyncio.run (a
# flow author's run_engine, say) would fail whichever module it is in.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install playwright)")
    if not CHROMIUM.is_file():
        pytest.skip(f"no chromium at {CHROMIUM}: apt-get install chromium (CI installs it)")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page; any script error on it fails the test."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield pg
    ctx.close()
    assert not errors, errors
