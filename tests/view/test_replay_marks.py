"""Pull requests and merges on the replay's timeline: a simulated run of
parallel_flame_chase:git_pr marks each PR opened, ready, merged or rejected on its lane's
track, keyed, and a click on a mark goes to its point."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flamechase.view.replay_pack import read_document
from tests.helpers import cli
from tests.view.test_replay_browser import _open


@pytest.fixture(scope="module")
def git_pr_replay(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("git-pr")
    html = tmp / "replay.html"
    proc = cli(
        "simulate",
        "parallel_flame_chase:git_pr",
        "--html",
        str(html),
        cwd=tmp,
        env={"FLAMECHASE_HOME": str(tmp / "home"), "TMPDIR": str(tmp)},
        timeout=110,
    )
    assert proc.returncode == 0, proc.stderr
    return html


def _doc(html: Path) -> dict[str, Any]:
    return read_document(html.read_text())


def test_the_replay_marks_prs_and_merges_on_their_lanes(git_pr_replay: Path) -> None:
    points = _doc(git_pr_replay)["points"]
    marks = {p["k"]: p["d"]["m"] for p in points if "m" in p["d"]}
    assert set(marks) >= {"pr_opened", "pr_ready", "pr_merged"}
    assert marks["pr_merged"][1] == "good" and marks["pr_opened"][1] == "info"
    merged = [p for p in points if p["k"] == "pr_merged"]
    assert merged and all(p["l"] >= 0 for p in merged)
    assert "is merged into main at" in merged[0]["x"]
    published = [p["x"] for p in points if p["k"] == "main_published"]
    assert published and published[0].startswith("Main (")


def test_the_marks_are_drawn_keyed_and_lead_to_their_point(page: Any, git_pr_replay: Path) -> None:
    _open(page, git_pr_replay)
    drawn = page.evaluate("""() => [...document.querySelectorAll('#tl-rows .mk')].map(
        (m) => ({cls: m.getAttribute('class'), p: +m.dataset.p,
                 label: m.querySelector('title').textContent}))""")
    points = _doc(git_pr_replay)["points"]
    assert len(drawn) == sum(1 for p in points if "m" in p["d"])
    assert {d["cls"] for d in drawn} >= {"mk mk-info", "mk mk-good"}
    keys = page.evaluate("""() => [...document.querySelectorAll('#tl-key .mk-sw')].map(
        (s) => s.parentNode.textContent.trim())""")
    assert keys == ["mark", "success", "refused or failed"]
    merge = next(d for d in drawn if d["cls"] == "mk mk-good")
    assert merge["label"].endswith("merged")
    page.evaluate(
        f"() => document.querySelector('#tl-rows .mk[data-p=\"{merge['p']}\"]')"
        ".dispatchEvent(new MouseEvent('click', {bubbles: true}))"
    )
    assert "is merged into main" in page.inner_text("#now-x")


def test_the_git_layout_is_told_by_what_it_is(git_pr_replay: Path) -> None:
    said = [str(p["x"]) for p in _doc(git_pr_replay)["points"]]
    text = "\n".join(said)
    for words in (
        "The runtime makes the central repository.",
        "The runtime makes lane-2's clone.",
        "The runtime makes the integration clone.",
        "The runtime runs the cloning of the central repository for lane-2",
        "lane_2_actor_a hands lane_2_actor_b lane-2's clone",
        "The runtime measures main in a clean checkout: 364071.",
        "main enters the leaderboard: steps = 364071",
    ):
        assert words in text, words
    # No place or program by its internal name, no "private copy" for a clone, no report
    # said to come from `system:LANE`, no lane-less candidate.
    for leak in ("(lanes/", "(central)", "measure/", "setup/", "gitpr", "system:", "None "):
        assert not [s for s in said if leak in s], leak
    assert "private copy" not in text
    ready = next(s for s in said if " is ready: " in s)
    assert ready.startswith("PR0") and "clean checkout" not in ready  # said once, by the Run


def test_the_pull_requests_panel_is_drawn_as_it_stood_at_each_point(
    page: Any, git_pr_replay: Path
) -> None:
    _open(page, git_pr_replay)
    points = _doc(git_pr_replay)["points"]
    first_pr = next(i for i, p in enumerate(points) if p["k"] == "pr_opened")
    rows = """() => [...document.querySelectorAll('#panels section[data-panel="pull requests"] tr')]
        .slice(1).map((tr) => [...tr.children].map((c) => c.textContent))"""
    page.evaluate(f"window.fcReplay.go({first_pr - 1})")
    page.wait_for_timeout(50)
    assert page.evaluate(rows) == []
    page.evaluate(f"window.fcReplay.go({first_pr})")
    page.wait_for_function(
        "() => document.querySelectorAll('#panels section[data-panel=\"pull requests\"] tr')"
        ".length === 2"
    )
    (row,) = page.evaluate(rows)
    opened = points[first_pr]["d"]["F"][0]
    assert row[0] == opened[1] and "draft" in row
    page.evaluate(f"window.fcReplay.go({len(points) - 1})")
    page.wait_for_timeout(50)
    states = {r[0]: r for r in page.evaluate(rows)}
    assert any("merged" in r for r in states.values())
    assert page.is_hidden("#alerts")  # the flow raised none
