"""The state of parallel_flame_chase:git_pr: pull requests, receipts, the ledger of merges, and
the runtime jobs (git programs and measurements) under way. Frozen pydantic models, stored as
JSON with every transaction."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from flamechase.flow import FlowState, Measure, Outbox, Run
from flamechase.flow.lanes import LaneBook
from flamechase.flows.git_pr.params import GitPrParams
from flamechase.flows.parallel_flame_chase.planner import Planning

PrStatus = Literal["draft", "evaluating", "ready", "reviewing", "merged", "rejected", "tampered"]
OPEN: tuple[str, ...] = ("draft", "evaluating", "ready", "reviewing")
CLOSED: tuple[str, ...] = ("merged", "rejected", "tampered")
FROZEN: tuple[str, ...] = ("evaluating", "ready", "reviewing")
CENTRAL = "central"
INTEGRATION = "integration"


class Frozen(FlowState):
    """The base of the state's models: frozen, updated with checked `replace`."""


class Job(Frozen):
    """A program (`Run`) or a measurement (`Measure`) the flow wants done, until its event
    (`Ran`/`Measured` with `key`) arrives; `purpose` says what its result is for."""

    key: str
    purpose: str
    subject: str = ""  # the lane or PR the job is about
    place: str
    lane: str | None = None
    reads: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()
    env: dict[str, str] = {}
    command: str = ""  # a measurement's shell command
    pattern: str = ""
    timeout: float = 600.0

    @property
    def label(self) -> str:
        """What the views call the job (never its key)."""
        words = _JOB_WORDS.get(self.purpose, "the runtime's {what} of {subject}")
        return words.format(what=self.purpose.replace("-", " "), subject=self.subject or "main")

    def command_of(self) -> Run | Measure:
        if self.command:
            return Measure(
                key=self.key,
                place=self.place,
                command=self.command,
                pattern=self.pattern,
                timeout=self.timeout,
                lane=self.lane,
                reads=self.reads,
                label=self.label,
            )
        # The runtime's own git programs: in a lane's clone, jailed like the lane; on the
        # run's stores (central, integration, checkouts), which no lane may write, not.
        return Run(
            key=self.key,
            place=self.place,
            argv=self.argv,
            timeout=self.timeout,
            lane=self.lane,
            reads=self.reads,
            env=self.env,
            jailed=self.lane is not None,
            label=self.label,
        )


# What each purpose of a job is, in words (`subject`: the lane or PR it is about).
_JOB_WORDS = {
    "export": "the bundling of {subject}'s pushes in its clone",
    "forward": "the forwarding of {subject}'s pushes into the central repository",
    "checkout": "a clean checkout of {subject}",
    "measure": "{subject} in a clean checkout",
    "merge": "the merge of {subject} into main, in the integration clone",
    "merge-checkout": "a clean checkout of {subject} merged into main",
    "merge-measure": "{subject} merged into main, in a clean checkout",
    "push-main": "the push of {subject}'s merge to main in the central repository",
}


class Receipt(Frozen):
    """What the runtime measured, of exactly which commit and tree."""

    key: str
    commit: str
    tree: str
    command: str
    exit_code: int | None = None
    duration: float = 0.0
    output_sha256: str | None = None
    value: float | None = None
    error: str | None = None
    at: str = ""


