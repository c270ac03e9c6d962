"""A flow's commands checked against its declarations and against what the run has done,
before the engine acts on any of them.

A mistake stops the run with one line naming the flow and the command (`FlowCommandError`),
rather than a traceback deep in the engine, a command silently ignored, or a run that repeats
a measurement forever: an unknown role, lane or place; `inbox_from`, `artifacts` or
`checkpoint` on a turn outside lanes; a second role on a lane's turn number; a turn asked for
again after it was valid, or a `Measure`/`Run`/`Freeze` key after it was answered (the answer
reached `evolve`, which did not record it); a `FinishRun` status that is not one; something
that is not a command at all. `Progress` counts `decide()` rounds in which nothing happened,
so a flow that spins is stopped (`FlowSpins`) after a bounded number of them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NoReturn

from flamechase import events as ev
from flamechase.engine.layout import RUN_KEY, SOURCE
from flamechase.errors import FlowCommandError, FlowSpins
from flamechase.flow import LaneDef
from flamechase.flow import commands as cm
from flamechase.flow.commands import ResultSpec
from flamechase.store.reader import Reader

__all__ = ["SPIN_ROUNDS", "Checks", "Progress", "check_declarations", "shown"]

# decide() rounds in a row with nothing happening (no event journaled, no job started or
# ended) before the flow is called spinning. A flow that waits asks for the time it needs
# (`WaitUntil`); a round without anything is then rare: one per wake-up.
SPIN_ROUNDS = 10_000
FINISH_STATUSES = ("finished", "held", "failed")
_LANE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
# What the engine keeps at the top of a run directory: no place may be made there.
RESERVED = frozenset({"run.db", "run.db-wal", "run.db-shm", "blobs", "flow-traceback.txt", RUN_KEY})

# A place's standing, as the engine's places and jobs say (see `Checks.check`).
Standing = Callable[[str], str]  # "made" | "making" | "dropped" | "unknown"


def shown(c: object) -> str:
    """A command as its author wrote it, short: `StartTurn(role='a', lane='lane-1', ...)`."""
    if not dataclasses.is_dataclass(c) or isinstance(c, type):
        return _short(c, 100)
    keys = {
        "StartTurn": ("role", "lane", "number", "place"),
        "Emit": ("event",),
    }.get(type(c).__name__)
    fields = [f.name for f in dataclasses.fields(c)]
    picked = [f for f in (keys or fields[:3]) if f in fields]
    args = ", ".join(f"{f}={_short(getattr(c, f))}" for f in picked)
    more = ", ..." if len(picked) < len(fields) else ""
    return f"{type(c).__name__}({args}{more})"


def _short(value: Any, width: int = 40) -> str:
    if isinstance(value, ev.Event):
        return type(value).__name__
    if isinstance(value, type):
        return f"the class {value.__name__}"
    try:
        text = repr(value)
    except Exception:  # a flow's object whose repr breaks: its type says enough
        text = f"<a {type(value).__name__}>"
    return text if len(text) <= width else text[: width - 3] + "..."


def check_declarations(flow: str, roles: object, lanes: Sequence[LaneDef]) -> None:
    """The flow's roles and lanes, before the run is made: FlowCommandError (one line) for a
    role that is not a name, a lane declared twice, a lane's role that roles() does not
    list, a lane name that cannot be a directory of its own."""

    def bad(why: str) -> NoReturn:
        raise FlowCommandError(f"flow {flow} declares {why} (a flow bug)")

    if not isinstance(roles, list | tuple) or not all(isinstance(r, str) and r for r in roles):
        bad(f"roles() = {_short(roles)}: a list of role names (non-empty strings) is expected")
    names: set[str] = set()
    for lane in lanes:
        name = lane.name
        if not isinstance(name, str) or not _LANE_NAME.fullmatch(name):
            bad(f"a lane named {name!r}: a lane's name is letters, digits, '-', '_' or '.'")
        if name in names:
            bad(f"lane {name!r} twice in lanes()")
        names.add(name)
        unknown = [r for r in lane.roles if r not in roles]
        if unknown:
            bad(f"lane {name!r} with role {unknown[0]!r}, which roles() does not list")
        if not isinstance(lane.place, str) or not lane.place:
            bad(f"lane {name!r} in place {lane.place!r}: a place's name is expected")


class Checks:
    """What a flow declared and what its run did, and the commands checked against both."""

    def __init__(self, flow: str, roles: Iterable[str], lanes: Iterable[str]) -> None:
        self.flow = flow
        self.roles = frozenset(roles)
        self.lanes = frozenset(lanes)
        self.answered: dict[str, str] = {}  # Measure/Run/Freeze key -> what answered it
        self.turn_role: dict[tuple[str, int], str] = {}  # (lane, number) -> its role
        self.valid: set[tuple[str, int]] = set()  # (slot, number) of valid turns
        self.dropped: set[str] = set()  # places dropped (and not made again since)
        # A stored run's turns, asked one (slot, number) at a time rather than loaded whole,
        # so resuming a long run costs the same as a short one: (first role, was it valid).
        self.stored: Callable[[str, int], tuple[str | None, bool]] | None = None

    @classmethod
    def of_run(
        cls, flow: str, roles: Iterable[str], lanes: Iterable[str], reader: Reader
    ) -> Checks:
        """The checks of a run opened with `reader` (what a stored run did included)."""
        checks = cls(flow, roles, lanes)
        checks.load(
            [m["key"] for m in reader.measurements()],
            reader.inflight(),
            [str(e["payload"].get("place")) for e in reader.events_of("place_dropped")],
        )
        checks.stored = reader.turn_of
        return checks

    def load(
        self,
        measurements: Iterable[str],
        turns: Iterable[dict[str, Any]],
        dropped: Iterable[str] = (),
    ) -> None:
        """What a stored run did: its answered keys, its turns (rows of `turns`, `inflight`),
        the places it dropped."""
        self.dropped.update(dropped)
        for key in measurements:
            self.answered.setdefault(key, "its answer")
        for t in turns:
            slot, number = str(t["lane"]), int(t["number"])
            if not slot.startswith("@"):
                self.turn_role.setdefault((slot, number), str(t["role"]))
            if t.get("status") == "valid":
                self.valid.add((slot, number))

    def see(self, event: ev.Event) -> None:
        """A committed event: what it answered."""
        if isinstance(event, ev.Measured | ev.Ran | ev.Frozen):
            self.answered[event.key] = f"{type(event).__name__}, seq {event.seq}"
        elif isinstance(event, ev.TurnStarted) and event.lane is not None:
            self.turn_role.setdefault((event.lane, event.turn), event.actor or "")
        elif isinstance(event, ev.TurnValid):
            slot = event.lane if event.lane is not None else f"@{event.actor}"
            self.valid.add((slot, event.turn))
        elif isinstance(event, ev.PlaceDropped):
            self.dropped.add(event.place)
        elif isinstance(event, ev.PlaceMade):
            self.dropped.discard(event.place)

    # ---- checking ----------------------------------------------------------------------------

    def check(self, commands: Sequence[Any], standing: Standing) -> None:
        """FlowCommandError (one line) for the first command that is wrong."""
        asked = {c.name for c in commands if isinstance(c, cm.MakePlace)}

        def place(c: object, name: object, what: str = "place") -> None:
            if not isinstance(name, str) or not name:
                self._bad(c, f"its {what} {name!r} is not a place name")
            if name == SOURCE or name in asked:
                return
            state = standing(name)
            if state in ("made", "making"):
                return
            if state == "dropped":
                self._bad(c, f"its {what} {name!r} was dropped (DropPlace); make it again first")
            self._bad(
                c,
                f"its {what} {name!r} was never made: return MakePlace({name!r}) and use the "
                "place once PlaceMade arrives",
            )

        for c in commands:
            check = next((_CHECKS[t] for t in type(c).__mro__ if t in _CHECKS), None)
            if check is None:
                self._bad(c, "it is not one of the commands of flamechase.flow")
            check(self, c, place)

    def _bad(self, c: object, why: str) -> NoReturn:
        raise FlowCommandError(f"flow {self.flow} asked for {shown(c)}: {why} (a flow bug)")

    def _lane(self, c: object, lane: object, what: str = "lane") -> None:
        if lane is None:
            return
        if lane not in self.lanes:
            known = ", ".join(sorted(self.lanes)) or "none: lanes() declares none"
            self._bad(c, f"its {what} {lane!r} is not one of the run's lanes ({known})")

    def _answered(self, c: object, key: object) -> None:
        if not isinstance(key, str) or not key:
            self._bad(c, f"its key {key!r} is not a non-empty string")
        done = self.answered.get(key)
        if done is not None:
            self._bad(
                c,
                f"key {key!r} was answered already ({done}); evolve() must record the answer "
                "so that decide() stops asking (use a new key to ask again)",
            )

    def _turn(self, c: cm.StartTurn, place: Callable[..., None]) -> None:
        if not isinstance(c.role, str) or c.role not in self.roles:
            self._bad(c, f"role {c.role!r} is not one of roles(): {', '.join(sorted(self.roles))}")
        if isinstance(c.number, bool) or not isinstance(c.number, int):
            self._bad(c, f"its number {c.number!r} is not an int")
        if not isinstance(c.result, ResultSpec):
            self._bad(c, f"its result is {_short(c.result)}, not ResultSpec(YourModel)")
        self._lane(c, c.lane)
        if c.lane is None:
            for option in ("inbox_from", "artifacts", "checkpoint"):
                if getattr(c, option):
                    self._bad(
                        c,
                        f"{option} is for lane turns, and this turn has no lane (lane=None): "
                        "give it a lane, or drop the option",
                    )
        _names(self, c, c.inbox_from, "inbox_from")  # lanes, or any source a flow publishes to
        _names(self, c, c.reads, "reads")
        _env(self, c, c.env)
        place(c, c.place)
        for other in c.reads:
            place(c, other, "reads place")
        slot = c.lane if c.lane is not None else f"@{c.role}"
        stored = self.stored(slot, c.number) if self.stored else (None, False)
        if c.lane is not None:
            had = self.turn_role.get((c.lane, c.number), stored[0])
            if had is not None and had != c.role:
                self._bad(
                    c,
                    f"turn {c.number} of {c.lane} is {had}'s; one role per turn number "
                    "in a lane (number the next turn anew)",
                )
        if (slot, c.number) in self.valid or stored[1]:
            self._bad(
                c,
                f"turn {c.number} of {c.lane or c.role} was valid already; evolve() must "
                "record it so that decide() asks for the next turn (a new number)",
            )

    def _finish(self, c: cm.FinishRun) -> None:
        if c.status not in FINISH_STATUSES:
            self._bad(c, f"status {c.status!r} is not one of {', '.join(FINISH_STATUSES)}")
        if not isinstance(c.reason, str):
            self._bad(c, f"its reason {c.reason!r} is not a str")

    def _emit(self, c: cm.Emit) -> None:
        e = c.event
        if not isinstance(e, ev.FlowEvent):
            self._bad(c, f"its event is {_short(e)}, not an instance of a FlowEvent subclass")
        if ev.REGISTRY.get(e.kind) is not type(e):
            self._bad(
                c,
                f"its event kind {e.kind!r} is not registered: decorate "
                f"{type(e).__name__} with @events.register",
            )
        _json(self, c, e.payload(), "its event")

    def _publish(self, c: cm.PublishReport) -> None:
        if not isinstance(c.lane, str) or not c.lane:  # a lane, or another source's name
            self._bad(c, f"its source {c.lane!r} is not a name")
        if not isinstance(c.report_id, str) or not c.report_id:
            self._bad(c, f"its report_id {c.report_id!r} is not a non-empty string")
        _json(self, c, c.record, "its record")

    def _wait(self, c: cm.WaitUntil) -> None:
        at = c.at
        if isinstance(at, bool) or not isinstance(at, int | float) or not math.isfinite(at):
            self._bad(c, f"its time {at!r} is not a number of seconds since the epoch")


def _names(checks: Checks, c: object, value: object, what: str) -> None:
    """A tuple of names: `("lane-1",)`, not `"lane-1"` (whose letters would be the names)."""
    if isinstance(value, str) or not isinstance(value, tuple | list):
        checks._bad(c, f"its {what} is {value!r}, not a tuple of names")
    for name in value:
        if not isinstance(name, str) or not name:
            checks._bad(c, f"its {what} holds {name!r}, not a name")


def _env(checks: Checks, c: object, env: object) -> None:
    if not isinstance(env, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        checks._bad(c, f"its env is {_short(env)}, not a mapping of strings to strings")


def _timeout(checks: Checks, c: object, timeout: object) -> None:
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout < math.inf
    ):
        checks._bad(c, f"its timeout {timeout!r} is not a positive number of seconds")


def _json(checks: Checks, c: object, value: Any, what: str) -> None:
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        checks._bad(c, f"{what} is not JSON ({exc})")


def _measure(checks: Checks, c: cm.Measure | cm.Run, place: Callable[..., None]) -> None:
    checks._answered(c, c.key)
    checks._lane(c, c.lane)
    _timeout(checks, c, c.timeout)
    _names(checks, c, c.reads, "reads")
    if isinstance(c, cm.Run):
        if not isinstance(c.argv, tuple | list) or not c.argv:
            checks._bad(c, f"its argv is {_short(c.argv)}, not a non-empty tuple of strings")
        if not all(isinstance(a, str) for a in c.argv):
            checks._bad(c, "its argv holds what is not a string")
        _env(checks, c, c.env)
    else:
        if not isinstance(c.command, str) or not c.command.strip():
            checks._bad(c, f"its command {c.command!r} is not a shell command")
        try:
            re.compile(c.pattern)
        except (re.error, TypeError) as exc:
            checks._bad(c, f"its pattern {c.pattern!r} is not a regular expression ({exc})")
    place(c, c.place)
    for other in c.reads:
        place(c, other, "reads place")


def _freeze(checks: Checks, c: cm.Freeze, place: Callable[..., None]) -> None:
    checks._answered(c, c.key)
    place(c, c.place)


def _make(checks: Checks, c: cm.MakePlace, place: Callable[..., None]) -> None:
    name = c.name
    parts = name.split("/") if isinstance(name, str) else [""]
    if name == SOURCE or any(p in ("", ".", "..") for p in parts) or parts[0] in RESERVED:
        checks._bad(
            c,
            f"{name!r} is not a name a flow may give a place: a relative name like "
            "lanes/lane-2 or review/1 (not source, and not one of the engine's own: "
            + ", ".join(sorted(RESERVED))
            + ")",
        )
    if c.how not in ("snapshot", "empty", "overlay"):
        checks._bad(c, f"how={c.how!r} is not snapshot, empty or overlay")
    for what, other in (("base", c.base), ("over", c.over)):
        if other is not None:
            place(c, other, what)
    if c.restore is not None and c.restore not in checks.answered:
        checks._bad(c, f"nothing was frozen under {c.restore!r}: Freeze it first")


def _nothing(checks: Checks, c: object, place: Callable[..., None]) -> None:
    return None


_CHECKS: dict[type, Callable[..., None]] = {
    cm.WaitUntil: lambda ch, c, place: ch._wait(c),
    cm.DropPlace: _nothing,
    cm.StartTurn: lambda ch, c, place: ch._turn(c, place),
    cm.Measure: _measure,
    cm.Run: _measure,
    cm.Freeze: _freeze,
    cm.MakePlace: _make,
    cm.FinishRun: lambda ch, c, place: ch._finish(c),
    cm.Emit: lambda ch, c, place: ch._emit(c),
    cm.PublishReport: lambda ch, c, place: ch._publish(c),
    cm.HoldLane: lambda ch, c, place: ch._lane(c, c.lane),
    cm.ReleaseLane: lambda ch, c, place: ch._lane(c, c.lane),
}


class Progress:
    """`decide()` rounds in a row in which nothing happened; FlowSpins past `limit`."""

    def __init__(self, flow: str, limit: int = SPIN_ROUNDS) -> None:
        self.flow = flow
        self.limit = limit
        self.idle = 0
        self._mark: tuple[int, int] = (-1, -1)

    def round(self, mark: tuple[int, int], commands: Sequence[Any], now: float) -> None:
        """One round, with `mark` = (last journal seq, jobs started and ended so far)."""
        if mark != self._mark:
            self._mark, self.idle = mark, 0
            return
        self.idle += 1
        if self.idle < self.limit:
            return
        late = [c for c in commands if isinstance(c, cm.WaitUntil) and c.at <= now]
        hint = (
            f"; WaitUntil(at={late[0].at!r}) has passed: `at` is seconds since the epoch "
            "(now + seconds), and a time in the past asks again at once"
            if late
            else ""
        )
        asked = ", ".join(shown(c) for c in commands[:3]) or "nothing"
        raise FlowSpins(
            f"flow {self.flow} spins: decide() was asked {self.idle} times in a row and "
            f"nothing happened (no event, no job started or ended); it asked for {asked}"
            f"{hint} (a flow bug)"
        )
