"""The source follows main: a publication after each merge, held (and retried) while the
source has edits of its own on the paths; and what a stored state and `status` show."""

from __future__ import annotations

from flamechase import events as ev
from flamechase.flow import FinishRun, Run
from flamechase.flows.git_pr import events as gev
from tests.flows.git_pr.kit import BASE, FLOW, Driver, sha, waits


def merged(d: Driver, n: int, value: float, lane: str = "lane-1") -> str:
    branch = f"{lane}/b{n}"
    d.turn(
        lane,
        [{"op": "open", "branch": branch, "title": f"try {n}"}, {"op": "ready", "branch": branch}],
    )
    d.push(lane, {f"refs/heads/{branch}": sha(n)})
    d.ran(
        "checkout/",
        {
            "commit": sha(n),
            "tree": "t" * 40,
            "base": d.state.main,
            "descends": True,
            "changed": 1,
            "disallowed": [],
        },
    )
    d.measured("measure/", value)
    d.ran("merge/", {"merge": sha(100 + n), "tree": "m" * 40, "main": d.state.main, "fast": True})
    d.ran("push-main/", {"main": sha(100 + n)})
    return sha(100 + n)


def test_a_refused_publication_is_held_said_once_and_tried_again() -> None:
    d = Driver()
    d.set_up(main_score=50)
    main = merged(d, 1, 40)
    job = d.job("publish/")
    assert isinstance(job, Run) and job.reads == ("central",)
    assert "Flamechase-Main: " + main in job.argv[job.argv.index("--message") + 1]
    why = "solver.py was changed in the source outside the run; publication stops ..."
    d.ran("publish/", {"refused": why})
    assert d.of(gev.PublicationHeld)[-1].reason == why
    assert d.state.published == BASE and d.state.publication.held == why
    retry = d.state.publication.retry_at
    assert retry is not None and waits(d.decide())[0].at == retry
    assert not [k for k in d.jobs() if k.startswith("publish/")]
    assert list(d.jobs(now=retry)) == ["publish/2"]
    d.t = retry
    d.ran("publish/", {"refused": why})
    assert len(d.of(gev.PublicationHeld)) == 1  # the same reason is not journaled again
    d.t = d.state.publication.retry_at or 0.0
    d.ran("publish/", {"published": main, "changed": 1, "commit": "c" * 40})
    assert d.state.published == main and d.state.publication.held is None
    done = d.of(gev.MainPublished)[-1]
    assert (done.commit, done.paths, done.source_commit) == (main, 1, "c" * 40)
    assert not [k for k in d.jobs() if k.startswith("publish/")]


def test_a_later_merge_is_published_with_the_ones_still_waiting() -> None:
    d = Driver()
    d.set_up(main_score=50)
    first = merged(d, 1, 40)
    d.ran("publish/", {"refused": "x changed"})
    second = merged(d, 2, 30)
    job = d.job("publish/")
    argv = list(job.argv)
    assert argv[argv.index("--from") + 1] == BASE and argv[argv.index("--to") + 1] == second
    message = argv[argv.index("--message") + 1]
    assert message.startswith("flamechase: merge PR000001, PR000002 into the source")
    assert first != second


def test_a_stored_state_resumes_with_its_prs_receipts_and_ledger() -> None:
    d = Driver()
    d.set_up(main_score=50)
    merged(d, 1, 40)
    d.turn("lane-2", [{"op": "open", "branch": "lane-2/x", "title": "t"}])
    back = FLOW.load_state(d.state.model_dump_json())
    assert back == d.state
    assert list(FLOW.decide(back, d.t)) == list(FLOW.decide(d.state, d.t))


def test_status_shows_the_pr_table_and_the_ledger_with_scores() -> None:
    d = Driver()
    d.set_up(main_score=50)
    main = merged(d, 1, 40)
    summary = FLOW.describe(d.state)
    assert summary["main"]["commit"] == main and summary["main"]["score"] == 40
    assert summary["main"]["baseline"] == BASE
    (pr,) = summary["pull_requests"]
    assert (pr["id"], pr["status"], pr["score"], pr["merge"]) == ("PR000001", "merged", 40, main)
    assert pr["receipt"]["commit"] == sha(1) and pr["receipt"]["value"] == 40
    (entry,) = summary["ledger"]
    assert (entry["pr"], entry["prior_score"], entry["score"]) == ("PR000001", 50, 40)
    assert summary["leaderboard"]["best"]["value"] == 40
    assert summary["lanes"]["lane-1"]["merged_prs"] == 1


def test_every_lane_held_ends_the_run_once_the_runtime_is_done() -> None:
    d = Driver()
    d.set_up()
    for lane in ("lane-1", "lane-2"):
        d.feed(ev.LaneHeld(lane=lane, reason="two failed turns"))
    assert [c for c in d.decide() if isinstance(c, FinishRun)][0].status == "held"


def test_a_failed_setup_step_ends_the_run_naming_it() -> None:
    d = Driver()
    d.places()
    d.ran("setup/central", {"error": "init-central: fatal: unable to read tree"}, code=1)
    (end,) = [c for c in d.decide() if isinstance(c, FinishRun)]
    assert end.status == "failed"
    assert end.reason.startswith("setting up the run's git layout (central) failed: ")


def test_a_held_lane_says_what_releases_it_and_a_new_plan_does() -> None:
    d = Driver()
    d.set_up()
    for lane in ("lane-1", "lane-1", "lane-2", "lane-2"):
        d.turn(lane, failed=True)
        d.push(lane, {})  # the runtime looks at what the failed turn pushed: nothing
    held = d.of(ev.LaneHeld)
    assert [e.lane for e in held] == ["lane-1", "lane-2"]
    assert "2 failed turns in a row" in held[0].reason
    assert "change TASK.md and run the same command with the task `continue`" in held[0].remedy
    (end,) = [c for c in d.decide() if isinstance(c, FinishRun)]
    assert end.status == "held" and end.reason.startswith("every lane is held")
    assert end.reason.endswith("the coordinator re-plans and the held lanes are released")
    # What it says is true: the changed objective's plan releases both lanes.
    d.feed(ev.ObjectiveRevised(task_fingerprint="f2", objective="make it faster still"))
    d.places()
    d.feed(
        ev.TurnStarted(actor="coordinator", turn=2),
        ev.TurnValid(actor="coordinator", turn=2, result={"lanes": []}),
    )
    assert {e.lane for e in d.of(ev.LaneReleased)} == {"lane-1", "lane-2"}
    assert not any(isinstance(c, FinishRun) for c in d.decide())
