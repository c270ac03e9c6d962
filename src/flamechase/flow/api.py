"""The flow contract: declarations (roles, params, lanes), and a pure decider over events.

A flow never does I/O and never reads a clock: the engine hands it events (`evolve`) and the
time (`decide`), and carries out the commands it returns. Its state is a pydantic model the
engine stores (as JSON) with every transaction, so a resumed run asks `decide` again where it
stopped, with no flow-specific engine code.
"""

from __future__ import annotations

import abc
import dataclasses
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypeVar

from flamechase.events import Event
from flamechase.flow.commands import REPORT, Command, StartTurn

if TYPE_CHECKING:
    from flamechase.flow.sim import SimActor

__all__ = [
    "REASON",
    "AgentDefaults",
    "CopyParams",
    "Flow",
    "FlowParams",
    "LaneDef",
    "Role",
    "RunSetup",
    "TurnContext",
]


class FlowParams(BaseModel):
    """Params every flow accepts. Subclass to add a flow's own (with ranges)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rest_seconds: float = Field(
        default=1.0, ge=0.05, le=60.0, description="pause between a lane's turns, seconds"
    )
    resume_mode: Literal["auto", "fresh"] = Field(
        default="auto", description="auto: pick up a compatible run; fresh: always start anew"
    )
    turn_timeout: float = Field(
        default=14400.0, gt=0, le=7 * 86400, description="seconds a turn may take before it is cut"
    )
    silence_timeout: float = Field(
        default=900.0, gt=0, le=86400, description="seconds without output before a turn is cut"
    )
    kill_grace: float = Field(
        default=5.0, ge=0.1, le=300, description="seconds between SIGTERM and SIGKILL for an agent"
    )
    sandbox: Literal["auto", "bwrap", "landlock", "off"] = Field(
        default="auto",
        description="jail agents: bubblewrap where it runs, else Landlock; "
        "off (said explicitly) runs them unconfined",
    )


class CopyParams(FlowParams):
    """Params of flows that copy the source (private places): when a copy is large enough to
    ask first. Flows that make no copies take plain `FlowParams`."""

    confirm_large_workspace_copies: bool = Field(
        default=False, description="ask before making copies over the thresholds"
    )
    workspace_file_warning_threshold: int = Field(
        default=5000,
        ge=1,
        le=100_000_000,
        description="warn before copying a source tree with more files than this",
    )
    workspace_copy_warning_threshold_bytes: int = Field(
        default=1024**3,
        ge=1,
        le=1_000_000_000_000_000_000,
        description="warn before copying more bytes than this",
    )


@dataclasses.dataclass(frozen=True, slots=True)
class AgentDefaults:
    """How every agent of a role is set up, whichever CLI the run gives it.

    `goals`: a CLI's own goal mode (the agent keeps going until it judges the objective met)
    stays off, so a turn ends where the flow's protocol says; no flamechase backend runs an
    agent as a goal, and a flow asking for one is refused before the run starts.
    `effort`: the effort a role runs at when its `-a` spec names none and its CLI has that
    effort on its ladder (`claude/opus` becomes `claude/opus:high`).
    """

    goals: bool = False
    effort: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Role:
    """A role as `flamechase flows show` and the prompt present it, with its agent defaults.
    `without`: the params that run the flow without this role (`-p prep=false`), said when no
    agent is given for it."""

    name: str
    description: str = ""
    defaults: AgentDefaults = AgentDefaults()
    without: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Skill:
    """A flow's protocol as a skill: `name` (lowercase words and hyphens, as CLIs name skills),
    a one-line `description` (what a CLI lists before loading it) and the `body` (Markdown)."""

    name: str
    description: str
    body: str


@dataclasses.dataclass(frozen=True, slots=True)
class LaneDef:
    """A lane the run opens at its start: a sequence of turns in one place.

    `place` is "source" (the user's tree) or the name of a private copy the flow asks for
    with `MakePlace`. Roles are listed for views and for `status`.
    """

    name: str
    roles: tuple[str, ...]
    place: str = "source"

    @property
    def in_source(self) -> bool:
        return self.place == "source"


def lane_words(lanes: Sequence[LaneDef]) -> dict[str, str]:
    """Each lane role said by where it takes its turns: what any flow's `lanes` tell a user
    of its roles when the flow says nothing more."""
    said: dict[str, str] = {}
    for lane in lanes:
        where = "on your tree" if lane.in_source else f"in its own place ({lane.place})"
        with_ = [r for r in lane.roles if len(lane.roles) > 1]
        for role in lane.roles:
            others = [r for r in with_ if r != role]
            turns = f", in turn with {', '.join(others)}" if others else ""
            said.setdefault(role, f"takes turns in {lane.name}{turns}, {where}")
    return said


# A flow's params type: what `roles`, `lanes`, `RunSetup.params`... are given (the engine
# validates `-p` against the flow's `Params`, so they are always of it). Flows that declare
# no params of their own (`Flow[State]`) take plain `FlowParams`.
P = TypeVar("P", bound=FlowParams, default=FlowParams)


@dataclasses.dataclass(frozen=True, slots=True)
class RunSetup(Generic[P]):
    """What a flow's first state may depend on. `source`: the path of the user's tree (the
    place "source"), for programs a flow runs in another place that read it."""

    run_id: str
    objective: str
    params: P
    lanes: Sequence[LaneDef]
    source: str = ""


# `repair_prompt` is called with this in place of the reason; the engine splits the text at
# it, so a repair prompt crosses to an executor as plain text.
REASON = "\x00reason\x00"


@dataclasses.dataclass(frozen=True, slots=True)
class TurnContext:
    """What the engine knows of a turn when it starts it: paths, attempt, delivered reports."""

    run_id: str
    flow: str
    objective: str
    turn: StartTurn
    attempt: int
    workspace: Path
    io_dir: Path
    report_path: Path
    inbox_path: Path
    inbox: Sequence[Mapping[str, Any]]
    artifact_root: Path | None
    checkpoint_path: Path | None
    checkpoint_identity: Mapping[str, Any]
    workspace_map: Mapping[str, Any]
    # The name of the flow's skill when the role's CLI has it mounted (`Flow.skill`): the
    # prompt may refer to it instead of repeating it. "" when none is mounted.
    skill: str = ""


S = TypeVar("S", bound=BaseModel)


class Flow(abc.ABC, Generic[S, P]):
    """A flow: declarations plus a pure decider. Subclass and instantiate once as `FLOW`.

    `Flow[MyState, MyParams]` types what the flow is given: `evolve` folds a `MyState`, and
    `roles`, `lanes`... and `RunSetup.params` get `MyParams` (`Flow[MyState]`: `FlowParams`).
    `State` and `Params` default to these arguments; given as well, they must be of them.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    version: ClassVar[str] = "1"
    Params: ClassVar[type[FlowParams]] = FlowParams
    State: ClassVar[type[BaseModel]]
    #: Params a resume may not change (they shape the run: e.g. the number of lanes).
    structural_params: ClassVar[tuple[str, ...]] = ()
    #: False: every start is a new run (the same command never picks one up; --resume is
    #: refused). Its state is still stored with every transaction.
    resumable: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _take_type_arguments(cls)

    # ---- declarations (read before anything runs) --------------------------------------------

    @abc.abstractmethod
    def roles(self, params: P) -> list[str]:
        """Every role, in the order positional `-a` fills them."""

    def describe_roles(self, params: P) -> list[Role]:
        """`roles(params)` with what each is for and its agent defaults (override to say
        more). By default a role in a lane is said by where it takes its turns."""
        where = lane_words(self.lanes(params))
        return [Role(name, where.get(name, "")) for name in self.roles(params)]

    def lanes(self, params: P) -> list[LaneDef]:
        """Lanes opened when the run is created (their places are made by the flow)."""
        return []

    def copies_needed(self, params: P, *, fresh: bool, revised: bool) -> int:
        """How many copies of the source a start makes (for the large-copy warning)."""
        return 0 if not fresh else sum(1 for ln in self.lanes(params) if not ln.in_source)

    def copy_names(self, params: P, *, fresh: bool, revised: bool) -> list[str]:
        """What those copies are for, named for the warning."""
        return [ln.name for ln in self.lanes(params) if not ln.in_source] if fresh else []

    def demo_params(self, fields: Mapping[str, Any], evaluator: str) -> dict[str, str]:
        """Params for a simulated run on the bundled sample (whose `evaluator` is given)."""
        return {}

    def simulator(self) -> SimActor | None:
        """The simulated actor `sim/PROFILE` agents play this flow's turns with
        (`flamechase.flow.sim`); None: the `sim` backend's own answers (a valid instance of
        each turn's result schema). Define it in the flow's module or import it at its top,
        as the rest of the flow's code, so that the flow's code hash covers it."""
        return None

    def start_notices(self, params: P) -> list[str]:
        """Lines said at the start of every session (after the engine's own, journaled as
        notices): what these params mean for the run that a user would not guess, such as a
        guarantee of the flow that they turn off."""
        return []

    # ---- the decider (pure) -------------------------------------------------------------------

    @abc.abstractmethod
    def start(self, setup: RunSetup[P]) -> S:
        """The state of a new run."""

    @abc.abstractmethod
    def evolve(self, state: S, event: Event) -> S:
        """The state after `event` (ignore kinds you do not know)."""

    @abc.abstractmethod
    def decide(self, state: S, now: float) -> Sequence[Command]:
        """What should happen now (seconds since the epoch), given `state`. The engine checks
        each command against the flow's declarations and what the run did before acting
        (docs/writing-a-flow.md, "Mistakes a flow can make")."""

    def skill(self, role: str) -> Skill | None:
        """The skill this flow brings for `role` (its protocol, as text a CLI loads), or None.
        The runtime mounts it where the role's CLI loads skills or instruction files, and
        then sets `TurnContext.skill`; a CLI with no such mechanism gets the prompt alone,
        so `prompt` must still carry the protocol when `ctx.skill` is ""."""
        return None

    @abc.abstractmethod
    def prompt(self, state: S, ctx: TurnContext) -> str:
        """The prompt of a turn `decide` asked for (`ctx.turn`), now that it starts."""

    def repair_prompt(self, state: S, ctx: TurnContext, reason: str) -> str:
        """Ask the same session for a corrected result, of the schema the turn ends with."""
        result = ctx.turn.result
        if result.model is REPORT.model:
            return (
                f"Your turn report was rejected: {reason}\n"
                f"Write a corrected JSON report for the work you just did to {ctx.report_path} "
                "(do not start new work). Required: status (progress, deliverable_ready, "
                "no_result or blocked) and a non-empty summary; optional lists changes, "
                "evidence, tests, risks; next_step; deliverable only with status "
                "deliverable_ready; submission only with a deliverable. No other keys."
            )
        return (
            f"Your {result.noun} was rejected: {reason}\n"
            f"Write a corrected JSON {result.noun} for the work you just did to "
            f"{ctx.report_path} (do not start new work). {result.describe()}"
        )

    def describe(self, state: S) -> dict[str, Any]:
        """A JSON summary for `status` and the views: top-level keys are shown as they are;
        `lanes` ({lane: {field: value}}) adds fields to each lane's row."""
        return {}

    def load_state(self, text: str) -> S:
        """A stored state back (the engine stores `state.model_dump_json()`)."""
        return self.State.model_validate_json(text)  # type: ignore[return-value]


def _take_type_arguments(cls: type[Flow[Any, Any]]) -> None:
    """`State` and `Params` from a subclass's `Flow[State, Params]` when it does not set
    them; refused when it sets them to what the arguments are not (its typed methods would
    be given something else)."""
    for base in cls.__dict__.get("__orig_bases__", ()):
        if typing.get_origin(base) is not Flow:
            continue
        for attr, arg in zip(("State", "Params"), typing.get_args(base), strict=False):
            if not (isinstance(arg, type) and issubclass(arg, BaseModel)):
                continue  # a type variable (a generic base of flows), Any
            given = cls.__dict__.get(attr, getattr(cls, attr, None))
            if given is None or (attr not in cls.__dict__ and given is getattr(Flow, attr, 0)):
                setattr(cls, attr, arg)
            elif not (isinstance(given, type) and issubclass(given, arg)):
                raise TypeError(
                    f"flow {cls.__qualname__}: {attr} = {getattr(given, '__name__', given)} "
                    f"is not a {arg.__name__}, the {attr.lower()} of its Flow[...] base"
                )
