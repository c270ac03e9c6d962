"""The replay page in a real headless chromium: steps, drag, offline, screenshots, speed.

What the page shows at each point is checked against an independent fold of the run's
events (not against the page's own data).
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import pytest

from flamechase.view.replay import build_document, render_html, write_replay
from flamechase.view.state import RunFold
from tests.view.conftest import REPO, SCREENSHOTS, Run
from tests.view.synth import make_run

# One round trip: everything the state panels show, as text, once the frame that a click or
# drag asked for has been drawn (the page renders on the next animation frame).
PANELS = """async () => {
  await new Promise((r) => requestAnimationFrame(() => r()));
  const $ = (s) => document.querySelector(s);
  const txt = (e) => e ? e.textContent : null;
  return {
    n: txt($("#now-n")), now: txt($("#now-x")), pos: txt($("#pos")),
    cur: window.fcReplay.cur(), bar: +$("#bar").value, status: txt($("#status")),
    lanes: [...$("#lanes").tBodies[0].rows].map((r) => [...r.cells].map(txt)),
    pending: [...document.querySelectorAll("#pending div[data-lane]")].map(
      (d) => [d.dataset.lane, txt(d.querySelector("b")), txt(d.querySelector(".ids"))]),
    board: txt($("#board")), spend: [...$("#spend").rows].map((r) => [...r.cells].map(txt)),
    ph: $("#tl-ph").style.transform, hi: $("#tl-hi").hidden ? null : $("#tl-hi").title,
  };
}"""


# Predicates are functions, never expression strings: Playwright evaluates a string with
# eval(), which the page's Content-Security-Policy (rightly) refuses.


def _open(page: Any, path: Path) -> None:
    page.goto(path.as_uri())
    page.wait_for_function("() => window.fcReplay && window.fcReplay.count() > 0")


def _panels(page: Any) -> dict[str, Any]:
    result: dict[str, Any] = page.evaluate(PANELS)
    return result


def _state_cell(lane: Any) -> str:
    """What the lanes table's State cell says: the state, then why (a hold's reason, a pause's
    end, the last turn's error while the lane has failures)."""
    word = {"turn": "on turn"}.get(lane.state, lane.state)
    if lane.held:
        return word + (lane.held_reason or "no reason recorded")
    if lane.paused_until and lane.state == "paused":
        return word + "until " + lane.paused_until
    if lane.failures and lane.last_error:
        return word + "last turn failed: " + lane.last_error
    return word


def _check_point(
    panels: dict[str, Any], i: int, points: list[dict[str, Any]], fold: RunFold
) -> None:
    """The page at point i says what the events up to i say."""
    n = len(points)
    assert panels["n"] == f"#{i + 1}"
    assert panels["now"] == points[i]["x"]
    assert panels["pos"].startswith(f"{i + 1} / {n} ")
    assert panels["cur"] == panels["bar"] == i
    assert panels["status"] == fold.status
    # The page knows every track from the start; a track seen later has no row in the fold yet.
    for row, name in zip(panels["lanes"][: len(fold.order)], fold.order, strict=True):
        lane = fold.lanes[name]
        assert row[0] == name
        assert row[1] == _state_cell(lane)
        assert row[2] == (f"{lane.actor} · turn {lane.turn}" if lane.actor else "")
        assert row[5] == str(lane.turns)
        # Every failed turn, then how many of the latest failed in a row.
        row_of = f" ({lane.failures} in a row)" if lane.failures else ""
        assert row[6] == str(lane.failed) + row_of
    for name, head, ids in panels["pending"]:
        want = fold.pending(name)
        assert head.startswith(f"{name} ← {len(want)}")
        shown = [part.split(" (")[0] for part in ids.split(", ") if part and "more" not in part]
        assert shown == want[:6]
    best = fold.best
    if best is not None:
        assert f"= {best.value:g} ({best.direction}) from {best.lane}" in panels["board"]
    cost = next(r for r in panels["spend"] if r[0] == "cost")
    # JS and Python may round a half differently in the fourth decimal.
    assert float(cost[1].lstrip("$")) == pytest.approx(fold.cost, abs=1.01e-4)
    turns = next(r for r in panels["spend"] if r[0] == "turns")
    assert turns[1] == f"{fold.turns:,}"


