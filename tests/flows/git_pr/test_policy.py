"""The integration policy of parallel_flame_chase:git_pr, decided without a process: which PR
becomes main, how (its exact tree, or a merge measured again), and why the others do not."""

from __future__ import annotations

import json
import re

import pytest

from flamechase import events as ev
from flamechase.flow import FinishRun, Measure, Run
from flamechase.flows.git_pr import events as gev
from tests.flows.git_pr.kit import BASE, Driver, sha, starts


def ready(
    d: Driver,
    lane: str,
    n: int,
    value: float | None,
    *,
    error: str | None = None,
    descends: bool = True,
) -> str:
    """Lane pushes lane/bN at sha(n), opens and readies it; the runtime measures `value`."""
    branch = f"{lane}/b{n}"
    d.turn(
        lane,
        [
            {"op": "open", "branch": branch, "head": sha(n), "title": f"try {n}"},
            {"op": "ready", "branch": branch, "head": sha(n)},
        ],
    )
    d.push(lane, {f"refs/heads/{branch}": sha(n)})
    pr = next(p.id for p in d.state.prs.values() if p.branch == branch)
    d.ran(
        "checkout/",
        {
            "commit": sha(n),
            "tree": "t" * 40,
            "base": BASE,
            "descends": descends,
            "changed": 1,
            "disallowed": [],
        },
    )
    d.measured("measure/", value, error)
    return pr


def merge(d: Driver, merged: str, *, fast: bool = True) -> None:
    d.ran("merge/", {"merge": merged, "tree": "m" * 40, "main": d.state.main, "fast": fast})


def test_the_baseline_is_measured_before_any_candidate_is_judged() -> None:
    d = Driver()
    d.places()
    d.feed(
        ev.TurnStarted(actor="coordinator", turn=1),
        ev.TurnValid(actor="coordinator", turn=1, result={"lanes": []}),
    )
    d.places()
    d.ran("setup/central", {"main": BASE, "files": 3})
    for key in [k for k in d.jobs() if k.startswith("setup/clone/")]:
        d.ran(key, {"head": BASE})
    checkout = d.job("setup/main-checkout")
    assert isinstance(checkout, Run) and BASE in checkout.argv
    d.ran("setup/main-checkout", {"commit": BASE, "tree": "t" * 40})
    # The evaluator's files are frozen from the checkout before anything runs in it.
    assert not [k for k in d.jobs() if k == "setup/main-measure"]
    freeze = d.freeze()
    assert (freeze.place, freeze.command) == ("checkouts/main", "python3 score.py")
    measure = d.job("setup/main-measure")
    assert isinstance(measure, Measure) and measure.command == "python3 score.py"
    # A candidate made ready meanwhile is measured but not judged before main is.
    pr = ready(d, "lane-1", 1, 10)
    assert d.state.pr(pr).status == "ready" and d.state.review is None
    d.measured("setup/main-measure", 50)
    assert d.state.main_score == 50 and d.state.pr(pr).status == "reviewing"


def test_a_candidate_worse_than_the_original_code_is_rejected_and_told_why() -> None:
    d = Driver()
    d.set_up(main_score=50)
    pr = ready(d, "lane-1", 1, 60)
    assert d.state.pr(pr).status == "rejected"
    assert d.state.pr(pr).reason == "score 60 does not beat main's 50 (minimize)"
    assert not [k for k in d.jobs() if k.startswith("merge/")]
    assert d.reports_to("lane-1")[-1] == (
        f"{pr} was rejected: score 60 does not beat main's 50 (minimize)"
    )


def test_an_equal_score_is_not_an_improvement() -> None:
    d = Driver()
    d.set_up(main_score=50)
    pr = ready(d, "lane-1", 1, 50)
    assert d.state.pr(pr).status == "rejected"


def test_maximize_takes_the_highest_score() -> None:
    d = Driver(direction="maximize")
    d.set_up(main_score=50)
    low = ready(d, "lane-1", 1, 40)
    assert d.state.pr(low).status == "rejected"
    high = ready(d, "lane-2", 2, 70)
    assert d.state.pr(high).status == "reviewing"


