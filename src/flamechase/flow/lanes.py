"""Lanes of two alternating actors: a library for flows, not engine code.

A `LaneBook` keeps, per lane, whose turn is next (actor a, then b, then a...), the turn count,
the failure streak and the hold. Folded from events like any flow state, it says which turns
to start and which instant commands each outcome owes:

- every counted turn publishes one report: the agent's on a valid turn, a `turn_failed` record
  (`reports.failed_turn_record`) on a failed one, so partners and other lanes see failures;
- a valid turn acknowledges the reports delivered to it (the engine does that for turns with
  `inbox_from`); a failed one leaves them for the partner, who gets them again;
- with `holds`, two failed turns in a row or a `blocked` report hold the lane; a turn that
  failed because its machine was lost under it (`TurnFailed.node_lost`) is not counted: the
  lane did nothing wrong, and its next turn runs elsewhere;
- a turn cut by a stop, a crash or a usage limit is taken again by the same actor with the
  same number (nothing changes here: the engine numbers the attempt).

flame_chase and parallel_flame_chase are written on it; other flows may use it or ignore it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from flamechase import events as ev
from flamechase.flow.api import LaneDef
from flamechase.flow.commands import REPORT, Command, HoldLane, PublishReport, StartTurn
from flamechase.flow.state import FlowState
from flamechase.reports import failed_turn_record, turn_record

__all__ = ["Lane", "LaneBook", "report_id"]


def report_id(run_id: str, lane: str, number: int, attempt: int) -> str:
    """A report's id: readable (`lane-2.0003.1a2b3c`) and the same however often it is asked."""
    digest = hashlib.sha256(f"{run_id}:{lane}:{number}:{attempt}".encode()).hexdigest()
    return f"{lane}.{number:04d}.{digest[:6]}"


class Lane(FlowState):
    name: str
    actors: tuple[str, str]
    place: str
    turns: int = 0
    valid_turns: int = 0
    next_actor: int = 0
    consecutive_failures: int = 0
    held: bool = False
    held_reason: str | None = None
    last_error: str | None = None
    last_status: str | None = None
    busy: bool = False
    waiting: tuple[str, ...] = ()  # what the lane waits for before its next turn

    @property
    def next_role(self) -> str:
        return self.actors[self.next_actor % 2]

    @property
    def in_source(self) -> bool:
        return self.place == "source"