def test_next_and_prev_walk_every_event(page: Any, sim_run: Run) -> None:
    points = build_document(sim_run.run, sim_run.lanes, sim_run.events)["points"]
    _open(page, sim_run.html)
    n = len(points)
    assert _panels(page)["cur"] == n - 1  # a finished run opens at its end
    page.keyboard.press("Home")
    fold = RunFold.from_run(sim_run.run, sim_run.lanes)
    states = []
    for i in range(n):
        if i:
            page.click("#next")
        fold.apply(sim_run.events[i])
        panels = _panels(page)
        _check_point(panels, i, points, fold)
        states.append(panels)
    page.click("#next")  # past the end: stays
    assert _panels(page)["cur"] == n - 1
    for i in range(n - 2, n - 8, -1):
        page.click("#prev")
        assert _panels(page) == states[i]
    # Every hand-off is narrated: the page shows a receive and a report hand-off.
    texts = [p["x"] for p in points]
    assert any(" receives " in t for t in texts)
    assert any(" files a report " in t and "artifact" in t for t in texts)


def test_failed_turns_are_seen_and_counted(page: Any, rough_run: Run) -> None:
    _open(page, rough_run.html)
    # However short, a failed turn is drawn at least 4 px wide on its track.
    widths = page.evaluate(
        "() => [...document.querySelectorAll('rect.blk.s-failed')]"
        ".map((r) => r.getBoundingClientRect().width)"
    )
    assert widths and min(widths) >= 3.9, widths
    # The lanes table counts every failed turn, and says how many failed in a row.
    fold = RunFold.from_run(rough_run.run, rough_run.lanes)
    for e in rough_run.events:
        fold.apply(e)
    rows = {r[0]: r for r in _panels(page)["lanes"]}
    lane = fold.lanes["lane-2"]
    assert lane.failed >= 2
    assert rows["lane-2"][6].startswith(str(lane.failed)), rows["lane-2"]
    assert page.text_content("#lanes thead") is not None
    assert "Failed turns (in a row)" in page.text_content("#lanes thead")


def test_the_charts_cursor_and_the_tracks_cursor_are_at_the_same_x(page: Any, sim_run: Run) -> None:
    _open(page, sim_run.html)
    for key in ("Home", "ArrowRight", "ArrowRight", "ArrowRight"):
        page.keyboard.press(key)
        xs = page.evaluate(
            """async () => {
              await new Promise((r) => requestAnimationFrame(() => r()));
              const ph = document.querySelector("#tl-ph").getBoundingClientRect();
              const line = document.querySelector("#chart line").getBoundingClientRect();
              const rows = document.querySelector("#tl-rows").getBoundingClientRect();
              const chart = document.querySelector("#chart").getBoundingClientRect();
              return [ph.left, line.left + line.width / 2, rows.left, chart.left,
                      rows.width, chart.width];
            }"""
        )
        assert abs(xs[2] - xs[3]) < 1.5 and abs(xs[4] - xs[5]) < 1.5, xs  # same span
        assert abs(xs[0] - xs[1]) < 3, xs  # the two cursors, within the lines' widths
    # The chart's axes have values: each line's lowest and highest, cost in dollars.
    ax = page.evaluate(
        "() => [...document.querySelectorAll('#chart-ax span')].map((e) => e.textContent)"
    )
    assert "$0.0000" in ax and any(v.startswith("$") and v != "$0.0000" for v in ax), ax


def test_dragging_the_bar_shows_that_point(page: Any, sim_run: Run) -> None:
    doc = build_document(sim_run.run, sim_run.lanes, sim_run.events)
    points = doc["points"]
    _open(page, sim_run.html)
    box = page.locator("#bar").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] - 4, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.4, y, steps=8)
    page.mouse.up()
    i = _panels(page)["cur"]
    assert 0 < i < len(points) - 1
    fold = RunFold.from_run(sim_run.run, sim_run.lanes)
    for ev in sim_run.events[: i + 1]:
        fold.apply(ev)
    panels = _panels(page)
    _check_point(panels, i, points, fold)
    span = points[-1]["t"]
    # The playhead stands at the point's time (the browser keeps 4 decimals of a percentage).
    x = float(panels["ph"].removeprefix("translateX(").removesuffix("%)"))
    assert x == pytest.approx(100 * points[i]["t"] / span, abs=1e-3)
    page.mouse.move(box["x"] + box["width"] * 0.4, y)
    page.mouse.down()
    page.mouse.move(box["x"] - 50, y, steps=4)
    page.mouse.up()
    assert _panels(page)["cur"] == 0
    assert _panels(page)["now"].startswith("Run created")


