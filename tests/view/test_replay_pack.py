"""The replay document packed into its page and read back: exactly the same points, in a
page that stays small however long the run (a few bytes a point, not a few hundred)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flamechase.view.replay import build_document, load_run, render_html, write_replay
from flamechase.view.replay_pack import PageUnreadable, read_document
from tests.view.conftest import Run


def _exact(doc: Any) -> str:
    """As JSON text, so that True and 1 differ (in Python they are equal); 1 and 1.0 stay the
    same number, as the page's JavaScript sees them (a whole number in a column of decimals
    comes back as a float)."""

    def whole(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
            return int(v)
        if isinstance(v, list):
            return [whole(x) for x in v]
        if isinstance(v, dict):
            return {k: whole(x) for k, x in v.items()}
        return v

    return json.dumps(whole(doc), sort_keys=True)


@pytest.mark.parametrize("which", ["sim_run", "rough_run"])
def test_a_real_runs_page_gives_back_its_document(
    which: str, request: pytest.FixtureRequest
) -> None:
    run: Run = request.getfixturevalue(which)
    doc = build_document(run.run, run.lanes, run.events)
    assert _exact(read_document(run.html.read_text())) == _exact(doc)


def test_ten_thousand_events_make_a_page_of_a_few_hundred_kilobytes(
    big_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "big.html"
    doc = write_replay(big_run, out)
    assert _exact(read_document(out.read_text())) == _exact(doc)
    # As one JSON object a point it was 36 bytes short of 4 MB at this size.
    assert out.stat().st_size < 600_000, out.stat().st_size
    plain = len(json.dumps(doc["points"], separators=(",", ":")))
    assert out.stat().st_size * 8 < plain


def _point(i: int, **d: Any) -> dict[str, Any]:
    return {"q": i + 1, "t": 10 * i, "k": "k", "l": 0, "a": None, "x": "x", "g": "info", "d": d}


ODD = [
    # Lane rows whose fields change type (null, int, string, bool-like ints, floats).
    _point(0, L=[[0, [None, 1, 1, None, 0, 0, 0, 0, None, 0, None, None, None, "b", None]]]),
    _point(1, L=[[0, ["a", 2, 1, 10, 0, 0, 0, 0, "p", 1, "why", None, "a", "b", None]]]),
    _point(2, L=[[0, ["a", 2.5, True, 20, -3, 2**60, 0, 0, "p", 1, "why", None, "a", "b", 1]]]),
    _point(3, L=[[1, ["x"]], [0, [None] * 15]]),
    # Spend with a huge, a negative and a long decimal value, then one of another length.
    _point(4, S=[8.98846567431158e307, 1, 1500, 0.001, 0]),
    _point(5, S=[-0.1234567, 2, 3000, 12.5, 1]),
    _point(6, S=[0.1 + 0.2, 2, 3000, 12.5, 1]),
    {**_point(7, S=[1, 2]), "q": None, "t": 1.5, "a": "", "g": None, "l": -1},
    _point(8, F=[["p", "<b>k</b>", {"__proto__": "</script>"}]], X="\u2028&<>", m=["m", "bad"]),
    {**_point(9, W={"n": 1, "b": None, "t": []}), "x": "</script><!--", "k": "\U0001f525"},
]


def test_odd_values_come_back_exactly() -> None:
    doc = {"v": 1, "run": {"id": "r"}, "lanes": [], "t0": None, "points": ODD}
    page = render_html(doc)
    assert page.lower().count("</script") == 2
    assert _exact(read_document(page)) == _exact(doc)


def test_an_empty_document_and_a_page_without_one() -> None:
    doc = {"v": 1, "run": {}, "lanes": [], "t0": None, "points": []}
    assert read_document(render_html(doc)) == doc
    with pytest.raises(PageUnreadable, match="no replay data"):
        read_document("<html></html>")
    damaged = render_html(doc).replace(
        'data-encoding="gzip+base64">H4sI', 'data-encoding="gzip+base64">H4sX'
    )
    with pytest.raises(PageUnreadable, match="damaged"):
        read_document(damaged)


def test_the_page_holds_no_plain_copy_of_what_agents_wrote(sim_run: Run) -> None:
    run, lanes, events = load_run(sim_run.run_dir)
    doc = build_document(run, lanes, events)
    page = render_html(doc)
    assert doc["points"][-1]["x"] not in page


def _page_points(page: Any, html: Path) -> list[dict[str, Any]]:
    from tests.view.test_replay_browser import _open

    _open(page, html)
    # As JSON text: Playwright's own copying would drop a cell named `__proto__`.
    points: list[dict[str, Any]] = json.loads(
        page.evaluate("() => JSON.stringify(window.fcReplay.points())")
    )
    return points


def test_the_browser_reads_the_same_points(page: Any, big_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "big.html"
    doc = write_replay(big_run, out)
    assert _exact(_page_points(page, out)) == _exact(doc["points"])


def test_the_browser_reads_odd_values_the_same(page: Any, tmp_path: Path) -> None:
    doc = {"v": 1, "run": {"id": "r"}, "lanes": [{"name": "a", "roles": ["r"]}], "t0": None,
           "points": [p for p in ODD if "L" not in p["d"]]}  # fmt: skip
    out = tmp_path / "odd.html"
    out.write_text(render_html(doc))
    assert _exact(_page_points(page, out)) == _exact(doc["points"])
