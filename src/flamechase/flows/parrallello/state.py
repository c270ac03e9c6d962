"""parrallello's state: everything the runtime-as-lead decides from, stored with every
transaction (so a resumed run continues at the right front, block, round and phase)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from flamechase.flow import FlowState, Outbox
from flamechase.flows.parrallello.gates import GateResult
from flamechase.flows.parrallello.params import ParrallelloParams
from flamechase.flows.parrallello.plan import FrontSpec, PlanSpec
from flamechase.flows.parrallello.tickets import Ticket
from flamechase.flows.parrallello.usage import UsageState

__all__ = [
    "BuilderRun",
    "FrontState",
    "Knobs",
    "PState",
    "PrepState",
    "RoundRecord",
    "RoundState",
    "Spend",
    "seconds_between",
    "spec_of",
]

Phase = Literal[
    "sync",
    "build",
    "check",
    "apply",
    "gate",
    "critic_sync",
    "critic",
    "critic_check",
    "critic_trial",
    "critic_apply",
    "verdict",
]
FrontStatus = Literal[
    "waiting", "opening", "building", "approved", "not_approved", "blocked", "stopped"
]
ENDED: frozenset[str] = frozenset({"approved", "not_approved", "blocked", "stopped"})


class Spend(FlowState):
    cost: float = 0.0
    turns: int = 0
    output_tokens: int = 0
    seconds: float = 0.0

    def plus(
        self, cost: float = 0.0, turns: int = 0, output_tokens: int = 0, seconds: float = 0.0
    ) -> Spend:
        return Spend(
            cost=round(self.cost + cost, 6),
            turns=self.turns + turns,
            output_tokens=self.output_tokens + output_tokens,
            seconds=round(self.seconds + seconds, 3),
        )

    def share(self, limits: dict[str, float]) -> float:
        """The largest fraction of a budget this spend is (0 with no budgets)."""
        used = {
            "cost": self.cost,
            "turns": float(self.turns),
            "output_tokens": float(self.output_tokens),
            "duration": self.seconds,
        }
        return max((used[k] / v for k, v in limits.items() if v and k in used), default=0.0)


def seconds_between(start: str, end: str) -> float:
    try:
        a = datetime.fromisoformat(start.replace("Z", "+00:00"))
        b = datetime.fromisoformat(end.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return max(0.0, (b - a).total_seconds())


class BuilderRun(FlowState):
    """One builder in one round: fresh, in its own copy of the front's tree."""

    owner: str
    lane: str
    place: str
    tickets: tuple[Ticket, ...]
    synced: bool = False
    result: dict[str, Any] | None = None
    failures: int = 0
    error: str | None = None
    finished: bool = False
    diff: dict[str, Any] | None = None
    applied: bool = False
    reaped: bool = False


class RoundState(FlowState):
    number: int  # the front's round (numbering goes on across blocks)
    block: int
    in_block: int
    phase: Phase = "sync"
    paced: bool = False
    ceiling: int = 60
    builders: dict[str, BuilderRun] = {}
    refused: str | None = None  # the round's work was refused (a touched gate)
    hashed: bool = False
    gate: GateResult | None = None
    critic_turn: int = 0
    critic_synced: bool = False
    sheets: dict[str, Any] | None = None  # the contact sheets taken to the critic (tools/sheets)
    critic_failures: int = 0
    critic_error: str | None = None
    verdict: dict[str, Any] | None = None
    critic_diff: dict[str, Any] | None = None
    critic_applied: bool = False
    rehashed: bool = False
    refrozen: dict[str, str] | None = None
    regate: GateResult | None = None
    trial: Literal["tighten", "recalibrate"] | None = None  # the critic's gate change, tried
    trial_synced: bool = False
    trial_applied: bool = False
    fhashed: dict[str, str] | None = None  # the front's gate files once the change is taken
    recalibration: dict[str, Any] | None = None  # a proven one, taken when the block ends
    findings: tuple[dict[str, Any], ...] = ()  # the runtime's own findings this round
    started_at: str = ""


class RoundRecord(FlowState):
    """What stays of a round once it is judged (the full verdict is in its event)."""

    number: int
    block: int
    approved: bool
    majors: int
    mediums: int
    minors: int
    gate: str
    gate_pass: bool
    refused: str | None = None
    mismatch: str | None = None
    reasons: tuple[str, ...] = ()
    open_tickets: int = 0


class PrepState(FlowState):
    status: Literal["none", "running", "done", "failed"] = "none"
    turn: int = 0
    failures: int = 0
    error: str | None = None
    result: dict[str, Any] | None = None


