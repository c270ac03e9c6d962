"""The flow's own code, run where the engine can still answer.

Every call the engine makes into a flow during a run (`start`, `evolve`, `decide`, `prompt`,
`describe`, its state's JSON, its result models) runs in one worker thread while the engine's
thread waits for it. So:

- whatever the flow's code raises, `SystemExit` and `KeyboardInterrupt` included, reaches the
  engine as a `FlowCodeError` naming the flow and the call, with the flow's own traceback; so
  does a value its contract forbids (an `evolve` that returns None);
- a call that never returns (a `decide()` that loops) cannot make the run deaf: a signal, or
  `budget.duration` running out, gives the call `grace` seconds and then abandons it, with
  where it was as its traceback. The worker is a daemon thread and is left where it is; every
  later call fails at once, so the engine records how the run ended without the flow.

The engine's thread waits on a pipe the worker writes to when a call ends, and on the
signal wake-up descriptor (`hear_signals`), so the wait ends on either without polling,
whichever thread the kernel handed the signal to (the worker blocks SIGINT and SIGTERM). A
call that holds the interpreter inside one C function (a runaway regular expression) is
beyond any in-process answer: only SIGKILL ends it, and the run resumes as after a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import re
import select
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

from pydantic import BaseModel

from flamechase.errors import FlowCodeError
from flamechase.events import Event
from flamechase.flow import Flow, FlowParams, LaneDef, RunSetup, Skill, TurnContext
from flamechase.flow.commands import ResultModelBroke

__all__ = ["FlowCode", "hear_signals"]

T = TypeVar("T")
STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})
STOPS = frozenset(int(sig) for sig in STOP_SIGNALS)  # their bytes on the wake-up descriptor
_HERE = os.path.normcase(os.path.abspath(__file__))
# How CLIs name a skill (Claude Code, Agent Skills): lowercase words joined by hyphens.
_SKILL_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


class FlowCode:
    """One flow's code, called from the engine (see the module docstring)."""

    def __init__(self, flow: Flow[Any]) -> None:
        self.flow = flow
        self.name = flow.name
        self.broken: FlowCodeError | None = None
        self.abandoned = False  # a call never returned: the worker is still in it
        # Seconds a call under way may still take once the run must stop.
        self.grace = 5.0
        # Seconds left until the run must stop (budget.duration), or None: set by the engine.
        self.deadline: Callable[[], float | None] = lambda: None
        self.signalled = False
        # The signal wake-up descriptor (`hear_signals`): readable when a signal arrived,
        # whichever thread the kernel gave it to.
        self.wake_fd: int | None = None
        self._r, self._w = os.pipe()
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)
        self._todo: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...]]] = (
            queue.SimpleQueue()
        )
        self._outcome: tuple[bool, Any] = (True, None)
        self._thread: threading.Thread | None = None
        self._busy = False  # a call was handed to the worker and its end not yet read
        self._closed = False

    def close(self) -> None:
        """Let the worker go, and close the pipe unless the worker is still in a call: it
        writes to the pipe when the call ends, and a closed descriptor's number may by then
        be another file's (two descriptors are left to the process's end instead)."""
        if self._thread is not None:
            self._todo.put((_quit, ()))
        if self._busy or self._closed:
            return
        self._closed = True
        for fd in (self._r, self._w):
            with contextlib.suppress(OSError):
                os.close(fd)

    # ---- calling ----------------------------------------------------------------------------

    def poke(self) -> None:
        """The run must stop (called from a signal handler): a call under way gets `grace`
        seconds. Writes one byte; no lock is taken, so it is safe at any instant."""
        self.signalled = True
        if self._closed:  # its descriptor's number may be another file's by now
            return
        with contextlib.suppress(OSError):  # a full pipe already holds a wake-up
            os.write(self._w, b"s")

    def call(
        self,
        what: str,
        fn: Callable[..., T],
        *args: Any,
        passthrough: tuple[type[BaseException], ...] = (),
    ) -> T:
        """`fn(*args)` in the worker; its value, or FlowCodeError naming `what` (an
        exception of a `passthrough` type is raised as it is: the engine's own refusals)."""
        if self.broken is not None:
            raise FlowCodeError(str(self.broken), self.broken.traceback, self.broken.status)
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._work, name=f"flow {self.name}", daemon=True
            )
            self._thread.start()
        self._busy = True
        self._todo.put((fn, args))
        try:
            ok, value = self._wait(what)
        except FlowCodeError:
            raise
        except BaseException:  # the engine's own thread interrupted (Ctrl-C before the run)
            self.broken = FlowCodeError(f"flow {self.name}'s {what} was interrupted")
            raise
        if ok:
            return value  # type: ignore[no-any-return]
        if passthrough and isinstance(value, passthrough):
            raise value
        self.broken = _crashed(self.name, what, value)
        raise self.broken

    def _work(self) -> None:
        # Signals go to the engine's thread (or any other), never to the flow's code.
        with contextlib.suppress(AttributeError, ValueError, OSError):
            signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        while True:
            fn, args = self._todo.get()
            if fn is _quit:
                return
            try:
                self._outcome = (True, fn(*args))
            except BaseException as exc:  # SystemExit, KeyboardInterrupt: a flow error too
                self._outcome = (False, exc)
            try:
                os.write(self._w, b"d")
            except OSError:  # closed: the engine has gone
                return

    def _wait(self, what: str) -> tuple[bool, Any]:
        """The call's outcome once the worker says so; FlowCodeError if the run must stop
        and the call takes longer than `grace`."""
        start = time.monotonic()
        stop_at, why = (start + self.grace, "a stop (signal)") if self.signalled else (None, "")
        left = self.deadline()
        due = None if left is None else start + max(0.0, left)
        while True:
            now = time.monotonic()
            if stop_at is None and due is not None and now >= due:
                stop_at, why = now + self.grace, "budget.duration running out"
            if stop_at is not None and now >= stop_at:
                raise self._abandon(what, why)
            ends = [t for t in (stop_at if stop_at is not None else due,) if t is not None]
            timeout = max(0.0, min(ends) - now) if ends else None
            woken = [] if self.wake_fd is None else [self.wake_fd]
            ready, _, _ = select.select([self._r, *woken], [], [], timeout)
            if not ready:
                continue
            data = _drained(self._r) if self._r in ready else b""
            if b"d" in data:
                self._busy = False
                return self._outcome
            # A signal handled on another thread reaches this thread only through the wake-up
            # descriptor (one byte per signal, its number): the handler's "s" may never come.
            stopped = b"s" in data or bool(
                woken and self.wake_fd in ready and STOPS & set(_drained(woken[0]))
            )
            if stopped and stop_at is None:
                stop_at, why = time.monotonic() + self.grace, "a stop (signal)"

    def _abandon(self, what: str, why: str) -> FlowCodeError:
        frame = sys._current_frames().get(self._thread.ident or 0) if self._thread else None
        where = "".join(_flow_frames(traceback.format_stack(frame))) if frame else ""
        self.abandoned = True
        self.broken = FlowCodeError(
            f"flow {self.name}'s {what} did not return within {self.grace:g}s of {why} "
            "(a flow bug: it loops or waits forever); the run ended without it",
            "Where the flow's code was when it was abandoned:\n" + where,
            "stopped" if why.startswith("a stop") else "failed",
        )
        return self.broken

    # ---- the flow's calls, with what their contract asks of their values ------------------

    def start(self, setup: RunSetup) -> BaseModel:
        return self._state("start()", self.call("start()", self.flow.start, setup))

    def lanes(self, params: FlowParams) -> list[LaneDef]:
        lanes = self.call("lanes()", lambda: list(self.flow.lanes(params)))
        for lane in lanes:
            if not isinstance(lane, LaneDef):
                raise self._contract("lanes()", lane, "a LaneDef")
        return lanes

    def load_state(self, text: str) -> BaseModel:
        return self._state("load_state()", self.call("load_state()", self.flow.load_state, text))

    def evolve(self, state: BaseModel, event: Event) -> BaseModel:
        what = f"evolve() of {event.kind}"
        return self._state(what, self.call(what, self.flow.evolve, state, event))

    def decide(self, state: BaseModel, now: float) -> list[Any]:
        """What `decide` returned, as a list (a generator runs in the worker too); each
        element is checked by the engine (engine/checks.py)."""
        out = self.call("decide()", lambda: _listed(self.flow.decide(state, now)))
        if isinstance(out, _Bad):
            raise self._contract("decide()", out.value, "a list of commands")
        return out

    def prompt(self, state: BaseModel, ctx: TurnContext) -> str:
        return self._text("prompt()", self.call("prompt()", self.flow.prompt, state, ctx))

    def repair_prompt(self, state: BaseModel, ctx: TurnContext, reason: str) -> str:
        text = self.call("repair_prompt()", self.flow.repair_prompt, state, ctx, reason)
        return self._text("repair_prompt()", text)

    def skill(self, role: str) -> Skill | None:
        """The flow's skill for `role`, checked: a Skill with a name CLIs take, or None."""
        value = self.call("skill()", self.flow.skill, role)
        if value is None:
            return None
        if not (
            isinstance(value, Skill)
            and isinstance(value.name, str)
            and _SKILL_NAME.fullmatch(value.name)
            and isinstance(value.description, str)
            and isinstance(value.body, str)
        ):
            raise self._contract(
                "skill()", value, "a Skill (name: lowercase words joined by '-'; str texts) or None"
            )
        return value

    def stored(self, state: BaseModel) -> tuple[str, dict[str, Any]]:
        """The state as stored (its JSON) and `describe(state)`, checked to be JSON."""
        text, summary = self.call(
            "describe()", lambda: (state.model_dump_json(), _described(self.flow, state))
        )
        lanes = summary.get("lanes") if isinstance(summary, dict) else None
        if not isinstance(summary, dict) or not (
            lanes is None
            or (isinstance(lanes, dict) and all(isinstance(v, dict) for v in lanes.values()))
        ):
            raise self._contract(
                "describe()", summary, "a dict of JSON values ('lanes': {lane: {field: value}})"
            )
        return text, summary

    def result_schema(self, model: type[BaseModel]) -> dict[str, Any]:
        schema: dict[str, Any] = self.call(
            f"result model {model.__name__}'s JSON schema", model.model_json_schema
        )
        return schema

    def declared_artifacts(self, spec: Any, data: Mapping[str, Any]) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = self.call(
            f"result model {spec.model.__name__}'s declared_artifacts()",
            spec.declared_artifacts,
            data,
        )
        return found

    # ---- contract checks ---------------------------------------------------------------------

    def _state(self, what: str, value: object) -> BaseModel:
        expected = getattr(self.flow, "State", BaseModel)
        if not isinstance(expected, type) or not issubclass(expected, BaseModel):
            expected = BaseModel
        if not isinstance(value, expected):
            name = expected.__name__
            raise self._contract(
                what, value, f"a {name}" + ("" if name == "State" else " (its State)")
            )
        return value

    def _text(self, what: str, value: Any) -> str:
        if not isinstance(value, str):
            raise self._contract(what, value, "the prompt's text (a str)")
        return value

    def _contract(self, what: str, value: Any, wanted: str) -> FlowCodeError:
        self.broken = FlowCodeError(
            f"flow {self.name}'s {what} returned {_shown(value)}, not {wanted} (a flow bug)"
        )
        return self.broken


