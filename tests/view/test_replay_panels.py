"""The replay's panels and controls in chromium: First/Last buttons and Home/End keys, the
objective on screen without a click, and a held lane's reason (or a failing lane's last
error) written in the lanes table, not only in a tooltip."""

from __future__ import annotations

from typing import Any

from flamechase.view.replay import build_document
from flamechase.view.state import RunFold
from tests.view.conftest import Run
from tests.view.test_replay_browser import _check_point, _open, _panels, _state_cell


def _fold_to(run: Run, i: int) -> RunFold:
    fold = RunFold.from_run(run.run, run.lanes)
    for ev in run.events[: i + 1]:
        fold.apply(ev)
    return fold


def test_first_and_last_buttons_and_keys(page: Any, sim_run: Run) -> None:
    points = build_document(sim_run.run, sim_run.lanes, sim_run.events)["points"]
    n = len(points)
    _open(page, sim_run.html)
    page.click("#first")
    _check_point(_panels(page), 0, points, _fold_to(sim_run, 0))
    page.click("#last")
    _check_point(_panels(page), n - 1, points, _fold_to(sim_run, n - 1))
    # The keys work wherever the focus is, the narration list included.
    page.locator("#story").focus()
    page.keyboard.press("Home")
    assert _panels(page)["cur"] == 0
    page.keyboard.press("End")
    assert _panels(page)["cur"] == n - 1
    # Home stops playback too, rather than racing it.
    page.click("#first")
    page.click("#play")
    page.wait_for_function("() => window.fcReplay.cur() >= 3")
    page.keyboard.press("Home")
    assert page.locator("#play").text_content() == "Play"
    page.wait_for_timeout(250)
    assert _panels(page)["cur"] == 0
    for button, label in (("#first", "Home"), ("#last", "End")):
        assert label in (page.locator(button).get_attribute("title") or "")
        assert page.locator(button).is_visible()


def test_the_objective_is_on_screen_without_a_click(page: Any, sim_run: Run) -> None:
    _open(page, sim_run.html)
    objective = page.locator("#objective")
    assert objective.is_visible()
    assert objective.text_content() == sim_run.run["task"]
    box = objective.bounding_box()
    assert box is not None and box["height"] > 10 and box["y"] < 200
    assert page.locator("#meta details").count() == 0  # not folded away


def test_a_held_lane_shows_its_reason_in_the_table(page: Any, rough_run: Run) -> None:
    points = build_document(rough_run.run, rough_run.lanes, rough_run.events)["points"]
    _open(page, rough_run.html)
    fold = _fold_to(rough_run, len(points) - 1)
    held = [name for name in fold.order if fold.lanes[name].held]
    assert "lane-3" in held  # its actor a reports blocked; lane 2 may be held as well
    assert (fold.lanes["lane-3"].held_reason or "").startswith("reported blocked: ")
    for name in held:
        row = page.locator(f'#lanes tbody tr:has(td:text-is("{name}"))')
        why = row.locator(".why")
        assert why.is_visible()
        assert why.text_content() == fold.lanes[name].held_reason
        assert row.locator(".st-held").text_content() == "held"
    _check_point(_panels(page), len(points) - 1, points, fold)


def test_every_point_of_a_rough_run_says_why_in_the_table(page: Any, rough_run: Run) -> None:
    """Walked point by point: each lane's state cell is the state and why, as the fold says."""
    _open(page, rough_run.html)
    page.keyboard.press("Home")
    fold = RunFold.from_run(rough_run.run, rough_run.lanes)
    reasons = 0
    for i, ev in enumerate(rough_run.events):
        if i:
            page.click("#next")
        fold.apply(ev)
        rows = _panels(page)["lanes"]
        for row, name in zip(rows[: len(fold.order)], fold.order, strict=True):
            lane = fold.lanes[name]
            assert row[1] == _state_cell(lane), (i, name)
            reasons += row[1] != {"turn": "on turn"}.get(lane.state, lane.state)
    assert reasons > 0
