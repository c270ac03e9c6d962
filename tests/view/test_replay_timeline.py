"""The replay's timeline in chromium: a key for every colour it draws, and long idle stretches
(a run stopped for a night, every lane waiting out a usage limit) drawn as narrow breaks
rather than as empty width, with turns, the playhead and the chart on the same scale."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flamechase.view.replay import write_replay
from tests.view.conftest import Run
from tests.view.synth import make_run
from tests.view.test_replay_browser import _open

NIGHT = 9 * 3600.0
LIMIT = 2 * 3600.0


def _colours(page: Any) -> dict[str, Any]:
    """Each block class drawn → its fill, and each key swatch class → its colour."""
    result: dict[str, Any] = page.evaluate("""() => {
      const blocks = {}, keys = {};
      for (const b of document.querySelectorAll("#tl-rows .blk")) {
        blocks[b.getAttribute("class")] = getComputedStyle(b).fill;
      }
      for (const s of document.querySelectorAll("#tl-key .sw")) {
        keys[s.className.replace("sw", "").trim()] = {
          colour: getComputedStyle(s).backgroundColor,
          label: s.parentNode.textContent.trim(), shown: s.getBoundingClientRect().width > 0};
      }
      return {blocks, keys};
    }""")
    return result


@pytest.mark.parametrize("which", ["sim_run", "rough_run"])
def test_every_colour_on_the_timeline_has_a_key(
    page: Any, which: str, request: pytest.FixtureRequest
) -> None:
    run: Run = request.getfixturevalue(which)
    _open(page, run.html)
    seen = _colours(page)
    assert seen["blocks"], "the timeline draws turn blocks"
    key_colours = {k: v["colour"] for k, v in seen["keys"].items()}
    assert all(v["shown"] and v["label"] for v in seen["keys"].values())
    for cls, fill in seen["blocks"].items():
        # A block is keyed by its report status when it has one, else by how it ended.
        parts = cls.split()[1:]
        keyed = [p for p in parts if p in key_colours]
        assert keyed, f"no key entry for a block drawn as {cls!r}"
        assert fill in {key_colours[p] for p in keyed}, (cls, fill, key_colours)


def test_the_key_names_what_the_rough_run_shows(page: Any, rough_run: Run) -> None:
    _open(page, rough_run.html)
    seen = _colours(page)
    labels = {v["label"] for v in seen["keys"].values()}
    assert {"progress", "deliverable ready", "blocked", "failed"} <= labels
    # The planner's turn (a plan, not a report) is drawn on its own track and keyed too.
    assert "valid (a result other than a report)" in labels
    classes = " ".join(seen["blocks"])
    assert "s-failed" in classes and "r-blocked" in classes


@pytest.fixture(scope="module")
def night_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A synthetic run stopped for 9 hours halfway and paused 2 hours by a usage limit."""
    base = tmp_path_factory.mktemp("night")
    run_dir = make_run(base / "home", 400, gaps=[(0.5, "stop", NIGHT), (0.75, "pause", LIMIT)])
    out = base / "night.html"
    doc = write_replay(run_dir, out)
    return out, doc


def _timeline(page: Any) -> dict[str, Any]:
    result: dict[str, Any] = page.evaluate("""() => {
      const area = document.getElementById("tl-rows").getBoundingClientRect();
      const rel = (r) => ({l: (r.left - area.left) / area.width,
                           r: (r.right - area.left) / area.width});
      return {
        breaks: [...document.querySelectorAll("#tl-brk .brk")].map((b) => ({
          ...rel(b.getBoundingClientRect()), text: b.textContent, title: b.title})),
        blocks: [...document.querySelectorAll("#tl-rows .blk")].map((b) => ({
          ...rel(b.getBoundingClientRect()), i: +b.dataset.i})),
      };
    }""")
    return result


def test_a_night_stopped_run_is_drawn_with_a_break(
    page: Any, night_run: tuple[Path, dict[str, Any]]
) -> None:
    html, doc = night_run
    points = doc["points"]
    _open(page, html)
    tl = _timeline(page)
    assert len(tl["breaks"]) == 2
    stop, pause = tl["breaks"]
    assert stop["text"] == "stopped 9h00m00s"
    assert "run stopped for 9h00m00s" in stop["title"]
    assert pause["text"].startswith("idle 2h00m")
    # Both are narrow: the hours they stand for take no more room than a few turns.
    for b in tl["breaks"]:
        assert 0 < b["r"] - b["l"] < 0.05, b
    # The turns fill the rest of the width: some end just before the stop, some start just
    # after the resume, and the last ends at the right edge.
    before = max(b["r"] for b in tl["blocks"] if b["r"] <= stop["l"] + 1e-6)
    after = min(b["l"] for b in tl["blocks"] if b["l"] >= stop["r"] - 1e-6)
    assert stop["l"] - before < 0.02 and after - stop["r"] < 0.02
    assert max(b["r"] for b in tl["blocks"]) == pytest.approx(1.0, abs=0.01)
    # Drawn to scale, the night and the wait would squeeze every turn before them into the
    # first hundredth; as breaks, those turns take a third of the width or more.
    stopped = next(p["t"] for p in points if p["k"] == "run_stopped")
    assert stopped / points[-1]["t"] < 0.02
    first_half = [b for b in tl["blocks"] if b["r"] <= stop["l"] + 1e-6]
    assert max(b["r"] for b in first_half) > 0.3


def test_the_playhead_and_chart_use_the_same_scale(
    page: Any, night_run: tuple[Path, dict[str, Any]]
) -> None:
    html, doc = night_run
    points = doc["points"]
    _open(page, html)
    stop = _timeline(page)["breaks"][0]
    resumed = next(i for i, p in enumerate(points) if p["k"] == "run_resumed")
    for i, side in ((resumed - 1, "left"), (resumed, "right")):
        page.evaluate("(i) => window.fcReplay.go(i)", i)
        page.wait_for_function("(i) => window.fcReplay.cur() === i", arg=i)
        x = page.evaluate("""() => new Promise((res) => requestAnimationFrame(() => {
          const area = document.getElementById("tl-rows").getBoundingClientRect();
          const ph = document.getElementById("tl-ph").getBoundingClientRect();
          const chart = document.querySelector("#chart line");
          res([(ph.left - area.left) / area.width, +chart.getAttribute("x1") / 1000]);
        }))""")
        edge = stop["l"] if side == "left" else stop["r"]
        assert x[0] == pytest.approx(edge, abs=0.01), (side, x, stop)
        assert x[1] == pytest.approx(x[0], abs=0.01)


def test_a_run_without_long_stretches_has_no_break(page: Any, sim_run: Run, tmp_path: Path) -> None:
    _open(page, sim_run.html)
    assert _timeline(page)["breaks"] == []
    # Nor does a busy synthetic run whose turns follow each other closely.
    run_dir = make_run(tmp_path / "home", 200)
    out = tmp_path / "busy.html"
    write_replay(run_dir, out)
    _open(page, out)
    assert _timeline(page)["breaks"] == []
