"""Flows with one mistake each, as a new author could write them from docs/writing-a-flow.md.

`flow_file(tmp, mistake)` writes the flow; every mistake is a relay of an author and a
reviewer in lane-1 that would finish after two valid turns, but for the lines that differ.
`MISTAKES` says what each does wrong and the words its one-line error must hold.
"""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

HEADER = """\
from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from flamechase.flow import (
    Command, DropPlace, Emit, Event, FinishRun, Flow, FlowEvent, FlowParams, Freeze,
    LaneDef, MakePlace, Measure, ResultSpec, Run, RunSetup, StartTurn, TurnContext,
    WaitUntil, events,
)


class State(BaseModel):
    model_config = ConfigDict(frozen=True)
    done: int = 0
    places: tuple[str, ...] = ()
    answers: tuple[str, ...] = ()


class Verdict(BaseModel):
    approve: bool


def arrived(where: str) -> None:
    # Say (in $FLOW_MARK) that the flow's code got here: the tests wait for it.
    mark = os.environ.get("FLOW_MARK")
    if mark:
        Path(mark).write_text(where)
"""

BODY = """

class Mistake(Flow[State]):
    name = "mistake"
    summary = "a relay with a mistake in it"
    State = State
    Params = globals().get("Mistake_Params", FlowParams)

    def roles(self, params: FlowParams) -> list[str]:
{roles}

    def lanes(self, params: FlowParams) -> list[LaneDef]:
{lanes}

    def start(self, setup: RunSetup) -> State:
{start}

    def evolve(self, state: State, event: Event) -> State:
{evolve}

    def decide(self, state: State, now: float) -> Sequence[Command]:
{decide}

    def prompt(self, state: State, ctx: TurnContext) -> str:
{prompt}

    def describe(self, state: State) -> dict[str, Any]:
{describe}


FLOW = Mistake()
"""

DEFAULTS = {
    "roles": 'return ["author", "reviewer"]',
    "lanes": 'return [LaneDef("lane-1", ("author", "reviewer"))]',
    "start": "return State()",
    "evolve": """
        if isinstance(event, events.TurnValid):
            return state.model_copy(update={"done": state.done + 1})
        if isinstance(event, events.PlaceMade):
            return state.model_copy(update={"places": (*state.places, event.place)})
        if isinstance(event, events.Measured | events.Ran | events.Frozen):
            return state.model_copy(update={"answers": (*state.answers, event.key)})
        return state
    """,
    "decide": """
        if state.done >= 2:
            return [FinishRun("finished", "both turns done")]
        role = "author" if state.done == 0 else "reviewer"
        return [StartTurn(role=role, lane="lane-1", number=state.done + 1)]
    """,
    "prompt": 'return f"Do turn {ctx.turn.number}; write the {ctx.turn.result.noun} to '
    '{ctx.report_path}"',
    "describe": 'return {"done": state.done}',
}


@dataclasses.dataclass(frozen=True)
class Mistake:
    """A flow that differs from the relay in `parts` (and `extra` lines after the models).
    `words`: what its one-line error says. `when`: `run` (the run is made, then fails),
    `prepare` (refused before any run exists, exit 2), `load` (the flow does not import,
    exit 2)."""

    name: str
    parts: dict[str, str]
    words: tuple[str, ...]
    extra: str = ""
    when: str = "run"
    traceback: bool = False  # the flow's traceback is kept in the run


def source(m: Mistake) -> str:
    parts = {k: textwrap.indent(textwrap.dedent(v).strip(), " " * 8) for k, v in DEFAULTS.items()}
    parts.update(
        {k: textwrap.indent(textwrap.dedent(v).strip(), " " * 8) for k, v in m.parts.items()}
    )
    return HEADER + textwrap.dedent(m.extra) + BODY.format(**parts)


def flow_file(tmp: Path, m: Mistake) -> Path:
    path = tmp / f"{m.name}.py"
    path.write_text(source(m))
    return path


def _decide(text: str) -> dict[str, str]:
    return {"decide": text}


