"""After a lane's turn: its pushes go through the hook, its `flamechase pr` requests are judged
against the central repository, and every refusal goes back to the lane with the reason."""

from __future__ import annotations

import json

from flamechase.flow import Run
from flamechase.flows.git_pr import events as gev
from tests.flows.git_pr.kit import BASE, Driver, sha, starts


def opened(d: Driver, lane: str = "lane-1", branch: str = "lane-1/x", n: int = 1) -> str:
    d.turn(lane, [{"op": "open", "branch": branch, "head": sha(n), "title": "t"}])
    d.push(lane, {f"refs/heads/{branch}": sha(n)})
    return next(p.id for p in d.state.prs.values() if p.branch == branch)


def test_a_lane_turn_starts_only_in_its_clone_with_requests_and_system_reports() -> None:
    d = Driver()
    d.set_up()
    turns = {t.lane: t for t in starts(d.decide())}
    assert set(turns) == {"lane-1", "lane-2"}
    t = turns["lane-1"]
    assert t.place == "lanes/lane-1" and t.requests and t.reads == ("central",)
    assert t.inbox_from == ("lane-2", "system:lane-1") and not t.artifacts


def test_the_next_turn_waits_until_the_runtime_carried_out_the_last_one() -> None:
    d = Driver()
    d.set_up()
    d.turn("lane-1", [{"op": "open", "branch": "lane-1/x", "title": "t"}])
    assert "lane-1" not in {t.lane for t in starts(d.decide())}
    export = d.job("export/")
    assert isinstance(export, Run) and export.lane == "lane-1" and export.reads == ("central",)
    d.push("lane-1", {"refs/heads/lane-1/x": sha(1)})
    assert "lane-1" in {t.lane for t in starts(d.decide())}


def test_pushes_are_forwarded_as_the_lane_with_ready_heads_frozen() -> None:
    d = Driver()
    d.set_up()
    pr = opened(d)
    d.turn("lane-1", [{"op": "ready", "pr": pr}])
    d.push("lane-1", {"refs/heads/lane-1/x": sha(1)})  # nothing new: no forward
    d.turn("lane-1")
    job = d.push(
        "lane-1",
        {"refs/heads/lane-1/x": sha(2), "refs/heads/main": sha(3)},
        results={
            "refs/heads/lane-1/x": "lane-1/x is frozen at ... while PR000001 "
            "is ready; it cannot be moved",
            "refs/heads/main": "main accepts only the runtime's merges",
        },
    )
    assert job is not None and job.place == "central" and job.reads == ("lanes/lane-1",)
    policy = json.loads(job.env["FLAMECHASE_GIT_POLICY"])
    assert policy == {
        "pusher": "lane-1",
        "frozen": {"refs/heads/lane-1/x": {"sha": sha(1), "pr": pr}},
        "kept": {"refs/heads/lane-1/x": pr},
    }
    refused = {e.ref: e.reason for e in d.of(gev.PushRefused)}
    assert refused["refs/heads/main"] == "main accepts only the runtime's merges"
    report = d.reports_to("lane-1")[-1]
    assert report.startswith("The central repository refused your push: ")
    assert "main: main accepts only the runtime's merges" in report
    # The same refused refs are not pushed again after the next turn.
    d.turn("lane-1")
    assert d.push("lane-1", {"refs/heads/lane-1/x": sha(2), "refs/heads/main": sha(3)}) is None


def test_a_branch_deleted_in_the_outbox_is_a_deletion_through_the_hook() -> None:
    d = Driver()
    d.set_up()
    pr = opened(d)
    d.turn("lane-1")
    job = d.push("lane-1", {})
    assert job is not None and list(job.argv[-2:]) == ["--delete", "refs/heads/lane-1/x"]
    # The hook is told to keep the branch of every PR the lane opened, whatever its state.
    policy = json.loads(job.env["FLAMECHASE_GIT_POLICY"])
    assert policy["kept"] == {"refs/heads/lane-1/x": pr} and policy["frozen"] == {}


def test_open_takes_only_the_lanes_own_pushed_branches() -> None:
    d = Driver()
    d.set_up()
    d.turn(
        "lane-1",
        [
            {"op": "open", "branch": "lane-2/x", "title": "t"},
            {"op": "open", "branch": "lane-1/never-pushed", "title": "t"},
            {"op": "open", "branch": "lane-1/x", "head": sha(9), "title": "t"},
            {"op": "open", "branch": "lane-1/x", "head": sha(1), "title": "t"},
            {"op": "open", "branch": "lane-1/x", "head": sha(1), "title": "again"},
        ],
    )
    d.push("lane-1", {"refs/heads/lane-1/x": sha(1)})
    reasons = [e.reason for e in d.of(gev.PrRequestRefused)]
    assert reasons == [
        "a PR comes from one of your own branches, lane-1/NAME, not lane-2/x",
        "branch lane-1/never-pushed is not in the central repository; push it first "
        "(git push origin lane-1/never-pushed)",
        f"your HEAD {sha(9)[:12]} is not what lane-1/x holds in the central repository "
        f"({sha(1)[:12]}); push it first (git push origin lane-1/x)",
        "PR000001 is already open on lane-1/x",
    ]
    assert [p.id for p in d.state.prs.values()] == ["PR000001"]
    assert len(d.reports_to("lane-1")) == 4
    assert d.reports_to("lane-1")[0].startswith("Your `flamechase pr open` was refused: ")