def test_a_head_that_descends_from_main_merges_with_exactly_its_tree_through_the_hook() -> None:
    d = Driver()
    d.set_up(main_score=50)
    pr = ready(d, "lane-1", 1, 30)
    assert d.state.pr(pr).status == "reviewing"
    job = d.job("merge/")
    assert isinstance(job, Run) and job.place == "integration" and sha(1) in job.argv
    merge(d, sha(100), fast=True)
    push = d.job("push-main/")
    assert isinstance(push, Run) and push.place == "central"
    policy = json.loads(push.env["FLAMECHASE_GIT_POLICY"])
    assert policy == {
        "pusher": "runtime",
        "merge": {"pr": pr, "head": sha(1), "parent": BASE, "commit": sha(100)},
    }
    d.ran("push-main/", {"main": sha(100)})
    assert d.state.main == sha(100) and d.state.main_score == 30
    assert d.state.pr(pr).status == "merged" and d.state.pr(pr).merge == sha(100)
    entry = d.state.ledger[-1]
    assert (
        entry.pr,
        entry.prior_main,
        entry.merge,
        entry.prior_score,
        entry.score,
        entry.fast,
    ) == (pr, BASE, sha(100), 50, 30, True)
    merged = d.of(gev.PrMerged)[-1]
    assert (merged.pr, merged.value, merged.prior, merged.remeasured) == (pr, 30, 50, False)
    # Every lane hears of it; the source is then brought up to main.
    assert "was merged into main" in d.reports_to("lane-2")[-1]
    publish = d.job("publish/")
    assert isinstance(publish, Run) and publish.place == "source"
    assert [publish.argv[publish.argv.index(f) + 1] for f in ("--from", "--to")] == [BASE, sha(100)]


def test_a_better_candidate_on_an_old_main_is_merged_only_after_measuring_the_real_merge() -> None:
    d = Driver()
    d.set_up(main_score=50)
    first = ready(d, "lane-1", 1, 40)
    merge(d, sha(100))
    d.ran("push-main/", {"main": sha(100)})
    # lane-2 started from the baseline: better than main on its own, but main moved.
    second = ready(d, "lane-2", 2, 20, descends=False)
    assert d.state.pr(second).status == "reviewing"
    merge_job = d.job("merge/")
    assert sha(100) in merge_job.argv  # merged onto the current main, not its old base
    merge(d, sha(200), fast=False)
    checkout = d.job("merge-checkout/")
    assert isinstance(checkout, Run) and sha(200) in checkout.argv
    d.ran(
        "merge-checkout/",
        {
            "commit": sha(200),
            "tree": "u" * 40,
            "base": sha(100),
            "descends": True,
            "changed": 1,
            "disallowed": [],
        },
    )
    remeasure = d.job("merge-measure/")
    assert isinstance(remeasure, Measure) and remeasure.lane == "lane-2"
    d.measured("merge-measure/", 15)
    d.ran("push-main/", {"main": sha(200)})
    assert d.state.pr(first).status == "merged" and d.state.pr(second).status == "merged"
    assert d.state.main == sha(200) and d.state.main_score == 15
    assert d.state.ledger[-1].prior_main == sha(100)  # the first merge stays under the second
    assert d.of(gev.PrMerged)[-1].remeasured is True
    assert d.state.pr(second).merge_receipt is not None
    assert d.state.pr(second).merge_receipt.value == 15


def test_a_merge_that_no_longer_beats_main_is_rejected() -> None:
    d = Driver()
    d.set_up(main_score=50)
    ready(d, "lane-1", 1, 40)
    merge(d, sha(100))
    d.ran("push-main/", {"main": sha(100)})
    second = ready(d, "lane-2", 2, 20, descends=False)
    merge(d, sha(200), fast=False)
    d.ran(
        "merge-checkout/",
        {
            "commit": sha(200),
            "tree": "u" * 40,
            "base": sha(100),
            "descends": True,
            "changed": 1,
            "disallowed": [],
        },
    )
    d.measured("merge-measure/", 45)
    assert d.state.pr(second).status == "rejected"
    assert "merged with the current main it measures score 45" in str(d.state.pr(second).reason)
    assert d.state.main == sha(100) and d.state.main_score == 40
    assert not [k for k in d.jobs() if k.startswith("push-main/")]


