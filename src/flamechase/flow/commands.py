"""What a flow may ask of the engine: the commands `Flow.decide` returns.

`decide` is asked again after every change, so it returns what *should* happen given the
state, not a one-off order: the engine starts what is not under way yet and ignores what is.
Commands fall in two groups:

- **Under way until an event says so** (`StartTurn`, `MakePlace`, `Measure`, `WaitUntil`): the
  engine runs them beside the loop; the event that ends them (`TurnValid`/`TurnFailed`/...,
  `PlaceMade`, `Measured`) reaches `evolve`. The same command returned again while it runs is
  not started twice.
- **Done at once** (`PublishReport`, `HoldLane`, `ReleaseLane`, `Emit`): journaled in the same
  transaction as the event that led to them. A flow keeps them in an `Outbox` until the event
  they cause arrives, so it never asks twice (the engine also ignores a report id it already
  has, a hold of a held lane and a release of a free one).

`FinishRun` ends the run once no turn is under way; the engine ends it on its own when a budget
is spent or the user stops it.
"""

from __future__ import annotations

import dataclasses
import json
import traceback
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from flamechase.events import Event, FlowEvent
from flamechase.reports import TurnReport, one_line

__all__ = [
    "REPORT",
    "Command",
    "DropPlace",
    "Emit",
    "FinishRun",
    "Freeze",
    "HoldLane",
    "MakePlace",
    "Measure",
    "PublishReport",
    "ReleaseLane",
    "ResultModelBroke",
    "ResultSpec",
    "Run",
    "StartTurn",
    "WaitUntil",
    "settles",
]


@dataclasses.dataclass(frozen=True, slots=True)
class ResultSpec:
    """The JSON object a turn must end with: a pydantic model, plus context for its validators.

    Crosses to executors on other machines, so it holds only a model class (importable, or
    pickled by value for flows loaded from a path) and plain data.
    """

    model: type[BaseModel]
    noun: str = "report"
    context: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    # Ask CLIs that can enforce a JSON schema (claude's --json-schema, codex's outputSchema) to
    # answer with the result in-band; the others still write it to the report file. Off by
    # default: the file works with every agent, and strict schema modes reject optional keys.
    structured: bool = False

    def __post_init__(self) -> None:
        # Refused where the flow builds it (at import, or in decide), not after an agent ran.
        if not (isinstance(self.model, type) and issubclass(self.model, BaseModel)):
            raise TypeError(
                f"ResultSpec takes a pydantic model class (a subclass of pydantic.BaseModel), "
                f"not {self.model!r}"
            )

    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = self.model.model_json_schema()
        return schema

    def describe(self) -> str:
        """Its keys in a sentence, then its JSON schema: what an agent needs to write one."""
        schema = self.json_schema()
        props: dict[str, Any] = schema.get("properties") or {}
        needed = set(schema.get("required") or ())
        defs: dict[str, Any] = schema.get("$defs") or {}
        required = [f"{k} ({_kind(v, defs)})" for k, v in props.items() if k in needed]
        optional = [f"{k} ({_kind(v, defs)})" for k, v in props.items() if k not in needed]
        words = []
        if required:
            words.append("Required: " + "; ".join(required) + ".")
        if optional:
            words.append("Optional: " + "; ".join(optional) + ".")
        if schema.get("additionalProperties") is False:
            words.append("No other keys.")
        shown = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
        return " ".join([*words, f"Its JSON schema: {shown}"])

    def validate(self, data: Any) -> dict[str, Any]:
        """The normalised object, or ValueError with one line naming what is wrong."""
        if not isinstance(data, dict):
            raise ValueError(f"{self.noun} must be a JSON object, got {type(data).__name__}")
        try:
            value = self.model.model_validate(data, context=dict(self.context))
            dumped: dict[str, Any] = value.model_dump(mode="json")
        except ValidationError as exc:
            raise ValueError(one_line(exc, self.noun)) from None
        except Exception as exc:  # a validator that breaks is the flow's bug, not the agent's
            raise ResultModelBroke(
                f"result model {self.model.__name__} raised {type(exc).__name__}: "
                f"{str(exc).strip()[:300]} while it checked a {self.noun} (a flow bug)",
                traceback.format_exc(),
            ) from exc
        return dumped

    def declared_artifacts(self, data: Mapping[str, Any]) -> list[tuple[str, str]]:
        """(path, description) of the files a valid result asks the runtime to freeze."""
        value = self.model.model_validate(dict(data), context=dict(self.context))
        declared = getattr(value, "declared_artifacts", None)
        try:
            return list(declared()) if callable(declared) else []
        except Exception as exc:
            raise ResultModelBroke(
                f"result model {self.model.__name__}'s declared_artifacts() raised "
                f"{type(exc).__name__}: {str(exc).strip()[:300]} (a flow bug)",
                traceback.format_exc(),
            ) from exc