def hear_signals(
    code: FlowCode, loop: asyncio.AbstractEventLoop, stop: Callable[[], None]
) -> Callable[[], None]:
    """SIGINT and SIGTERM call `stop` on the loop and end a wait on the flow's code that
    never returns. The kernel may hand a signal to any thread: its byte on the wake-up
    descriptor wakes the loop (a reader) and the wait on the flow (`FlowCode.wake_fd`), and
    the handler then runs in the engine's thread, where it only writes to pipes (safe
    whatever that thread was doing). A function that puts everything back as it was."""
    r, w = os.pipe()
    for fd in (r, w):
        os.set_blocking(fd, False)
    try:
        old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except ValueError:  # not the main thread: nobody to hear
        os.close(r)
        os.close(w)
        return lambda: None

    def heard(_sig: int, _frame: object) -> None:
        code.poke()
        with contextlib.suppress(RuntimeError):  # the loop closed: the run is over
            loop.call_soon_threadsafe(stop)

    before = {sig: signal.signal(sig, heard) for sig in STOP_SIGNALS}
    loop.add_reader(r, _drained, r)  # the handler does the work once the thread wakes
    code.wake_fd = r

    def restore() -> None:
        for sig, handler in before.items():
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        with contextlib.suppress(ValueError):
            signal.set_wakeup_fd(old_fd)
        with contextlib.suppress(Exception):
            loop.remove_reader(r)
        code.wake_fd = None
        for fd in (r, w):
            with contextlib.suppress(OSError):
                os.close(fd)

    return restore