def test_turn_blocks_and_narration_rows_jump_to_their_point(page: Any, sim_run: Run) -> None:
    points = build_document(sim_run.run, sim_run.lanes, sim_run.events)["points"]
    _open(page, sim_run.html)
    tracks = page.locator(".trow[data-lane]")
    assert tracks.count() == 4  # planning + three lanes
    blocks = page.locator('.trow[data-lane="lane-2"] .blk')
    turns_2 = [p for p in points if p["l"] == 1 and "e" in p["d"]]
    assert blocks.count() == len(turns_2)
    blocks.first.click()
    i = _panels(page)["cur"]
    assert points[i] == turns_2[0]
    assert _panels(page)["hi"] is not None
    page.locator("#story").evaluate("e => { e.scrollTop = 0; }")
    row = page.locator('#story .row[data-i="1"]')
    row.wait_for()
    assert row.locator("b").text_content() == "#2"
    row.click()
    assert _panels(page)["cur"] == 1


def test_play_and_pause(page: Any, sim_run: Run) -> None:
    _open(page, sim_run.html)
    page.keyboard.press("Home")
    page.click("#play")
    assert page.locator("#play").text_content() == "Pause"
    page.wait_for_function("() => window.fcReplay.cur() >= 5")
    page.click("#play")
    assert page.locator("#play").text_content() == "Play"
    at = _panels(page)["cur"]
    page.wait_for_timeout(400)
    assert _panels(page)["cur"] == at


def test_offline_page_requests_nothing(browser: Any, sim_run: Run) -> None:
    html = sim_run.html.read_text()
    ctx = browser.new_context(offline=True)
    try:
        page = ctx.new_page()
        requested: list[str] = []
        page.on("request", lambda r: requested.append(r.url))

        def refuse(route: Any) -> None:
            requested.append(route.request.url)
            route.abort()

        page.route("**/*", refuse)
        page.set_content(html)
        page.wait_for_function("() => window.fcReplay && window.fcReplay.count() > 0")
        page.keyboard.press("Home")
        page.click("#play")
        page.wait_for_function("() => window.fcReplay.cur() >= 10")
        page.click("#play")
        assert requested == []
        # Opened from disk it works as well, and asks for nothing but the file itself.
        page.unroute("**/*")
        page.goto(sim_run.html.as_uri())
        page.wait_for_function("() => window.fcReplay && window.fcReplay.count() > 0")
        assert {u for u in requested} == {sim_run.html.as_uri()}
    finally:
        ctx.close()


def test_hostile_summary_is_shown_as_text(page: Any, tmp_path: Path) -> None:
    evil = "</script><img src=x onerror=alert(1)><script>alert(2)</script>"
    run_dir = make_run(tmp_path / "home", 40, summary=evil)
    out = tmp_path / "evil.html"
    write_replay(run_dir, out)
    dialogs: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    _open(page, out)
    page.keyboard.press("Home")
    for _ in range(40):
        if evil in (_panels(page)["now"] or ""):
            break
        page.click("#next")
    assert evil in _panels(page)["now"]
    assert page.locator("img").count() == 0
    assert dialogs == []


def _png_stats(page: Any, png: bytes) -> dict[str, float]:
    """Distinct colours and the share of non-white pixels, measured by the browser itself."""
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    # A page of its own: replacing the replay's document under its pending frame callbacks
    # would make them fail on elements that are gone.
    page = page.context.new_page()
    page.set_content("<canvas id=c></canvas>")
    result: dict[str, float] = page.evaluate(
        """async (url) => {
      const img = new Image(); img.src = url; await img.decode();
      const c = document.getElementById("c"); c.width = img.width; c.height = img.height;
      const g = c.getContext("2d"); g.drawImage(img, 0, 0);
      const d = g.getImageData(0, 0, c.width, c.height).data, seen = new Set();
      let ink = 0;
      for (let k = 0; k < d.length; k += 16) {
        seen.add((d[k] << 16) | (d[k + 1] << 8) | d[k + 2]);
        if (d[k] < 235 || d[k + 1] < 235 || d[k + 2] < 235) ink++;
      }
      return {colours: seen.size, ink: ink / (d.length / 16), w: c.width, h: c.height};
    }""",
        url,
    )
    page.close()
    return result