def test_a_candidate_that_conflicts_with_main_is_rejected_naming_the_paths() -> None:
    d = Driver()
    d.set_up(main_score=50)
    pr = ready(d, "lane-1", 1, 30, descends=False)
    d.ran("merge/", {"conflicts": ["solver.py", "notes.md"]})
    reason = str(d.state.pr(pr).reason)
    assert reason.startswith("it conflicts with main in solver.py, notes.md")
    assert "rebase your branch on origin/main" in reason
    assert "rejected" in d.reports_to("lane-1")[-1]


def test_the_best_ready_candidate_goes_first_and_the_rest_wait_their_turn() -> None:
    d = Driver(lanes=3)
    d.set_up(main_score=50)
    # Ready while another PR is being integrated: measured, then it waits.
    a = ready(d, "lane-1", 1, 40)
    b = ready(d, "lane-2", 2, 10)
    c = ready(d, "lane-3", 3, 30)
    assert d.state.review is not None and d.state.review.pr == a
    merge(d, sha(100))
    d.ran("push-main/", {"main": sha(100)})
    assert d.state.review is not None and d.state.review.pr == b  # 10 before 30
    assert d.state.pr(c).status == "ready"


def test_ties_go_to_the_candidate_that_was_ready_first() -> None:
    d = Driver(lanes=3)
    d.set_up(main_score=50)
    ready(d, "lane-1", 1, 40)  # keeps integration busy while the next two become ready
    x = ready(d, "lane-2", 2, 20, descends=False)
    y = ready(d, "lane-3", 3, 20, descends=False)
    merge(d, sha(100))
    d.ran("push-main/", {"main": sha(100)})
    assert d.state.review is not None and d.state.review.pr == x
    assert d.state.pr(y).status == "ready"


def test_a_baseline_the_evaluator_cannot_measure_lets_any_measured_candidate_win() -> None:
    d = Driver()
    d.set_up(main_score=None, main_error="evaluator exited with code 1")
    assert d.of(gev.MainMeasured)[-1].error == "evaluator exited with code 1"
    pr = ready(d, "lane-1", 1, 900)
    assert d.state.pr(pr).status == "reviewing"


def test_a_candidate_the_evaluator_fails_on_is_rejected_without_holding_up_the_others() -> None:
    d = Driver(lanes=3)
    d.set_up(main_score=50)
    bad = ready(d, "lane-1", 1, None, error="evaluator exited with code 2")
    good = ready(d, "lane-2", 2, 30)
    assert d.state.pr(bad).status == "rejected"
    assert d.state.pr(bad).reason == (
        f"the evaluator failed on {sha(1)[:12]}: evaluator exited with code 2"
    )
    receipt = d.state.pr(bad).receipt
    assert receipt is not None and receipt.commit == sha(1) and receipt.exit_code == 1
    assert d.state.pr(good).status == "reviewing"


def test_a_candidate_changing_paths_the_task_does_not_allow_is_rejected() -> None:
    d = Driver(objective="Speed it up. You MUST NOT modify any file except `solver.py`.")
    assert d.state.allowed == ("solver.py",)
    d.set_up(main_score=50)
    d.turn(
        "lane-1",
        [
            {"op": "open", "branch": "lane-1/x", "head": sha(1), "title": "t"},
            {"op": "ready", "branch": "lane-1/x"},
        ],
    )
    d.push("lane-1", {"refs/heads/lane-1/x": sha(1)})
    checkout = d.job("checkout/")
    argv = list(checkout.argv)
    assert argv[argv.index("--allow") : argv.index("--allow") + 2] == ["--allow", "solver.py"]
    d.ran(
        "checkout/",
        {
            "commit": sha(1),
            "tree": "t" * 40,
            "base": BASE,
            "descends": True,
            "changed": 2,
            "disallowed": ["bench.py"],
            "disallowed_count": 1,
        },
    )
    pr = d.state.prs["PR000001"]
    assert pr.status == "rejected"
    assert pr.reason == "it changes paths the task does not allow: bench.py (allowed: solver.py)"
    assert not [k for k in d.jobs() if k.startswith("measure/")]