class ResultModelBroke(Exception):
    """A result model raised something other than a validation error: the flow's bug (the
    turn fails, and the run stops with the model's traceback, `detail`)."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


def _kind(node: Mapping[str, Any], defs: Mapping[str, Any], depth: int = 0) -> str:
    """A JSON schema node in a few words ("list of string", "integer 1..5", "one of 'a', 'b'")."""
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        target = defs.get(name) or {}
        if depth < 2 and "enum" in target:
            return _kind(target, defs, depth + 1)
        return f"object {name}"
    if "const" in node:
        return f"exactly {node['const']!r}"
    if "enum" in node:
        return "one of " + ", ".join(repr(v) for v in node["enum"])
    options = node.get("anyOf") or node.get("oneOf")
    if isinstance(options, list):
        return " or ".join(_kind(o, defs, depth + 1) for o in options)
    kind = node.get("type")
    if kind == "array":
        items = node.get("items")
        inner = _kind(items, defs, depth + 1) if isinstance(items, Mapping) else "anything"
        most = node.get("maxItems")
        return f"list of {inner}" + (f", at most {most}" if most is not None else "")
    if kind in ("integer", "number"):
        low, high = node.get("minimum"), node.get("maximum")
        if low is not None or high is not None:
            return f"{kind} {'' if low is None else low}..{'' if high is None else high}"
    if isinstance(kind, str):
        return "null" if kind == "null" else kind
    return "any JSON value"


#: The turn report every lane turn of the built-in flows ends with.
REPORT = ResultSpec(TurnReport)


class Command:
    """Base of every command (a marker: commands are frozen dataclasses)."""

    __slots__ = ()


@dataclasses.dataclass(frozen=True, slots=True)
class StartTurn(Command):
    """A fresh session of `role`, in `place`, ending with a `result`.

    `lane`: the sequence the turn belongs to (one turn at a time per lane); None for a turn
    outside lanes (a planner). `number`: the turn's number in its lane (for a turn outside lanes,
    whatever the flow counts, e.g. a plan revision); the engine numbers attempts, so a turn cut
    by a crash or a usage limit is taken again with the same number.
    `counted`: counts toward `budget.turns`. `inbox_from`: lanes whose unread reports are
    delivered with the turn and acknowledged when it is valid. `checkpoint`: the agent may
    leave a checkpoint the runtime uses if its session dies before the report. `artifacts`:
    freeze the files the result declares (see `ResultSpec.declared_artifacts`) from the lane's
    artifact root; a refused package makes the turn failed. `requests`: the agent may ask the
    runtime for things by appending JSON objects, one per line, to `$FLAMECHASE_REQUESTS`;
    they reach the flow with the turn's end event (`requests`), never as run state the agent
    writes. `reads`: other private places the turn may read (they are hidden from it
    otherwise). `note`: anything the flow wants back in `TurnContext` when it writes the prompt.
    """

    role: str
    lane: str | None
    number: int
    place: str = "source"
    result: ResultSpec = REPORT
    counted: bool = True
    inbox_from: tuple[str, ...] = ()
    checkpoint: bool = False
    artifacts: bool = False
    requests: bool = False
    reads: tuple[str, ...] = ()
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    note: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"turn:{self.lane}" if self.lane is not None else f"turn::{self.role}"


PlaceHow = Literal["snapshot", "empty", "overlay"]


@dataclasses.dataclass(frozen=True, slots=True)
class MakePlace(Command):
    """A private place called `name` (its path is the engine's choice): a snapshot of the
    source, an empty directory (for what the flow builds there with `Run`), or an overlay: a
    fresh copy of place `base` with what differs in place `over` laid over it, and the files
    frozen under `restore` (a `Freeze` key) put back as they were frozen. `PlaceMade` lists
    what the overlay changed and deleted, so a flow can see a candidate touch frozen files."""

    name: str
    how: PlaceHow = "snapshot"
    base: str | None = None
    over: str | None = None
    restore: str | None = None
    # What the place is, for the views ("lane-2's private copy of your tree", "the review
    # snapshot"); empty: the engine says what it knows (a private copy, an empty place).
    label: str = ""

    @property
    def key(self) -> str:
        return f"place:{self.name}"


@dataclasses.dataclass(frozen=True, slots=True)
class DropPlace(Command):
    """Remove a private place the flow no longer needs. Answered by `PlaceDropped`."""

    name: str


@dataclasses.dataclass(frozen=True, slots=True)
class Freeze(Command):
    """Hash files of `place` and keep a frozen copy in the run's blob store: those matching
    `paths` (globs relative to the place) and those `command` names as arguments. Answered by
    `Frozen(key)` with each file's SHA-256; `MakePlace(restore=key)` puts them back."""

    key: str
    place: str
    paths: tuple[str, ...] = ()
    command: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Measure(Command):
    """Run `command` (with /bin/sh) in `place`, confined like the place's turns; the value is
    the last match of `pattern`'s one group in its output. Answered by `Measured(key)`.
    `reads`: other private places it may read. `label`: what the views call it. `metric` and
    `direction`: the measured value is a candidate on the run's leaderboard (the views rank
    it with every other score of that metric)."""

    key: str
    place: str
    command: str
    pattern: str
    timeout: float = 600.0
    lane: str | None = None
    reads: tuple[str, ...] = ()
    label: str = ""
    metric: str | None = None
    direction: Literal["minimize", "maximize"] | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Run(Command):
    """Run a program (not an agent: a gate, a build, git) in `place`, jailed like the place's
    turns. Answered by `Ran(key)` with its receipt: exit code, duration, the SHA-256 of its
    output and the output's last 64 KiB, and an error unless it exited 0 in time.
    `reads`: other private places it may read (hidden from a jailed program otherwise).
    `jailed` False: one of the runtime's own programs (`flamechase.tools`) that keeps a store
    no agent may write (a central repository, the source's git index); never a program that
    runs code an agent wrote. Unjailed, a Python program must be started isolated
    (`runtime_module`: `python -I -m ...`; the engine refuses one that is not) and its
    environment has no `PYTHON*` variables.
    `exclusive`: it measures alone. The runtime takes the run's measurement lock for it
    (`flamechase lock`) ahead of every agent: agents' holds are ended, new ones wait until it
    is done, and its `timeout` starts once it has the lock (`FLAMECHASE_LOCK_HELD` tells its
    own `flamechase lock run` calls so). Exclusive programs run one at a time.
    `frozen` (path -> SHA-256 of the file's bytes): the program is a yardstick (a gate). It
    runs in a fresh copy of `place` the runtime makes for it and removes afterwards, so that
    nothing it writes reaches `place`; in that copy each of these files must be a regular
    file with exactly that hash before it starts (else it never starts: its receipt's error
    names the file) and stays read-only while it runs (bubblewrap; under Landlock the whole
    copy is read-only, under `sandbox=off` nothing is). The receipt lists the hashes it ran.
    The program's environment names its run and lane (`FLAMECHASE_RUN_DIR`,
    `FLAMECHASE_LANE`), as a turn's does. `label`: what the views call it ("P1's gate",
    "the diff of builder core"); without one they name the program."""

    key: str
    place: str
    argv: tuple[str, ...]
    timeout: float = 600.0
    lane: str | None = None
    reads: tuple[str, ...] = ()
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    jailed: bool = True
    label: str = ""
    exclusive: bool = False
    frozen: Mapping[str, str] | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class PublishReport(Command):
    """Add `record` to `lane`'s reports (delivered to lanes whose turns list it in
    `inbox_from`), with the frozen artifacts it carries. Answered by `ReportPublished`."""

    lane: str
    report_id: str
    record: Mapping[str, Any]
    kind: str = "report"
    artifacts: tuple[Mapping[str, Any], ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class HoldLane(Command):
    """No new turn starts in `lane` until it is released. Answered by `LaneHeld`. `remedy`,
    in the flow's words, is what releases it (the log, the live view and `status` say it)."""

    lane: str
    reason: str
    remedy: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class ReleaseLane(Command):
    lane: str
    reason: str


@dataclasses.dataclass(frozen=True, slots=True)
class Emit(Command):
    """Journal a flow event for the views (and for the flow's own `evolve`)."""

    event: FlowEvent


@dataclasses.dataclass(frozen=True, slots=True)
class WaitUntil(Command):
    """Ask `decide` again at `at` (seconds since the epoch) even if nothing else happens."""

    at: float


@dataclasses.dataclass(frozen=True, slots=True)
class FinishRun(Command):
    """End the run: `finished` (exit 0), `held` (exit 3) or `failed` (exit 1). A `held` run
    that `resumes` is picked up again by the same command, without `--resume`: the flow
    looks again at what held it (an account's usage, say) and holds it again if it must."""

    status: Literal["finished", "held", "failed"]
    reason: str
    resumes: bool = False


INSTANT: tuple[type[Command], ...] = (PublishReport, HoldLane, ReleaseLane, Emit)


def settles(command: Command, event: Event) -> bool:
    """Whether `event` is what doing `command` journaled (so an outbox can let it go)."""
    from flamechase import events as ev

    if isinstance(command, PublishReport):
        return isinstance(event, ev.ReportPublished) and event.report_id == command.report_id
    if isinstance(command, HoldLane):
        return isinstance(event, ev.LaneHeld) and event.lane == command.lane
    if isinstance(command, ReleaseLane):
        return isinstance(event, ev.LaneReleased) and event.lane == command.lane
    if isinstance(command, Emit):
        return (
            type(event) is type(command.event)
            and dataclasses.replace(event, seq=0, at="") == command.event
        )
    return False