class PullRequest(Frozen):
    id: str
    lane: str
    branch: str
    title: str
    hypothesis: str = ""
    status: PrStatus = "draft"
    head: str
    opened_at: str
    ready_at: str | None = None
    ready_seq: int = 0  # order in which PRs became ready (ties go to the earlier)
    base: str | None = None
    tree: str | None = None
    descends: bool = False
    changed: int = 0
    score: float | None = None
    receipt: Receipt | None = None
    merge: str | None = None
    merge_receipt: Receipt | None = None
    reason: str | None = None
    tampered: tuple[str, ...] = ()  # the evaluator's frozen files it changes

    @property
    def ref(self) -> str:
        return f"refs/heads/{self.branch}"

    def summary(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class LedgerEntry(Frozen):
    seq: int
    pr: str
    lane: str
    prior_main: str
    merge: str
    score: float | None
    prior_score: float | None
    fast: bool
    receipts: tuple[str, ...]
    at: str


class AfterTurn(Frozen):
    """A lane's turn ended: its pushes go through the hook, then its PR requests are done."""

    turn: int
    requests: tuple[dict[str, Any], ...] = ()
    refused_lines: tuple[str, ...] = ()
    pushed: dict[str, str] | None = None  # the outbox's refs, once exported


class Review(Frozen):
    """The one PR being integrated: merged into main in the integration clone, re-measured
    when it did not descend from main, then pushed to main through the hook."""

    pr: str
    main: str
    merge: str | None = None
    fast: bool = False
    score: float | None = None
    receipt: Receipt | None = None


class Publication(Frozen):
    target: str | None = None  # main, when the source should follow it
    prs: tuple[str, ...] = ()  # merged since the last publication
    attempts: int = 0
    held: str | None = None
    retry_at: float | None = None


class GitState(Frozen):
    params: GitPrParams
    allowed: tuple[str, ...] = ()  # what PRs may change: the param, else the task's paths
    # The task's paths alone, so a resume that clears the param falls back to them (None: a
    # state stored before this was kept; `allowed` stands in).
    task_allowed: tuple[str, ...] | None = None
    source: str = ""  # the user's tree
    book: LaneBook
    outbox: Outbox = Outbox()
    places: dict[str, str] = {}
    plan: dict[str, Any] | None = None
    revision: int = 0
    planning: Planning | None = Planning()
    fingerprint: str = ""
    ops: int = 0
    jobs: dict[str, Job] = {}
    steps: tuple[str, ...] = ()  # setup steps done: clones, the baseline's checkout
    setup_error: str | None = None
    baseline: str | None = None
    main: str | None = None
    main_score: float | None = None
    main_measured: bool = False
    main_error: str | None = None
    # The evaluator's files (path -> SHA-256) frozen from the baseline's clean checkout before
    # anything ran there; None until then (no lane turn starts before).
    frozen: dict[str, str] | None = None
    refs: dict[str, dict[str, str]] = {}  # lane -> its branches in the central repository
    seen: dict[str, dict[str, str]] = {}  # lane -> its outbox refs the runtime forwarded
    after: dict[str, AfterTurn] = {}
    prs: dict[str, PullRequest] = {}
    ready_seq: int = 0
    review: Review | None = None
    ledger: tuple[LedgerEntry, ...] = ()
    published: str | None = None
    publication: Publication = Publication()
    system_reports: int = 0

    def place(self, name: str) -> str:
        return self.places[name]

    def pr(self, pr_id: str) -> PullRequest:
        return self.prs[pr_id]

    def with_pr(self, pr: PullRequest) -> GitState:
        return self.replace(prs={**self.prs, pr.id: pr})


def waiting_key(lane: str) -> str:
    """What a lane waits for after a turn: its pushes and requests carried out."""
    return f"after:{lane}"


def lane_place(lane: str) -> str:
    return f"lanes/{lane}"


def checkout_place(lane: str) -> str:
    return f"checkouts/{lane}"


def place_label(place: str) -> str:
    """What a place of the run's git layout is, in words (`MakePlace.label`)."""
    fixed = {
        CENTRAL: "the central repository",
        INTEGRATION: "the integration clone",
        "checkouts/main": "a clean checkout of main",
        "checkouts/merge": "a clean checkout of merges into main",
    }
    if place in fixed:
        return fixed[place]
    kind, _, name = place.partition("/")
    if kind == "lanes":
        return f"{name}'s clone"
    if kind == "checkouts":
        return f"a clean checkout of {name}'s pull requests"
    return f"the place {place}"


def epoch(at: str) -> float:
    """Seconds since the epoch of an event's ISO time (0 when it has none)."""
    try:
        return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def result_of(receipt: dict[str, Any]) -> dict[str, Any]:
    """The JSON a runtime program printed as its last line, or {"error": why not}."""
    lines = [ln for ln in str(receipt.get("output") or "").splitlines() if ln.strip()]
    parsed: Any = None
    if lines:
        try:
            parsed = json.loads(lines[-1])
        except ValueError:
            parsed = None
    if isinstance(parsed, dict) and (parsed.get("error") or not receipt.get("error")):
        return parsed
    why = receipt.get("error") or "no result"
    return {"error": f"{why}: {lines[-1][:300]}" if lines else str(why)}