class FrontState(FlowState):
    id: str
    lane: str
    owners: dict[str, str]  # owner -> builder lane
    status: FrontStatus = "waiting"
    prep: PrepState = PrepState()
    frozen: dict[str, str] | None = None  # gate files -> sha256, while the front runs
    last_gate: GateResult | None = None
    items: int | None = None  # item count of the last accepted --full run
    # The front's contract: item id -> target (the plan's, then every item an accepted run
    # printed); the yardstick only tightens against it. Its recalibrations, each with its
    # proof and date, and the one proven but not yet taken (at the block's end).
    contract: dict[str, str] = {}
    recalibrations: tuple[dict[str, Any], ...] = ()
    pending: dict[str, Any] | None = None
    lead: dict[str, Any] = {}  # the decision under way between blocks (its turn, its result)
    files: dict[str, tuple[str, ...]] | None = None  # owner -> globs, once a lead split them
    spare: str | None = None  # a builder lane no owner has yet (for a split)
    lead_note: str = ""  # the last decision's note: binds the block's builders and critic
    decisions: tuple[dict[str, Any], ...] = ()  # every decision between blocks, by block
    user_decided: str = ""  # the digest of the user's decision (-p lead_decision) it took
    tickets: tuple[Ticket, ...] = ()
    handoffs: dict[str, str] = {}
    block: int = 0
    rounds: int = 0  # rounds started
    paced: bool = False  # the current block is paced
    week_at_start: float | None = None  # the weekly share read when the block started
    # With a probe: the block that last ended waits for the probe's reading after it, which
    # says the share of the week it spent (`weeks.read`).
    week_due: bool = False
    current: RoundState | None = None
    history: tuple[RoundRecord, ...] = ()
    blocks: tuple[dict[str, Any], ...] = ()  # per ended block: spend, share, paced_next
    block_spend: Spend = Spend()
    block_started: str = ""
    lane_turns: int = 0  # turns numbered so far in the front's own lane (prep, critics)
    opened: dict[str, bool] = {}  # the opening steps done: stage, freeze, baseline
    integrated: dict[str, Any] | None = None
    ended: str = ""  # why it ended, in words
    # Paused on the account's extra credit at the end of a round ("round") or of a block
    # ("block"): what it does next once a resumed run's probe reads below the threshold.
    # Held at a round's end on its usage: until the probe after it answers (with a probe), or on
    # the extra-credit pause ("round"/"block": what ended); "reset": a block ended under the
    # weekly or 5 h threshold, said, waiting for the reset (usage.py).
    usage_paused: Literal["", "round", "block", "reset"] = ""

    @property
    def done(self) -> bool:
        return self.status in ENDED and (self.status != "approved" or self.integrated is not None)


def spec_of(plan: PlanSpec, front: FrontState) -> FrontSpec:
    """The front's spec as it runs: the plan's, with its files as a lead split them."""
    spec = plan.front(front.id)
    return spec if front.files is None else spec.model_copy(update={"owners": dict(front.files)})


class Knobs(FlowState):
    """The params the decider reads (the plan itself is `PState.plan`)."""

    prep: bool = True
    checkpoint: str = "auto"
    pacing_share: float = 0.09
    paced_tickets: int = 4
    ceiling: int = 60
    paced_ceiling: int = 40
    stop_share: float = 0.92
    fronts: int = 3
    lead: bool = False
    lead_decision: dict[str, dict[str, Any]] | None = None  # a user's, by front id (or `*`)
    usage_probe: str | None = None
    control_dir: str | None = None
    release_tag: str | None = None

    @classmethod
    def of(cls, params: ParrallelloParams) -> Knobs:
        return cls(**{k: getattr(params, k) for k in cls.model_fields})


class PState(FlowState):
    knobs: Knobs
    run_id: str
    plan: PlanSpec | None = None
    planner_errors: tuple[str, ...] = ()
    planner_busy: bool = False
    fronts: dict[str, FrontState] = {}
    slots: tuple[tuple[str, tuple[str, ...]], ...] = ()  # declared lanes, for a planner's plan
    places: dict[str, str] = {}
    created_at: str = ""
    checkpoint: dict[str, Any] | None = None
    limits: dict[str, float] = {}
    spend: Spend = Spend()
    anomalies: tuple[dict[str, Any], ...] = ()  # what the runtime detected, the latest kept
    anomaly_count: int = 0  # every anomaly of the run, kept or not
    retried: dict[str, int] = {}  # runtime programs that failed once, by key
    fatal: str | None = None  # a runtime program failed twice: the run cannot go on
    pulses: dict[str, int] = {}  # "front:block" -> pulses said (pulse.py)
    usage: UsageState = UsageState()  # the account-usage probe's last word (usage.py)
    controls: int = 0  # control-plane writes owed so far
    control: dict[str, Any] | None = None  # the last one's result
    control_due: dict[str, str] | None = None  # the one owed: key, message, files (JSON)
    release: dict[str, Any] | None = None  # the release tag's result (-p release_tag)
    outbox: Outbox = Outbox()