def _drained(fd: int) -> bytes:
    """What a non-blocking pipe holds now."""
    out = b""
    with contextlib.suppress(BlockingIOError, OSError):
        while chunk := os.read(fd, 4096):
            out += chunk
    return out


def _quit() -> None:
    return None


class _Bad:
    """What `decide` returned when it was not a sequence of commands."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _listed(out: Any) -> list[Any] | _Bad:
    if out is None or isinstance(out, str | bytes | Mapping) or not _iterable(out):
        return _Bad(out)
    if not isinstance(out, Sequence) and hasattr(out, "__dataclass_fields__"):
        return _Bad(out)  # one command, not in a list
    return list(out)


def _iterable(value: Any) -> bool:
    try:
        iter(value)
    except TypeError:
        return False
    return True


def _described(flow: Flow[Any], state: BaseModel) -> Any:
    summary = flow.describe(state)
    json.dumps(summary)  # raises here, in the flow's call, if it is not JSON
    return summary


def _shown(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # a flow's object whose repr breaks
        text = f"<a {type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


def _crashed(name: str, what: str, exc: BaseException) -> FlowCodeError:
    if isinstance(exc, ResultModelBroke):  # says what broke itself, with its traceback
        return FlowCodeError(f"flow {name}'s {exc}", exc.detail)
    if isinstance(exc, SystemExit):
        said = f"called sys.exit({exc.code!r}) (a flow's code may not end the process)"
    elif isinstance(exc, KeyboardInterrupt):
        said = "raised KeyboardInterrupt (a flow's code may not stop the run itself)"
    else:
        try:
            text = str(exc).strip()
        except Exception:  # an exception that cannot say what it is
            text = "(its message could not be read)"
        first = text.splitlines()[0] if text else ""
        said = f"raised {type(exc).__name__}" + (f": {first[:300]}" if first else "")
        said += " (a flow bug)"
    tb = _own_traceback(exc)
    return FlowCodeError(f"flow {name}'s {what} {said}", tb)


def _own_traceback(exc: BaseException) -> str:
    """The exception's traceback without this module's frames (the worker, the wrappers)."""
    tb: TracebackType | None = exc.__traceback__
    while tb is not None and os.path.normcase(tb.tb_frame.f_code.co_filename) == _HERE:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def _flow_frames(lines: list[str]) -> list[str]:
    return [ln for ln in lines if _HERE not in os.path.normcase(ln) and "threading.py" not in ln]
