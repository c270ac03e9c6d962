"""The replay document and page, without a browser: shape, self-containment, escaping, speed."""

from __future__ import annotations

import math
import re
from pathlib import Path

from flamechase.view.replay import build_document, load_run, render_html
from flamechase.view.replay_pack import read_document
from tests.helpers import cli
from tests.view.conftest import Run
from tests.view.synth import make_run


def test_one_point_per_event_in_order(sim_run: Run) -> None:
    doc = build_document(sim_run.run, sim_run.lanes, sim_run.events)
    assert [p["q"] for p in doc["points"]] == [e["seq"] for e in sim_run.events]
    assert [p["k"] for p in doc["points"]] == [e["kind"] for e in sim_run.events]
    assert [ln["name"] for ln in doc["lanes"]] == ["lane-1", "lane-2", "lane-3"]
    assert doc["run"]["id"] == sim_run.run["id"]
    assert doc["run"]["final"] == "finished"
    # Times never go backwards and start at zero.
    ts = [p["t"] for p in doc["points"]]
    assert ts[0] == 0 and ts == sorted(ts)
    # Every turn block that opens also closes, on the same lane.
    opened = [p["l"] for p in doc["points"] if "o" in p["d"]]
    closed = [p["l"] for p in doc["points"] if "e" in p["d"]]
    assert sorted(opened) == sorted(closed)


def test_simulate_wrote_the_same_page_show_writes(sim_run: Run, tmp_path: Path) -> None:
    out = tmp_path / "again.html"
    proc = cli(
        "show",
        sim_run.run["id"],
        "--html",
        str(out),
        cwd=tmp_path,
        env={"FLAMECHASE_HOME": str(sim_run.home)},
        check=True,
    )
    assert f"({len(sim_run.events)} events)" in proc.stdout
    assert read_document(out.read_text()) == read_document(sim_run.html.read_text())
    assert out.read_bytes() == sim_run.html.read_bytes()  # nothing in it depends on when


def test_page_is_self_contained(sim_run: Run) -> None:
    html = sim_run.html.read_text()
    # Nothing to fetch: no external scripts, styles, images, fonts or frames.
    for pattern in (
        r"<script[^>]+src=",
        r"<link\b",
        r"<img\b",
        r"<iframe\b",
        r"@import",
        r"url\(",
        r"\bsrc=",
        r"\bhref=",
    ):
        assert not re.search(pattern, html, re.I), pattern
    for scheme in ("https://", "//cdn", "ws://"):
        assert scheme not in html
    # The only http:// is the SVG namespace name, which is never fetched.
    assert set(re.findall(r"http://[^\"' ]+", html)) == {"http://www.w3.org/2000/svg"}
    # And the policy forbids fetching anyway; scripts and styles are pinned by hash.
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert csp is not None
    assert "default-src 'none'" in csp.group(1)
    assert "connect-src 'none'" in csp.group(1)
    assert "'unsafe-inline'" not in csp.group(1)
    assert html.count("<script") == 2  # the data (not executed) and the page's own script


def test_hostile_summary_stays_data(tmp_path: Path) -> None:
    evil = "</script><script>alert(1)</script><!-- & \u2028 <b>"
    run_dir = make_run(tmp_path / "home", 60, summary=evil)
    run, lanes, events = load_run(run_dir)
    html = render_html(build_document(run, lanes, events))
    assert html.count("<script") == 2
    assert "alert(1)</script>" not in html
    doc = read_document(html)
    # The narration keeps the text as written (whitespace collapsed to single spaces).
    assert any(" ".join(evil.split()) in p["x"] for p in doc["points"])


def test_ten_thousand_events_make_one_page_that_says_how_long_it_took(
    big_run: Path, tmp_path: Path
) -> None:
    # How long it takes is measured by bench/views_replay.py (2 s on an idle machine), not
    # asserted here: a test must not fail because the machine is busy.
    out = tmp_path / "big.html"
    proc = cli(
        "show",
        big_run.name,
        "--html",
        str(out),
        cwd=tmp_path,
        env={"FLAMECHASE_HOME": str(big_run.parent.parent)},
        check=True,
    )
    assert re.search(r"in [0-9.]+ s", proc.stdout)
    assert "(10000 events)" in proc.stdout or "(10001 events)" in proc.stdout
    assert len(read_document(out.read_text())["points"]) >= 10_000


def test_a_replay_stays_writable_when_reported_spend_overflows() -> None:
    # Agents report their own spend: two huge, finite reports must not make the cost
    # infinite, which no JSON can hold (found by tests/test_fuzz_inputs.py).
    from flamechase.view.replay import ReplayBuilder

    b = ReplayBuilder({"id": "r", "flow": "f", "budget": {}}, [{"lane": "lane-1", "roles": ["a"]}])
    for seq in (1, 2):
        b.add(
            {"kind": "turn_valid", "lane": "lane-1", "actor": "a", "seq": seq,
             "at": f"2026-01-01T00:00:0{seq}.000Z",
             "payload": {"turn": seq, "cost_usd": 8.98846567431158e307}}
        )  # fmt: skip
    spent = [p["d"]["S"][0] for p in read_document(render_html(b.document()))["points"]]
    assert spent[0] > 8e307 and 1.79e308 < spent[1] < math.inf
