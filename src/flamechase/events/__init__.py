"""Every kind of event a run journals: one frozen class per kind, with a version.

The control loop journals events in the same transaction as the state they change; flows fold
them into their state (`Flow.evolve`); views fold them into pictures (`view.state.RunFold`).
All three use these classes, so a kind cannot mean one thing to the engine and another to a
view. A stored event is a row `{seq, at, kind, v, lane, actor, payload}`; `parse` turns a row
back into its class, ignoring payload keys it does not know (newer writers) and filling the
ones it lacks with defaults (older writers). A kind nobody registered comes back as `Unknown`.

This package holds the engine's own vocabulary only. Every flow, built-in or not, registers
its kinds with `register` (a subclass of `FlowEvent`) in its own package, where they are
imported with the flow; views show any kind through what the event says of itself.
"""

from __future__ import annotations

from flamechase.events.base import REGISTRY, Event, FlowEvent, Unknown, parse, register
from flamechase.events.lanes import (
    LaneHeld,
    LaneReleased,
    Measured,
    Ran,
    ReportPublished,
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
    AgentSwitched,
    LanePaused,
    TurnEnded,
    TurnFailed,
    TurnInterrupted,
    TurnStarted,
    TurnValid,
)

__all__ = [
    "REGISTRY",
    "AgentSwitched",
    "BudgetSpent",
    "Event",
    "FlowEvent",
    "Frozen",
    "LaneHeld",
    "LanePaused",
    "LaneReleased",
    "Measured",
    "Notice",
    "ObjectiveRevised",
    "PlaceDropped",
    "PlaceMade",
    "Ran",
    "ReportPublished",
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
    "budget_words",
    "human_seconds",
    "parse",
    "register",
]