def test_a_lane_acts_only_on_its_own_prs() -> None:
    d = Driver()
    d.set_up()
    pr = opened(d)
    d.turn(
        "lane-2",
        [{"op": "ready", "pr": pr}, {"op": "ready", "pr": "PR000099"}, {"op": "merge", "pr": pr}],
    )
    d.push("lane-2", {})
    assert [e.reason for e in d.of(gev.PrRequestRefused)] == [
        f"{pr} belongs to lane-1; a lane acts only on its own PRs",
        "there is no PR000099",
        "unknown request 'merge'; flamechase pr asks open or ready",
    ]
    assert d.state.pr(pr).status == "draft"


def test_lines_that_are_not_requests_are_refused_with_their_line() -> None:
    d = Driver()
    d.set_up()
    d.turn("lane-1", refused=["line 2: not JSON"])
    d.push("lane-1", {})
    assert d.of(gev.PrRequestRefused)[-1].reason == "not a request: line 2: not JSON"


def test_ready_follows_the_pushed_branch_and_supersedes_the_lanes_older_ready_pr() -> None:
    d = Driver()
    d.set_up()
    first = opened(d, branch="lane-1/a", n=1)
    second = opened(d, branch="lane-1/b", n=2)
    d.turn("lane-1", [{"op": "ready", "pr": first}])
    d.push("lane-1", {"refs/heads/lane-1/a": sha(1), "refs/heads/lane-1/b": sha(2)})
    assert d.state.pr(first).status == "evaluating"
    d.turn("lane-1", [{"op": "ready", "branch": "lane-1/b", "head": sha(22)}])
    d.push("lane-1", {"refs/heads/lane-1/a": sha(1), "refs/heads/lane-1/b": sha(22)})
    assert d.state.pr(first).status == "rejected"
    assert d.state.pr(first).reason == f"superseded by {second}"
    assert d.state.pr(second).status == "evaluating" and d.state.pr(second).head == sha(22)
    # The superseded evaluation's result is ignored when it comes.
    checkouts = sorted(k for k in d.jobs() if k.startswith("checkout/"))
    assert len(checkouts) == 1  # one checkout place per lane: the newer waits its turn
    d.ran(
        "checkout/",
        {
            "commit": sha(1),
            "tree": "t" * 40,
            "base": BASE,
            "descends": True,
            "changed": 1,
            "disallowed": [],
        },
    )
    assert d.state.pr(first).status == "rejected"
    assert [k for k in d.jobs() if k.startswith("checkout/")]


def test_no_new_ready_pr_while_the_lanes_pr_is_being_integrated() -> None:
    d = Driver()
    d.set_up(main_score=50)
    first = opened(d, branch="lane-1/a", n=1)
    opened(d, branch="lane-1/b", n=2)
    d.turn("lane-1", [{"op": "ready", "pr": first}])
    d.push("lane-1", {"refs/heads/lane-1/a": sha(1), "refs/heads/lane-1/b": sha(2)})
    d.ran(
        "checkout/",
        {
            "commit": sha(1),
            "tree": "t" * 40,
            "base": BASE,
            "descends": True,
            "changed": 1,
            "disallowed": [],
        },
    )
    d.measured("measure/", 10)
    assert d.state.pr(first).status == "reviewing"
    d.turn("lane-1", [{"op": "ready", "branch": "lane-1/b"}])
    d.push("lane-1", {"refs/heads/lane-1/a": sha(1), "refs/heads/lane-1/b": sha(2)})
    assert d.of(gev.PrRequestRefused)[-1].reason == (
        f"{first} is being integrated; make another PR ready once it is merged or rejected"
    )


def test_a_failed_turns_pushes_and_requests_are_carried_out_too() -> None:
    d = Driver()
    d.set_up()
    d.turn("lane-1", [{"op": "open", "branch": "lane-1/x", "title": "t"}], failed=True)
    d.push("lane-1", {"refs/heads/lane-1/x": sha(1)})
    assert [p.branch for p in d.state.prs.values()] == ["lane-1/x"]


def test_an_outbox_the_runtime_cannot_read_is_reported_and_the_lane_goes_on() -> None:
    d = Driver()
    d.set_up()
    d.turn("lane-1", [{"op": "open", "branch": "lane-1/x", "title": "t"}])
    d.ran("export/", {"error": "export: fatal: not a git repository"}, code=1)
    assert d.reports_to("lane-1")[0].startswith("The runtime could not read your pushes: ")
    assert d.of(gev.PrRequestRefused)[-1].reason.startswith("branch lane-1/x is not in")
    assert "lane-1" in {t.lane for t in starts(d.decide())}
