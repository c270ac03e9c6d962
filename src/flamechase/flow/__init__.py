"""PUBLIC: the one import a flow needs. The built-in flows use exactly this API.

A flow is a pure decider over the run's events: it declares roles, params and lanes, folds
events into its own state (`evolve`), says what should happen next (`decide` returns
commands), and writes the prompts of the turns it asked for (`prompt`). It never does I/O,
never reads a clock and never writes run state; the engine does all of that and stores the
flow's state with every transaction. docs/writing-a-flow.md walks through a complete flow.

    class MyState(FlowState):          # frozen; `state.replace(drafts=2)` checks name and type
        drafts: int = 0

    class MyFlow(Flow[MyState, MyParams]):   # MyParams: a FlowParams subclass (optional)
        name = "my_flow"
        summary = "..."

        def roles(self, params): return ["author", "reviewer"]
        def start(self, setup): return MyState()
        def evolve(self, state, event): return state.replace(drafts=state.drafts + 1)
        def decide(self, state, now): return [StartTurn(role="author", lane=None, number=1)]
        def prompt(self, state, ctx): return f"Objective: {ctx.objective} ..."

    FLOW = MyFlow()   # what `-f path/to/flow.py` loads

A flow that runs a Python program of its own with `Run` builds its argv with
`runtime_module` (this interpreter, isolated: `python -I -m ...`), so that nothing in the place
it runs in is on its import path; the engine refuses an unjailed `Run` of Python without it.

A flow may ship a simulated actor (`Flow.simulator`, `flamechase.flow.sim`) that plays its
turns for `sim/PROFILE` agents; without one, `sim` answers each turn's result schema itself.

Must not import the engine, the store, agents or views: a flow sees the run only through
events, and acts only through commands.
"""

from flamechase import events
from flamechase.events import Event, FlowEvent
from flamechase.events.present import Mark, Ranking, Row, Score, Seen, Shown
from flamechase.flow.api import (
    REASON,
    AgentDefaults,
    CopyParams,
    Flow,
    FlowParams,
    LaneDef,
    Role,
    RunSetup,
    Skill,
    TurnContext,
)
from flamechase.flow.commands import (
    REPORT,
    Command,
    DropPlace,
    Emit,
    FinishRun,
    Freeze,
    HoldLane,
    MakePlace,
    Measure,
    PublishReport,
    ReleaseLane,
    ResultSpec,
    Run,
    StartTurn,
    WaitUntil,
)
from flamechase.flow.outbox import Outbox
from flamechase.flow.sim import SimActor, SimTurn
from flamechase.flow.state import FlowState, FlowStateError
from flamechase.interpreter import runtime_module, runtime_python, runtime_shell

__all__ = [
    "REASON",
    "REPORT",
    "AgentDefaults",
    "Command",
    "CopyParams",
    "DropPlace",
    "Emit",
    "Event",
    "FinishRun",
    "Flow",
    "FlowEvent",
    "FlowParams",
    "FlowState",
    "FlowStateError",
    "Freeze",
    "HoldLane",
    "LaneDef",
    "MakePlace",
    "Mark",
    "Measure",
    "Outbox",
    "PublishReport",
    "Ranking",
    "ReleaseLane",
    "ResultSpec",
    "Role",
    "Row",
    "Run",
    "RunSetup",
    "Score",
    "Seen",
    "Shown",
    "SimActor",
    "SimTurn",
    "Skill",
    "StartTurn",
    "TurnContext",
    "WaitUntil",
    "events",
    "runtime_module",
    "runtime_python",
    "runtime_shell",
]