MISTAKES = [
    Mistake(
        "unknown_role",
        _decide('return [StartTurn(role="writer", lane="lane-1", number=1)]'),
        ("flow mistake", "StartTurn(role='writer'", "not one of roles(): author, reviewer"),
    ),
    Mistake(
        "undeclared_lane",
        _decide('return [StartTurn(role="author", lane="lane-2", number=1)]'),
        ("lane='lane-2'", "is not one of the run's lanes (lane-1)"),
    ),
    Mistake(
        "place_never_made",
        _decide('return [StartTurn(role="author", lane=None, number=1, place="draft")]'),
        ("place='draft'", "'draft' was never made", "MakePlace('draft')"),
    ),
    Mistake(
        "place_used_after_drop",
        _decide(
            """
            if "draft" not in state.places:
                return [MakePlace("draft")]
            if state.done == 0:
                return [StartTurn(role="author", lane=None, number=1, place="draft")]
            if state.done == 1 and len(state.places) == 1:
                return [DropPlace("draft"), StartTurn(role="reviewer", lane=None, number=1,
                                                      place="draft")]
            return [StartTurn(role="reviewer", lane=None, number=1, place="draft")]
            """
        )
        | {
            "evolve": """
            if isinstance(event, events.TurnValid):
                return state.model_copy(update={"done": state.done + 1})
            if isinstance(event, events.PlaceMade | events.PlaceDropped):
                return state.model_copy(update={"places": (*state.places, event.place)})
            return state
            """
        },
        ("StartTurn(role='reviewer'", "'draft' was dropped"),
    ),
    Mistake(
        "inbox_outside_lanes",
        _decide('return [StartTurn(role="author", lane=None, number=1, inbox_from=("lane-1",))]'),
        ("inbox_from is for lane turns", "lane=None"),
    ),
    Mistake(
        "artifacts_outside_lanes",
        _decide('return [StartTurn(role="author", lane=None, number=1, artifacts=True)]'),
        ("artifacts is for lane turns",),
    ),
    Mistake(
        "checkpoint_outside_lanes",
        _decide('return [StartTurn(role="author", lane=None, number=1, checkpoint=True)]'),
        ("checkpoint is for lane turns",),
    ),
    Mistake(
        "two_roles_on_one_turn_number",
        _decide(
            """
            if state.done >= 2:
                return [FinishRun("finished", "both turns done")]
            role = "author" if state.done == 0 else "reviewer"
            return [StartTurn(role=role, lane="lane-1", number=1)]
            """
        ),
        ("StartTurn(role='reviewer', lane='lane-1', number=1", "turn 1 of lane-1 is author's"),
    ),
    Mistake(
        "turn_asked_again_after_it_was_valid",
        _decide(
            """
            if state.done >= 2:
                return [FinishRun("finished", "both turns done")]
            return [StartTurn(role="author", lane="lane-1", number=1)]
            """
        )
        | {"evolve": "return state"},
        ("turn 1 of lane-1 was valid already", "evolve() must record it"),
    ),
    Mistake(
        "finish_status_done",
        _decide('return [FinishRun("done", "all done")]'),
        ("FinishRun(status='done'", "not one of finished, held, failed"),
    ),
    Mistake(
        "measure_never_recorded",
        _decide(
            """
            if "score" in state.answers:
                return [FinishRun("finished", "measured")]
            return [Measure(key="score", place="source", command="echo 1", pattern=r"(\\d+)")]
            """
        )
        | {"evolve": "return state"},
        ("Measure(key='score'", "key 'score' was answered already (Measured", "evolve()"),
    ),
    Mistake(
        "run_never_recorded",
        _decide(
            """
            if "build" in state.answers:
                return [FinishRun("finished", "built")]
            return [Run(key="build", place="source", argv=(sys.executable, "-c", "print(1)"))]
            """
        )
        | {"evolve": "return state"},
        ("Run(key='build'", "key 'build' was answered already (Ran"),
    ),
    Mistake(
        "freeze_never_recorded",
        _decide(
            """
            if "kept" in state.answers:
                return [FinishRun("finished", "frozen")]
            return [Freeze(key="kept", place="source", paths=("*.md",))]
            """
        )
        | {"evolve": "return state"},
        ("Freeze(key='kept'", "key 'kept' was answered already (Frozen"),
    ),
    Mistake(
        "result_model_is_not_a_model",
        _decide('return [StartTurn(role="reviewer", lane="lane-1", number=1, result=VERDICT)]'),
        ("failed to import", "ResultSpec takes a pydantic model class", "not <class 'dict'>"),
        extra="\nVERDICT = ResultSpec(dict)\n",
        when="load",
    ),
    Mistake(
        "result_given_as_the_model_itself",
        _decide('return [StartTurn(role="reviewer", lane="lane-1", number=1, result=Verdict)]'),
        ("its result is", "Verdict", "not ResultSpec(YourModel)"),
    ),
    Mistake(
        "emit_unregistered_event",
        _decide("return [Emit(Said(words='hello'))]"),
        ("Emit(event=Said)", "'said' is not registered", "@events.register"),
        extra="""

@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Said(FlowEvent):
    kind: ClassVar[str] = "said"
    words: str = ""
""",
    ),
    Mistake(
        "decide_forgets_to_return",
        _decide('commands = [StartTurn(role="author", lane="lane-1", number=1)]'),
        ("decide() returned None, not a list of commands",),
    ),
    Mistake(
        "decide_returns_one_command",
        _decide('return StartTurn(role="author", lane="lane-1", number=1)'),
        ("decide() returned StartTurn(", "not a list of commands"),
    ),
    Mistake(
        "decide_returns_a_name",
        _decide('return ["StartTurn"]'),
        ("asked for 'StartTurn'", "not one of the commands of flamechase.flow"),
    ),
    Mistake(
        "evolve_forgets_to_return",
        {"evolve": "state.model_copy(update={'done': state.done + 1})"},
        ("evolve() of run_created returned None, not a State",),
    ),
    Mistake(
        "decide_raises",
        _decide("return [StartTurn(role='author', lane='lane-1', number=1 // state.done)]"),
        ("decide() raised ZeroDivisionError: integer division or modulo by zero", "(a flow bug)"),
        traceback=True,
    ),
    Mistake(
        "evolve_raises",
        {"evolve": "return state.model_copy(update={'done': event.result['done']})"},
        ("evolve() of run_created raised AttributeError",),
        traceback=True,
    ),
    Mistake(
        "prompt_raises",
        {"prompt": "return ctx.inbox[0]['summary']"},
        ("prompt() raised IndexError: list index out of range",),
        traceback=True,
    ),
    Mistake(
        "describe_raises",
        {"describe": "return {'first': state.answers[0]}"},
        ("describe() raised IndexError",),
        traceback=True,
    ),
    Mistake(
        "start_raises",
        {"start": "return State(done='none yet')"},
        ("start() raised ValidationError",),
        traceback=True,
    ),
    Mistake(
        "decide_exits",
        _decide("sys.exit(0)"),
        ("decide() called sys.exit(0)", "may not end the process"),
        traceback=True,
    ),
    Mistake(
        "evolve_raises_keyboard_interrupt",
        {"evolve": "raise KeyboardInterrupt"},
        ("evolve() of run_created raised KeyboardInterrupt",),
        traceback=True,
    ),
    Mistake(
        "result_validator_raises",
        _decide(
            """
            if state.done >= 1:
                return [FinishRun("finished", "reviewed")]
            return [StartTurn(role="reviewer", lane="lane-1", number=1,
                              result=ResultSpec(Picky, noun="verdict"))]
            """
        ),
        ("result model Picky raised TypeError", "while it checked a verdict", "(a flow bug)"),
        extra="""

class Picky(BaseModel):
    approve: bool
    comments: list[str] = []

    @field_validator("comments")
    @classmethod
    def short(cls, comments: list[str]) -> list[str]:
        return [c[:"80"] for c in comments]
""",
        traceback=True,
    ),
    Mistake(
        "spins_on_a_wait_in_the_past",
        _decide("return [WaitUntil(at=60)]"),
        ("flow mistake spins", "WaitUntil(at=60) has passed", "seconds since the epoch"),
    ),
    Mistake(
        "lane_role_not_declared",
        {"lanes": 'return [LaneDef("lane-1", ("author", "critic"))]'},
        ("declares lane 'lane-1' with role 'critic', which roles() does not list",),
        when="prepare",
    ),
    Mistake(
        "lane_declared_twice",
        {"lanes": 'return [LaneDef("lane-1", ("author",)), LaneDef("lane-1", ("reviewer",))]'},
        ("declares lane 'lane-1' twice",),
        when="prepare",
    ),
    Mistake(
        "roles_raise",
        {"roles": 'return ["author", "reviewer"][params.lanes]'},
        ("roles() raised AttributeError",),
        when="prepare",
        traceback=True,
    ),
    Mistake(
        "a_command_of_its_own",
        _decide("return [Nudge()]"),
        ("asked for Nudge()", "not one of the commands of flamechase.flow"),
        extra="""

@dataclasses.dataclass(frozen=True)
class Nudge(Command):
    pass
""",
    ),
    Mistake(
        "reads_given_as_a_string",
        _decide(
            """
            if "draft" not in state.places:
                return [MakePlace("draft")]
            return [StartTurn(role="author", lane="lane-1", number=1, reads="draft")]
            """
        ),
        ("its reads is 'draft', not a tuple of names",),
    ),
    Mistake(
        "measure_pattern_is_not_a_regex",
        _decide('return [Measure(key="s", place="source", command="echo 1", pattern="(")]'),
        ("its pattern '(' is not a regular expression",),
    ),
    Mistake(
        "run_without_a_program",
        _decide('return [Run(key="gate", place="source", argv=())]'),
        ("its argv is (), not a non-empty tuple of strings",),
    ),
    Mistake(
        "wait_until_nothing",
        _decide("return [WaitUntil(at=None)]"),
        ("its time None is not a number of seconds since the epoch",),
    ),
    Mistake(
        "place_named_out_of_the_run",
        _decide('return [MakePlace("../elsewhere")]'),
        ("'../elsewhere' is not a name a flow may give a place",),
    ),
    Mistake(
        "describe_lanes_is_a_list",
        {"describe": 'return {"lanes": ["lane-1"]}'},
        ("describe() returned {'lanes': ['lane-1']}, not a dict of JSON values",),
    ),
    Mistake(
        "params_validator_raises",
        {},
        ("Params raised KeyError",),
        extra="""

class Strict(FlowParams):
    rounds: int = 2

    @model_validator(mode="after")
    def known(self) -> Strict:
        return {1: self}[self.rounds]


Mistake_Params = Strict
""",
        when="prepare",
        traceback=True,
    ),
    Mistake(
        "exits_at_import",
        {},
        ("failed to import", "it called sys.exit(0)", "may not end the process"),
        extra="\nsys.exit(0)\n",
        when="load",
    ),
]

