"""Every kind of event a run journals: one frozen class per kind, with a version.

The control loop journals events in the same transaction as the state they change; flows fold
them into their state (`Flow.evolve`); views fold them into pictures (`view.state.RunFold`).
All three use these classes, so a kind cannot mean one thing to the engine and another to a
view. A stored event is a row `{seq, at, kind, v, lane, actor, payload}`; `parse` turns a row
back into its class, ignoring payload keys it does not know (newer writers) and filling the
ones it lacks with defaults (older writers). A kind nobody registered comes back as `Unknown`.

Flows outside flamechase register their own kinds with `register` (a subclass of
`FlowEvent`); views show those with `Event.describe()`.
"""

from __future__ import annotations

from flamechase.events.base import REGISTRY, Event, FlowEvent, Unknown, parse, register
from flamechase.events.git_pr import (
    CentralReady,
    MainMeasured,
    MainPublished,
    PrMerged,
    PrOpened,
    PrReady,
    PrRejected,
    PrRequestRefused,
    PrReviewing,
    PublicationHeld,
    PushRefused,
)
from flamechase.events.lanes import (
    LaneHeld,
    LaneReleased,
    Measured,
    Ran,
    ReportPublished,
)
from flamechase.events.parrallello import (
    Anomaly,
    BlockEnded,
    BuilderChecked,
    CheckpointMade,
    FrontEnded,
    FrontIntegrated,
    FrontPrepped,
    FrontsPlanned,
    FrontStarted,
    GateRan,
    GateRefrozen,
    RoundStarted,
    VerdictRecorded,
)
from flamechase.events.pfc import (
    CandidateBestUpdated,
    CandidateSubmitted,
    LeaderboardDeclared,
    ObjectiveReplanned,
    PlanAttempt,
    Planned,
    PlanningStarted,
)
from flamechase.events.run import (
    BudgetSpent,
    Frozen,
    Notice,
    ObjectiveRevised,
    PlaceDropped,
    PlaceMade,
    RunCreated,
    RunEnded,
    RunFailed,
    RunFinished,
    RunHeld,
    RunResumed,
    RunRunning,
    RunStopped,
    Stopping,
    budget_words,
    human_seconds,
)
from flamechase.events.turns import (
    LanePaused,
    TurnEnded,
    TurnFailed,
    TurnInterrupted,
    TurnStarted,
    TurnValid,
)

__all__ = [
    "REGISTRY",
    "Anomaly",
    "BlockEnded",
    "BudgetSpent",
    "BuilderChecked",
    "CandidateBestUpdated",
    "CandidateSubmitted",
    "CentralReady",
    "CheckpointMade",
    "Event",
    "FlowEvent",
    "FrontEnded",
    "FrontIntegrated",
    "FrontPrepped",
    "FrontStarted",
    "FrontsPlanned",
    "Frozen",
    "GateRan",
    "GateRefrozen",
    "LaneHeld",
    "LanePaused",
    "LaneReleased",
    "LeaderboardDeclared",
    "MainMeasured",
    "MainPublished",
    "Measured",
    "Notice",
    "ObjectiveReplanned",
    "ObjectiveRevised",
    "PlaceDropped",
    "PlaceMade",
    "PlanAttempt",
    "Planned",
    "PlanningStarted",
    "PrMerged",
    "PrOpened",
    "PrReady",
    "PrRejected",
    "PrRequestRefused",
    "PrReviewing",
    "PublicationHeld",
    "PushRefused",
    "Ran",
    "ReportPublished",
    "RoundStarted",
    "RunCreated",
    "RunEnded",
    "RunFailed",
    "RunFinished",
    "RunHeld",
    "RunResumed",
    "RunRunning",
    "RunStopped",
    "Stopping",
    "TurnEnded",
    "TurnFailed",
    "TurnInterrupted",
    "TurnStarted",
    "TurnValid",
    "Unknown",
    "VerdictRecorded",
    "budget_words",
    "human_seconds",
    "parse",
    "register",
]
