"""The single writer: every change to run state goes through here, one transaction at a time.

Each transaction journals typed events, writes the rows they stand for (turns, lanes,
reports, cursors, artifacts, places, measurements), folds each event into the flow's state,
and stores that state (and its summary for views) before committing. So the journal, the
tables and the flow's state never disagree, whatever instant the process dies at; a failed
transaction leaves all three as they were, in the database and in memory. Observers see the
events of a transaction only after it committed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from flamechase import events as ev
from flamechase.engine.clock import Clock, iso
from flamechase.engine.flowcode import FlowCode
from flamechase.errors import FlowCodeError
from flamechase.store.db import Writer
from flamechase.store.reader import Reader


class Observer(Protocol):
    def event(self, event: dict[str, Any]) -> None: ...


@dataclasses.dataclass(slots=True)
class LaneRow:
    """The engine's own record of a lane: counters every flow's lanes share."""

    name: str
    turns: int = 0
    valid_turns: int = 0
    consecutive_failures: int = 0
    held: bool = False
    held_reason: str | None = None
    last_error: str | None = None
    last_status: str | None = None
    paused_until: str | None = None


class Ledger:
    def __init__(
        self,
        writer: Writer,
        code: FlowCode,
        clock: Clock,
        observer: Observer | None,
        fault: Callable[[str], None],
    ) -> None:
        self.writer = writer
        self.reader: Reader | None = None
        self.code = code
        self.flow = code.flow
        # Told of every committed event, after the observer (the engine's command checks).
        self.seen: Callable[[ev.Event], None] | None = None
        self.clock = clock
        self.observer = observer
        self.fault = fault
        self.state: BaseModel | None = None
        self.lanes: dict[str, LaneRow] = {}
        self.last_seq = 0
        self._stored: BaseModel | None = None
        self._pending: list[ev.Event] = []
        self._last_turn_id: dict[str, int] = {}
        self._open = False  # inside tx()

    @classmethod
    def open(
        cls,
        db: Path,
        code: FlowCode,
        clock: Clock,
        observer: Observer | None,
        fault: Callable[[str], None],
    ) -> Ledger:
        """The run database at `db` (created and migrated if need be), private to its owner."""
        writer = Writer(db)
        os.chmod(db, 0o600)
        return cls(writer, code, clock, observer, fault)

    def close(self) -> None:
        self.writer.close()

    def procs(self) -> list[str]:
        """Tokens of agent processes this run recorded and has not swept yet."""
        return [r[0] for r in self.writer.conn.execute("SELECT token FROM procs")]

    def valid_turns(self) -> tuple[int, int]:
        """(valid, all) counted turns recorded: what the run's end says of its work."""
        row = self.writer.conn.execute(
            "SELECT count(*) FILTER (WHERE status = 'valid'), count(*) FROM turns "
            "WHERE counted = 1 AND status IN ('valid', 'failed')"
        ).fetchone()
        return int(row[0]), int(row[1])

    def mark_stored(self) -> None:
        """The state in memory is the one in the store (just loaded)."""
        self._stored = self.state

    def next_attempt(self, slot: str, number: int) -> int:
        """1 + the last attempt recorded at (slot, number): a retake keeps its number."""
        row = self.writer.conn.execute(
            "SELECT max(attempt) FROM turns WHERE lane = ? AND number = ?", (slot, number)
        ).fetchone()
        return int(row[0] or 0) + 1

    # ---- transactions ------------------------------------------------------------------------

    @contextlib.contextmanager
    def tx(self, *, durable: bool = True) -> Iterator[None]:
        """One transaction; on failure the flow state and lane rows are rolled back too.

        Inside another, it is part of that one: the outer one stores the flow's state,
        commits, rolls back (everything, in memory too) and tells observers, once."""
        if self._open:
            yield
            return
        self.fault("before-commit")
        state, lanes = self.state, {k: dataclasses.replace(v) for k, v in self.lanes.items()}
        seq = self.last_seq
        self._open = True
        try:
            with self.writer.transaction(durable=durable):
                yield
                if (
                    self.state is not self._stored
                    and self.state is not None
                    and self.code.broken is None
                ):
                    text, summary = self.code.stored(self.state)
                    self.writer.save_flow_state(
                        flow=self.flow.name, state=text, summary=summary, seq=self.last_seq
                    )
        except BaseException:
            self.state, self.lanes, self.last_seq = state, lanes, seq
            self._pending = []
            raise
        finally:
            self._open = False
        self._stored = self.state
        self.fault("after-commit")
        pending, self._pending = self._pending, []
        if self.observer is not None:
            for e in pending:
                self.observer.event(e.row())
        if self.seen is not None:
            for e in pending:
                self.seen(e)

    def journal(self, event: ev.Event, *, fold: bool = True) -> ev.Event:
        """Append `event` (inside a transaction) and fold it into the flow state.

        Once the flow's code broke (FlowCodeError), nothing is folded and only what the
        engine journals unfolded (`fold=False`: the run's end) is written: the stored state
        stays the last one the flow made, and a turn the engine could not tell the flow of
        stays under way, to be taken again on resume."""
        broken = self.code.broken
        if broken is not None and fold:
            raise FlowCodeError(str(broken), broken.traceback, broken.status)
        at = iso(self.clock.time())
        seq = self.writer.event(
            event.kind,
            lane=event.lane,
            actor=event.actor,
            payload=event.payload(),
            at=at,
            version=event.version,
        )
        event = dataclasses.replace(event, seq=seq, at=at)
        self.last_seq = seq
        self._pending.append(event)
        if self.state is not None and fold:
            self.state = self.code.evolve(self.state, event)
        return event

    def say(self, event: ev.Event) -> ev.Event:
        """Journal one event in a transaction of its own."""
        with self.tx():
            return self.journal(event)

    # ---- lanes -------------------------------------------------------------------------------

    def lane_row(self, lane: str) -> LaneRow:
        return self.lanes[lane]

    def _save_lane(self, row: LaneRow) -> None:
        self.writer.update_lane(
            row.name,
            turns=row.turns,
            valid_turns=row.valid_turns,
            consecutive_failures=row.consecutive_failures,
            held=int(row.held),
            held_reason=row.held_reason,
            last_error=row.last_error,
            last_status=row.last_status,
            paused_until=row.paused_until,
        )

    def hold(self, lane: str, reason: str, remedy: str = "") -> None:
        row = self.lanes.get(lane)
        if row is None or row.held:
            return
        row.held, row.held_reason = True, reason
        self._save_lane(row)
        self.journal(ev.LaneHeld(lane=lane, reason=reason, remedy=remedy))

    def release(self, lane: str, reason: str) -> None:
        row = self.lanes.get(lane)
        if row is None or not (row.held or row.consecutive_failures):
            return
        row.held, row.held_reason, row.consecutive_failures = False, None, 0
        self._save_lane(row)
        self.journal(ev.LaneReleased(lane=lane, reason=reason))

    # ---- turns -------------------------------------------------------------------------------

    def turn_started(
        self,
        event: ev.TurnStarted,
        *,
        slot: str,
        io_dir: str,
        acks: Mapping[str, int],
        token: str,
        counted: bool,
    ) -> None:
        self.writer.begin_turn(
            lane=slot,
            number=event.turn,
            attempt=event.attempt,
            role=event.actor or "",
            backend=event.backend,
            io_dir=io_dir,
            acks=dict(acks),
            started=iso(self.clock.time()),
            token=token,
            counted=counted,
            place=event.place,
        )
        self.journal(event)

    def turn_ended(
        self,
        event: ev.TurnEnded,
        *,
        slot: str,
        backend: str,
        started: str,
        ended: str,
        io_dir: str,
        place: str,
        error: str | None,
    ) -> None:
        """The turn row, the lane's counters, the inbox acknowledgement, the event."""
        lane = event.lane
        result = event.result if isinstance(event, ev.TurnValid) else None
        status = {
            "turn_valid": "valid",
            "turn_failed": "failed",
            "turn_interrupted": "interrupted",
            "lane_paused": "limited",
        }[event.kind]
        turn_id = self.writer.insert_turn(
            lane=slot,
            number=event.turn,
            attempt=event.attempt,
            role=event.actor or "",
            backend=backend,
            status=status,
            started=started,
            ended=ended,
            duration=round(event.duration, 3),
            report=result,
            error=error,
            exit_code=event.exit_code,
            cost_usd=event.cost_usd,
            input_tokens=event.input_tokens,
            output_tokens=event.output_tokens,
            cache_read_tokens=event.cache_read_tokens,
            cache_write_tokens=event.cache_write_tokens,
            recovered_from_checkpoint=int(getattr(event, "recovered_from_checkpoint", False)),
            io_dir=io_dir,
            counted=int(event.counted),
            place=place,
        )
        self.fault("collect-mid")
        if lane is not None:
            self._last_turn_id[lane] = turn_id
        row = self.lanes.get(lane or "")
        if row is not None:
            self._count(row, event)
            self._save_lane(row)
        if isinstance(event, ev.TurnValid) and event.acknowledged and lane is not None:
            self.writer.acknowledge(lane, dict(event.acknowledged))
        self.writer.end_inflight(slot)
        self.journal(event)

    @staticmethod
    def _count(row: LaneRow, event: ev.TurnEnded) -> None:
        if isinstance(event, ev.TurnValid):
            row.turns += 1
            row.valid_turns += 1
            row.consecutive_failures = 0
            row.last_error, row.last_status = None, event.report_status
        elif isinstance(event, ev.TurnFailed):
            row.turns += 1
            row.consecutive_failures += 0 if event.node_lost else 1  # as the LaneBook counts
            row.last_error, row.last_status = event.error[:2000], "turn_failed"
        elif isinstance(event, ev.LanePaused):
            row.paused_until = event.lane_until  # None when the role moves to another agent
        if not isinstance(event, ev.LanePaused):
            row.paused_until = None

    def interrupted_before(self, inflight: Mapping[str, Any], reason: str) -> None:
        """A turn a dead engine left under way: recorded as cut, to be taken again."""
        slot = str(inflight["lane"])
        lane = None if slot.startswith("@") or not slot else slot
        now = iso(self.clock.time())
        self.writer.insert_turn(
            lane=slot,
            number=inflight["number"],
            attempt=inflight["attempt"],
            role=inflight["role"],
            backend=inflight["backend"],
            status="interrupted",
            started=inflight["started"],
            ended=now,
            duration=0.0,
            error="cut: the engine stopped before the turn was collected",
            io_dir=inflight["io_dir"],
            counted=int(inflight["counted"]),
            place=inflight["place"],
        )
        self.writer.end_inflight(slot)
        self.journal(
            ev.TurnInterrupted(
                lane=lane,
                actor=inflight["role"],
                turn=inflight["number"],
                attempt=inflight["attempt"],
                reason=reason,
                recovered=True,
            )
        )

    # ---- reports, places, measurements -------------------------------------------------------

    def publish(
        self,
        lane: str,
        report_id: str,
        record: Mapping[str, Any],
        kind: str,
        artifacts: tuple[Mapping[str, Any], ...],
    ) -> None:
        seq = self.writer.publish_report(
            report_id=report_id,
            lane=lane,
            turn_id=self._last_turn_id.get(lane, 0),
            kind=kind,
            record=dict(record),
        )
        if not seq:
            return  # published before (a crash between the turn and here, then a resume)
        for a in artifacts:
            self.writer.add_artifact(
                report_id,
                str(a["path"]),
                str(a["sha256"]),
                int(a["size"]),
                str(a.get("description", "")),
            )
        status = record.get("status")
        self.journal(
            ev.ReportPublished(
                lane=lane,
                actor=str(record.get("role") or "") or None,
                report_id=report_id,
                report_seq=seq,
                report_status=None if status is None else str(status),
                report_kind=kind,
                artifacts=[{k: a[k] for k in ("path", "sha256", "size")} for a in artifacts],
            )
        )

    def place_made(
        self,
        name: str,
        path: str,
        how: str,
        lane: str | None,
        *,
        changed: list[str] | None = None,
        deleted: list[str] | None = None,
        label: str = "",
    ) -> None:
        self.writer.add_place(name, path, how)
        self.journal(
            ev.PlaceMade(
                lane=lane,
                place=name,
                path=path,
                how=how,
                changed=changed or [],
                deleted=deleted or [],
                label=label,
            )
        )

    def place_dropped(self, name: str) -> None:
        self.writer.drop_place(name)
        self.journal(ev.PlaceDropped(place=name))

    def frozen(self, key: str, place: str, files: Mapping[str, str], error: str | None) -> None:
        self.writer.add_measurement(
            key=key,
            lane=None,
            at=iso(self.clock.time()),
            place=place,
            receipt={"files": dict(files), "error": error},
        )
        self.journal(ev.Frozen(key=key, place=place, files=dict(files), error=error))

    def ran(
        self,
        key: str,
        lane: str | None,
        place: str,
        receipt: Mapping[str, Any],
        *,
        label: str = "",
    ) -> None:
        self.writer.add_measurement(
            key=key, lane=lane, at=iso(self.clock.time()), place=place, receipt=dict(receipt)
        )
        stored = json.loads(json.dumps(receipt))
        self.journal(ev.Ran(lane=lane, key=key, receipt=stored, label=label))

    def measured(
        self,
        key: str,
        lane: str | None,
        place: str,
        receipt: Mapping[str, Any],
        *,
        label: str = "",
        metric: str | None = None,
        direction: str | None = None,
    ) -> None:
        self.writer.add_measurement(
            key=key, lane=lane, at=iso(self.clock.time()), place=place, receipt=dict(receipt)
        )
        stored = json.loads(json.dumps(receipt))
        self.journal(
            ev.Measured(
                lane=lane,
                key=key,
                receipt=stored,
                label=label,
                metric=metric,
                direction=direction,
            )
        )