BY_NAME = {m.name: m for m in MISTAKES}


def hanging(how: str = "while True:\n    pass") -> dict[str, Mistake]:
    """Flows whose code never returns somewhere (`how`: a busy loop, or a sleep that leaves
    the interpreter to others, for flows run in the test's own process)."""
    hang = textwrap.indent(how, " " * 4)
    return {
        m.name: m
        for m in [
            Mistake(
                "decide_never_returns",
                _decide('arrived("decide")\nif True:\n' + hang),
                ("decide() did not return within",),
                when="hang",
            ),
            Mistake(
                "evolve_never_returns_on_a_turn",
                {
                    "evolve": 'if isinstance(event, events.TurnValid):\n    arrived("evolve")\n'
                    + hang
                    + "\nreturn state"
                },
                ("evolve() of turn_valid did not return within",),
                when="hang",
            ),
            Mistake(
                "decide_never_returns_beside_a_turn",
                {
                    "lanes": 'return [LaneDef("lane-1", ("author",)),'
                    ' LaneDef("lane-2", ("reviewer",))]',
                    "decide": 'if state.done:\n    arrived("decide")\n'
                    + hang
                    + '\nreturn [StartTurn(role="author", lane="lane-1", number=1),'
                    ' StartTurn(role="reviewer", lane="lane-2", number=1)]',
                },
                ("decide() did not return within",),
                when="hang",
            ),
        ]
    }


# A relay whose author writes a report the validator above cannot check (a comment), and a
# reviewer whose verdict says so: what the scripted and real agents answer.
REPORT = {"status": "progress", "summary": "did the turn"}
VERDICT = {"approve": True, "comments": ["fine"]}