def test_screenshot_of_the_replay_is_not_blank(page: Any, sim_run: Run) -> None:
    points = build_document(sim_run.run, sim_run.lanes, sim_run.events)["points"]
    _open(page, sim_run.html)
    # A telling moment: lane 1 takes in another lane's package.
    target = next(
        (i for i, p in enumerate(points) if "Integrated report" in p["x"]), len(points) // 2
    )
    page.evaluate("(i) => window.fcReplay.go(i)", target)
    page.wait_for_function("(i) => window.fcReplay.cur() === i", arg=target)
    page.wait_for_timeout(50)
    for lane in ("lane-1", "lane-2", "lane-3"):
        row = page.locator(f'.trow[data-lane="{lane}"]')
        assert row.bounding_box()["width"] > 300
        assert row.locator(".blk").count() >= 2
        assert row.locator(".blk").first.bounding_box()["width"] >= 3
    png = page.screenshot(full_page=True)
    if SCREENSHOTS:
        (REPO / "docs" / "img").mkdir(parents=True, exist_ok=True)
        (REPO / "docs" / "img" / "replay.png").write_bytes(
            page.screenshot(clip={"x": 0, "y": 0, "width": 1280, "height": 900})
        )
    stats = _png_stats(page, png)
    assert stats["w"] >= 1280 and stats["h"] >= 900
    assert stats["colours"] > 20
    assert stats["ink"] > 0.05


def test_terminal_view_screenshot(page: Any, sim_run: Run) -> None:
    """The live view, rendered mid-run by rich and photographed (the README's picture)."""
    from io import StringIO

    from rich.console import Console

    from flamechase.view.live import event_line
    from flamechase.view.renderables import dashboard
    from flamechase.view.state import parse_at

    # The busiest moment of the run (most lanes with a turn under way, once 4 turns are done;
    # the first such moment): how busy a real run gets at once depends on the machine.
    fold = RunFold.from_run(sim_run.run, sim_run.lanes)
    best, upto = -1, 1
    for i, ev in enumerate(sim_run.events[:-1], start=1):
        fold.apply(ev)
        busy = sum(1 for s in fold.lanes.values() if s.actor) if fold.turns >= 4 else 0
        if busy > best:
            best, upto = busy, i
    assert best >= 1, "no turn was ever under way"
    fold = RunFold.from_run(sim_run.run, sim_run.lanes)
    recent: list[str] = []
    for ev in sim_run.events[:upto]:
        recent = [*recent[-5:], event_line(ev, fold.apply(ev))]
    # The moment just before the next event: turns under way show how long they have run.
    now = parse_at(sim_run.events[upto]["at"])
    console = Console(record=True, width=110, file=StringIO(), force_terminal=True)
    console.print(
        dashboard(fold.snapshot(now), now, recent, workspace=str(sim_run.run["workspace"]))
    )
    # rich's SVG names a web font on a CDN; the system's monospace font will do.
    svg = re.sub(r"@font-face\s*\{[^}]*\}", "", console.export_svg(title="flamechase exec"))
    page.set_content(f"<body style='margin:0;background:#fff'>{svg}</body>")
    shot = page.locator("svg").first.screenshot()
    if SCREENSHOTS:
        (REPO / "docs" / "img").mkdir(parents=True, exist_ok=True)
        (REPO / "docs" / "img" / "terminal.png").write_bytes(shot)
    stats = _png_stats(page, shot)
    assert stats["colours"] > 8 and stats["ink"] > 0.2


def _repaint_latencies(page: Any, count: int) -> list[float]:
    """Milliseconds from an `input` on the bar to the next painted frame, `count` times."""
    result: list[float] = page.evaluate(
        """async (count) => {
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
    }""",
        count,
    )
    return result


def test_ten_thousand_event_page_repaints_and_drags(
    page: Any, big_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "big.html"
    write_replay(big_run, out)
    _open(page, out)
    n = page.evaluate("() => window.fcReplay.count()")
    assert n >= 10_000
    lat = _repaint_latencies(page, 40)
    # Every step repainted; how fast is bench/views_replay.py's to measure, not a test's.
    assert len(lat) == 40 and all(x >= 0 for x in lat), lat
    # A real drag lands where it should, too.
    box = page.locator("#bar").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] - 4, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2, y, steps=10)
    page.mouse.up()
    i = page.evaluate("() => window.fcReplay.cur()")
    assert abs(i - n / 2) < n * 0.05
    rows = page.locator("#story .row:not([hidden])").count()
    assert 0 < rows < 60  # the narration list is virtual


def test_render_html_escapes_the_stream_url() -> None:
    html = render_html({"run": {}, "lanes": [], "points": []}, stream='/x?a=1&b="2"')
    assert 'data-stream="/x?a=1&amp;b=&quot;2&quot;"' in html
    assert "connect-src 'self'" in html