def test_new_files_are_allowed_when_nothing_restricts_paths() -> None:
    d = Driver()
    assert d.state.allowed == ()
    d.set_up()
    d.turn(
        "lane-1",
        [{"op": "open", "branch": "lane-1/x", "title": "t"}, {"op": "ready", "branch": "lane-1/x"}],
    )
    d.push("lane-1", {"refs/heads/lane-1/x": sha(1)})
    assert "--allow" not in d.job("checkout/").argv


@pytest.mark.parametrize("refused", ["main moved to 123456789012 meanwhile", None])
def test_main_refusing_the_merge_rejects_the_pr(refused: str | None) -> None:
    d = Driver()
    d.set_up(main_score=50)
    pr = ready(d, "lane-1", 1, 30)
    merge(d, sha(100))
    d.ran(
        "push-main/",
        {"refused": refused} if refused else {"error": "push-main: boom"},
        code=0 if refused else 1,
    )
    assert d.state.pr(pr).status == "rejected"
    assert str(d.state.pr(pr).reason).startswith("main refused the merge: ")
    assert d.state.main == BASE and d.state.review is None


def test_allowed_paths_restrict_prs_over_the_task_sentence_and_survive_a_resume() -> None:
    d = Driver(
        objective="Speed it up. You MUST NOT modify any file except `solver.py`.",
        allowed_paths=["src/**", "bench.py"],
    )
    assert d.state.allowed == ("src/**", "bench.py")  # the param, not the task's solver.py
    d.set_up(main_score=50)

    def attempt(n: int, disallowed: list[str]) -> str:
        branch = f"lane-1/x{n}"
        d.turn(
            "lane-1",
            [{"op": "open", "branch": branch, "title": "t"}, {"op": "ready", "branch": branch}],
        )
        d.push("lane-1", {f"refs/heads/{branch}": sha(n)})
        checkout = d.job("checkout/")
        allows = [checkout.argv[i + 1] for i, a in enumerate(checkout.argv) if a == "--allow"]
        assert allows == list(d.state.allowed)
        d.ran(
            "checkout/",
            {
                "commit": sha(n),
                "tree": "t" * 40,
                "base": BASE,
                "descends": True,
                "changed": 1,
                "disallowed": disallowed,
            },
        )
        return next(p.id for p in d.state.prs.values() if p.branch == branch)

    pr = attempt(1, ["solver.py"])
    assert d.state.pr(pr).status == "rejected"
    assert d.state.pr(pr).reason == (
        "it changes paths the task does not allow: solver.py (allowed: src/**, bench.py)"
    )
    # A resume (its params are the stored ones) keeps them; so does a revised task.
    d.feed(ev.RunResumed(session=2, params=d.state.params.model_dump(mode="json")))
    d.feed(ev.ObjectiveRevised(task_fingerprint="f2", objective="You MUST only modify `x.py`."))
    assert d.state.allowed == ("src/**", "bench.py")
    pr = attempt(2, [])
    assert d.state.pr(pr).status == "evaluating"
    d.measured("measure/", 30)
    assert d.state.pr(pr).status == "reviewing"
    # Cleared on a later resume, the (revised) task's sentence restricts paths again.
    cleared = {**d.state.params.model_dump(mode="json"), "allowed_paths": []}
    d.feed(ev.RunResumed(session=3, params=cleared))
    assert d.state.params.allowed_paths == [] and d.state.allowed == ("x.py",)