class LaneBook(FlowState):
    run_id: str
    lanes: dict[str, Lane]
    holds: bool = False
    shares_reports: bool = True
    # Each lane also receives the reports the runtime addresses to it (source `system:LANE`).
    system_reports: bool = False
    # What releases a held lane, in the flow's words (carried by `HoldLane` to every view).
    remedy: str = ""

    @classmethod
    def open(
        cls,
        run_id: str,
        lanes: Iterable[LaneDef],
        *,
        holds: bool,
        shares_reports: bool,
        system_reports: bool = False,
        remedy: str = "",
    ) -> LaneBook:
        book = {
            d.name: Lane(name=d.name, actors=(d.roles[0], d.roles[1]), place=d.place) for d in lanes
        }
        return cls(
            run_id=run_id,
            lanes=book,
            holds=holds,
            shares_reports=shares_reports,
            system_reports=system_reports,
            remedy=remedy,
        )

    def _with(self, lane: Lane) -> LaneBook:
        return self.replace(lanes={**self.lanes, lane.name: lane})

    def get(self, name: str) -> Lane:
        return self.lanes[name]

    # ---- folding ---------------------------------------------------------------------------

    def evolve(self, event: ev.Event) -> tuple[LaneBook, list[Command]]:
        """The book after `event`, and the instant commands the event owes."""
        lane = self.lanes.get(event.lane or "")
        if lane is None:
            return self, []
        if isinstance(event, ev.TurnStarted):
            return self._with(lane.replace(busy=True)), []
        if isinstance(event, ev.TurnValid):
            return self._valid(lane, event)
        if isinstance(event, ev.TurnFailed):
            return self._failed(lane, event)
        if isinstance(event, ev.TurnInterrupted | ev.LanePaused):
            return self._with(lane.replace(busy=False)), []
        if isinstance(event, ev.LaneHeld):
            return self._with(lane.replace(held=True, held_reason=event.reason)), []
        if isinstance(event, ev.LaneReleased):
            return self._with(
                lane.replace(held=False, held_reason=None, consecutive_failures=0)
            ), []
        return self, []

    def _valid(self, lane: Lane, e: ev.TurnValid) -> tuple[LaneBook, list[Command]]:
        rid = report_id(self.run_id, lane.name, e.turn, e.attempt)
        record = turn_record(
            run_id=self.run_id,
            report_id=rid,
            lane=lane.name,
            role=e.actor or "",
            actor=_letter(lane, e.actor),
            turn=e.turn,
            attempt=e.attempt,
            at=e.at,
            report=e.result,
            artifacts=e.artifacts,
            recovered_from_checkpoint=e.recovered_from_checkpoint,
        )
        owed: list[Command] = [
            PublishReport(
                lane=lane.name, report_id=rid, record=record, artifacts=tuple(e.artifacts)
            )
        ]
        status = e.report_status
        if self.holds and status == "blocked":
            owed.append(HoldLane(lane.name, f"reported blocked: {e.summary[:300]}", self.remedy))
        lane = lane.replace(
            turns=lane.turns + 1,
            valid_turns=lane.valid_turns + 1,
            next_actor=1 - lane.next_actor % 2,
            consecutive_failures=0,
            last_error=None,
            last_status=status,
            busy=False,
        )
        return self._with(lane), owed

    def _failed(self, lane: Lane, e: ev.TurnFailed) -> tuple[LaneBook, list[Command]]:
        error = (e.error or "turn failed")[:2000]
        rid = report_id(self.run_id, lane.name, e.turn, e.attempt)
        record = failed_turn_record(
            run_id=self.run_id,
            report_id=rid,
            lane=lane.name,
            role=e.actor or "",
            actor=_letter(lane, e.actor),
            turn=e.turn,
            attempt=e.attempt,
            at=e.at,
            error=error,
        )
        owed: list[Command] = [
            PublishReport(lane=lane.name, report_id=rid, record=record, kind="turn_failed")
        ]
        failures = lane.consecutive_failures + (0 if e.node_lost else 1)
        if self.holds and failures >= 2 and not lane.held:
            owed.append(
                HoldLane(lane.name, f"{failures} failed turns in a row: {error}", self.remedy)
            )
        lane = lane.replace(
            turns=lane.turns + 1,
            next_actor=1 - lane.next_actor % 2,
            consecutive_failures=failures,
            last_error=error,
            last_status="turn_failed",
            busy=False,
        )
        return self._with(lane), owed

    # ---- what a lane waits for ---------------------------------------------------------------

    def wait_for(self, name: str, key: str) -> LaneBook:
        lane = self.lanes[name]
        return self._with(lane.replace(waiting=(*lane.waiting, key)))

    def done_waiting(self, key: str) -> LaneBook:
        book = self
        for lane in self.lanes.values():
            if key in lane.waiting:
                book = book._with(lane.replace(waiting=tuple(k for k in lane.waiting if k != key)))
        return book

    # ---- deciding ----------------------------------------------------------------------------

    def turns_to_start(self) -> list[StartTurn]:
        """The next turn of every lane that is free to take one."""
        out = []
        for lane in self.lanes.values():
            if lane.busy or lane.held or lane.waiting:
                continue
            sources = tuple(n for n in self.lanes if n != lane.name) if self.shares_reports else ()
            if self.system_reports:
                sources = (*sources, f"system:{lane.name}")
            out.append(
                StartTurn(
                    role=lane.next_role,
                    lane=lane.name,
                    number=lane.turns + 1,
                    place=lane.place,
                    result=REPORT,
                    inbox_from=sources,
                    checkpoint=True,
                    artifacts=True,
                )
            )
        return out

    def all_held(self) -> bool:
        return bool(self.lanes) and all(ln.held and not ln.busy for ln in self.lanes.values())

    def held_message(self, how_to_go_on: str = "") -> str:
        reasons = "; ".join(
            f"{n}: {ln.last_error or ln.last_status}" for n, ln in self.lanes.items()
        )
        return f"every lane is held ({reasons})" + (f"; {how_to_go_on}" if how_to_go_on else "")

    def describe(self) -> dict[str, Mapping[str, Any]]:
        return {n: {"next_role": ln.next_role} for n, ln in self.lanes.items()}


def _letter(lane: Lane, role: str | None) -> str:
    return "a" if role == lane.actors[0] else "b"