def test_every_checkout_is_judged_against_the_evaluators_frozen_files() -> None:
    d = Driver(evaluator_files=["lib/**"])
    d.set_up(main_score=50, frozen={"score.py": "5" * 64, "lib/data.txt": "6" * 64})
    ready(d, "lane-1", 1, 40, descends=False)
    merge(d, sha(200), fast=False)
    argv = list(d.job("merge-checkout/").argv)
    assert argv[argv.index("--baseline") + 1] == BASE
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--frozen"] == [
        "lib/data.txt=" + "6" * 64,
        "score.py=" + "5" * 64,
    ]
    # And what the command names stays as the baseline has it (here or not).
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--named"] == ["python3", "score.py"]
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--watch"] == ["lib/**"]


def test_a_pr_that_changes_the_evaluator_is_tampered_never_measured_and_its_lane_told() -> None:
    d = Driver()
    d.set_up(main_score=50)
    d.turn(
        "lane-1",
        [
            {"op": "open", "branch": "lane-1/fake", "head": sha(1), "title": "fast"},
            {"op": "ready", "branch": "lane-1/fake"},
        ],
    )
    d.push("lane-1", {"refs/heads/lane-1/fake": sha(1)})
    argv = list(d.job("checkout/").argv)
    assert "--frozen" in argv and argv[argv.index("--frozen") + 1] == "score.py=" + "5" * 64
    d.ran(
        "checkout/",
        {
            "commit": sha(1),
            "tree": "t" * 40,
            "base": BASE,
            "descends": True,
            "changed": 1,
            "disallowed": [],
            "tampered": ["score.py"],
        },
    )
    pr = d.state.prs["PR000001"]
    assert pr.status == "tampered" and pr.tampered == ("score.py",)
    assert pr.reason == "it changes the evaluator's frozen files: score.py"
    assert not [k for k in d.jobs() if k.startswith(("measure/", "merge/"))]
    assert [e.files for e in d.of(gev.PrTampered)] == [["score.py"]]
    told = d.reports_to("lane-1")[-1]
    assert told.startswith("PR000001 is tampered and will never be merged: it changes the")
    assert "`python3 score.py` is not yours to change" in told
    # Main is untouched and the next honest PR is judged as usual.
    honest = ready(d, "lane-2", 2, 30)
    assert d.state.pr(honest).status == "reviewing" and d.state.main == BASE


def test_a_merge_with_main_that_changes_a_frozen_file_is_tampered_too() -> None:
    d = Driver()
    d.set_up(main_score=50)
    pr = ready(d, "lane-1", 1, 40, descends=False)
    merge(d, sha(200), fast=False)
    d.ran(
        "merge-checkout/",
        {
            "commit": sha(200),
            "tree": "u" * 40,
            "base": BASE,
            "descends": True,
            "changed": 1,
            "disallowed": [],
            "tampered": ["score.py"],
        },
    )
    assert d.state.pr(pr).status == "tampered" and d.state.review is None
    assert (
        d.state.pr(pr).reason
        == "its merge with main changes the evaluator's frozen files: score.py"
    )
    assert not [k for k in d.jobs() if k.startswith(("merge-measure/", "push-main/"))]


def _until_frozen(d: Driver) -> None:
    d.places()
    d.feed(
        ev.TurnStarted(actor="coordinator", turn=1),
        ev.TurnValid(actor="coordinator", turn=1, result={"lanes": []}),
    )
    d.places()
    d.ran("setup/central", {"main": BASE, "files": 3})
    for key in [k for k in d.jobs() if k.startswith("setup/clone/")]:
        d.ran(key, {"head": BASE})
    d.ran("setup/main-checkout", {"commit": BASE, "tree": "t" * 40})


def test_no_lane_turn_starts_before_the_evaluator_is_frozen() -> None:
    d = Driver()
    _until_frozen(d)
    assert not starts(d.decide())
    d.freeze()
    assert {t.lane for t in starts(d.decide())} == {"lane-1", "lane-2"}


def test_a_failed_freeze_ends_the_run() -> None:
    d = Driver()
    _until_frozen(d)
    d.freeze(error="score.py cannot be read")
    (finish,) = [c for c in d.decide() if isinstance(c, FinishRun)]
    assert finish.status == "failed"
    assert finish.reason == "cannot freeze the evaluator's files: score.py cannot be read"


def _merge_measured(d: Driver, merged: str, value: float) -> None:
    merge(d, merged, fast=False)
    d.ran(
        "merge-checkout/",
        {
            "commit": merged,
            "tree": "u" * 40,
            "base": d.state.main,
            "descends": True,
            "changed": 1,
            "disallowed": [],
        },
    )
    d.measured("merge-measure/", value)


def test_a_stale_pr_is_judged_by_its_real_merge_with_main_whatever_its_head_scored() -> None:
    d = Driver()
    d.set_up(main_score=50)
    ready(d, "lane-1", 1, 40)
    merge(d, sha(100))
    d.ran("push-main/", {"main": sha(100)})
    # lane-2 worked from the baseline: alone 45 does not beat main's 40, but main moved.
    stale = ready(d, "lane-2", 2, 45, descends=False)
    assert d.state.pr(stale).status == "reviewing"
    assert "what decides is its merge with the current main" in d.reports_to("lane-2")[-1]
    reviewing = d.of(gev.PrReviewing)[-1]
    assert (reviewing.pr, reviewing.stale) == (stale, True)
    assert sha(100) in d.job("merge/").argv  # onto the current main
    _merge_measured(d, sha(200), 35)  # the two improvements add up
    d.ran("push-main/", {"main": sha(200)})
    assert d.state.pr(stale).status == "merged"
    assert (d.state.main, d.state.main_score) == (sha(200), 35)
    assert d.of(gev.PrMerged)[-1].remeasured is True


def test_a_stale_pr_whose_merge_does_not_beat_main_is_rejected_with_the_merges_value() -> None:
    d = Driver()
    d.set_up(main_score=50)
    ready(d, "lane-1", 1, 40)
    merge(d, sha(100))
    d.ran("push-main/", {"main": sha(100)})
    stale = ready(d, "lane-2", 2, 45, descends=False)
    _merge_measured(d, sha(200), 42)
    assert d.state.pr(stale).status == "rejected"
    assert str(d.state.pr(stale).reason).startswith(
        "merged with the current main it measures score 42, which does not beat main's 40"
    )


def test_prs_made_fresh_then_left_behind_by_a_merge_are_measured_merged_not_rejected() -> None:
    d = Driver(lanes=3)
    d.set_up(main_score=50)
    a = ready(d, "lane-1", 1, 30)  # integrated first
    b = ready(d, "lane-2", 2, 40)  # fresh when measured, stale once a is merged
    merge(d, sha(100))
    d.ran("push-main/", {"main": sha(100)})
    assert d.state.pr(a).status == "merged"
    assert d.state.review is not None and d.state.review.pr == b
    # A fresh winner goes before a stale PR that must be measured merged to know.
    _merge_measured(d, sha(200), 25)
    d.ran("push-main/", {"main": sha(200)})
    c = ready(d, "lane-3", 3, 60, descends=False)  # stale, and alone worse than main
    assert d.state.pr(c).status == "reviewing"


def test_a_fresh_pr_that_does_not_beat_main_is_rejected_without_a_merge() -> None:
    d = Driver()
    d.set_up(main_score=50)
    pr = ready(d, "lane-1", 1, 55)
    assert d.state.pr(pr).status == "rejected"
    assert not [k for k in d.jobs() if k.startswith("merge/")]


@pytest.mark.parametrize(
    ("files", "why"),
    [
        (["[abc"], "evaluator_files: glob '[abc' has an unclosed '['"),
        (["/etc/passwd"], "evaluator_files must be relative paths or globs, not '/etc/passwd'"),
    ],
)
def test_evaluator_files_are_globs_inside_the_tree(files: list[str], why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(why)):
        Driver(evaluator_files=files)


def test_a_run_stored_before_evaluators_were_frozen_freezes_before_its_lanes_go_on() -> None:
    d = Driver()
    d.set_up(main_score=50)
    d.state = d.state.replace(frozen=None)  # as a state stored by an earlier version reads
    assert not starts(d.decide())
    freeze = d.freeze()
    assert freeze.place == "checkouts/main"
    assert {t.lane for t in starts(d.decide())} == {"lane-1", "lane-2"}
    assert not [k for k in d.jobs() if k.startswith("setup/")]  # main is not measured again
