"""Opening a run: the lock, the run directory and database, a new run's first state, a stored
run's state back, and what a crashed engine left behind (its processes ended, its cut turns
recorded and reserved for a retake by the same role with the same number).
"""

from __future__ import annotations

import dataclasses
import json
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from flamechase import events as ev
from flamechase.engine.admission import BudgetTracker, Spend
from flamechase.engine.clock import Clock
from flamechase.engine.flowcode import FlowCode
from flamechase.engine.layout import RunLayout
from flamechase.engine.ledger import LaneRow, Ledger, Observer
from flamechase.engine.prepare import Prepared
from flamechase.engine.recovery import sweep_leftovers
from flamechase.errors import ControlPathViolation, StoreError
from flamechase.flow.api import RunSetup
from flamechase.fsutil import atomic_write
from flamechase.store import home
from flamechase.store.reader import Reader
from flamechase.workspace.locks import SourceLock


def new_run_id(clock: Clock) -> str:
    stamp = datetime.fromtimestamp(clock.time(), UTC).strftime("%Y%m%dT%H%M%SZ")
    return stamp + "-" + secrets.token_hex(5)


@dataclasses.dataclass(slots=True)
class Opened:
    run_id: str
    layout: RunLayout
    ledger: Ledger
    reader: Reader
    lock: SourceLock
    fresh: bool


def open_run(
    prep: Prepared,
    code: FlowCode,
    clock: Clock,
    observer: Observer | None,
    fault: Callable[[str], None],
) -> Opened:
    """Take the source lock and open (or create) the run's directory and database."""
    fresh = prep.resume_from is None
    run_id = new_run_id(clock) if fresh else prep.resume_from.name  # type: ignore[union-attr]
    lock = SourceLock(home.ensure_private_dir(home.locks_dir()), prep.workspace)
    lock.acquire(run_id)
    try:
        home.ensure_private_dir(home.state_home())
        runs = home.ensure_private_dir(home.runs_dir())
        root = runs / run_id
        if fresh:
            root.mkdir(mode=0o700)
        elif root.is_symlink() or not root.is_dir():
            raise ControlPathViolation(
                f"run directory {root} was replaced or linked; the run cannot be resumed safely"
            )
        layout = RunLayout(root)
        if fresh:
            # Rebuilt from the database when lost: not flushed to disk.
            key = {"flow": prep.flow.name, "workspace": str(prep.workspace)}
            atomic_write(layout.key, json.dumps(key).encode(), durable=False)
        ledger = Ledger.open(layout.db, code, clock, observer, fault)
        reader = Reader(layout.db)
        ledger.reader = reader
    except BaseException:
        lock.release()
        raise
    return Opened(run_id, layout, ledger, reader, lock, fresh)


def create(ledger: Ledger, prep: Prepared, opened: Opened, *, flow: bool = True) -> None:
    """A new run: its row, its lanes, its first event and the flow's first state. `flow`
    False: the flow's code broke on the way (its lanes, start, evolve or describe), and the
    run is recorded without its state or lanes, so that its failure can be."""
    params = prep.params
    lanes = ledger.code.lanes(params) if flow else []
    agents = prep.recorded_agents()
    if flow:
        ledger.state = ledger.code.start(
            RunSetup(
                run_id=opened.run_id,
                objective=prep.objective,
                params=params,
                lanes=lanes,
                source=str(prep.workspace),
            )
        )
    with ledger.tx():
        ledger.writer.create_run(
            run_id=opened.run_id,
            flow=prep.flow.name,
            workspace=str(prep.workspace),
            task=prep.objective,
            fingerprint=prep.task_fingerprint,
            params=params.model_dump(mode="json"),
            budget=prep.budget.to_json(),
            agents=agents,
            run_dir=str(opened.layout.root),
            flow_source=prep.flow_source,
            flow_hash=prep.flow_hash,
            flow_version=prep.flow.version,
        )
        for pos, lane in enumerate(lanes):
            ws = prep.workspace if lane.in_source else opened.layout.place(lane.place)
            ledger.writer.add_lane(lane.name, pos, list(lane.roles), str(ws))
            ledger.lanes[lane.name] = LaneRow(lane.name)
        ledger.journal(
            ev.RunCreated(
                flow=prep.flow.name,
                flow_source=prep.flow_source,
                flow_hash=prep.flow_hash,
                workspace=str(prep.workspace),
                objective=prep.objective,
                lanes=[ln.name for ln in lanes],
                agents=agents,
                budget=prep.budget.to_json(),
                budget_from=dict(prep.budget_from),
            ),
            fold=flow,
        )


def load(ledger: Ledger, prep: Prepared, reader: Reader) -> None:
    """A stored run's flow state and lane rows back."""
    stored = reader.flow_state()
    run = reader.run()
    if stored is None:
        raise StoreError(
            f"run {run['id']} was made by an older flamechase and has no flow "
            "state this one can resume; start fresh with -p resume_mode=fresh"
        )
    ledger.state = ledger.code.load_state(stored["state"])
    ledger.last_seq = int(stored["seq"])
    for row in reader.lanes():
        ledger.lanes[row["lane"]] = LaneRow(
            name=row["lane"],
            turns=row["turns"],
            valid_turns=row["valid_turns"],
            consecutive_failures=row["consecutive_failures"],
            held=row["held"],
            held_reason=row["held_reason"],
            last_error=row["last_error"],
            last_status=row["last_status"],
            paused_until=row["paused_until"],
        )
    ledger.mark_stored()


def budget_of(prep: Prepared, reader: Reader, clock: Clock) -> BudgetTracker:
    spend = reader.spend()
    tracker = BudgetTracker(
        prep.budget,
        Spend(
            turns=int(spend["turns"]),
            cost=float(spend["cost"]),
            output_tokens=int(spend["output_tokens"]),
            input_tokens=int(spend["input_tokens"]),
        ),
        float(reader.run()["active_seconds"]),
        clock,
    )
    tracker.reserved = reader.owed_retakes()  # cut counted turns not taken again
    return tracker


def recover(ledger: Ledger, reader: Reader, budget: BudgetTracker) -> list[dict[str, Any]]:
    """End what a crashed engine left running; record its cut turns, reserve their slots."""
    leftovers = reader.procs()
    if leftovers:
        sweep_leftovers([(p["pgid"] or None, p["token"]) for p in leftovers])
    inflight = reader.inflight()
    with ledger.tx():
        for row in inflight:
            ledger.interrupted_before(row, "engine crash or kill")
            slot = str(row["lane"])
            if row["counted"] and slot and not slot.startswith("@"):
                budget.reserved.add(slot)
        if leftovers:
            ledger.writer.forget_procs([p["token"] for p in leftovers])
    return inflight


def resumed(
    ledger: Ledger, prep: Prepared, reader: Reader, session: int, budget: BudgetTracker
) -> None:
    """A resumed session's changes recorded: the budget and params it was given, agents and
    flow code that differ from the stored run's, and `run_resumed` saying so."""
    stored = reader.run()
    agents_now = prep.recorded_agents()
    changes: dict[str, Any] = {
        "budget": prep.budget.to_json(),
        "params": prep.params.model_dump(mode="json"),
    }
    if agents_now != stored["agents"]:
        changes["agents"] = agents_now
    if prep.flow_hash != stored.get("flow_hash"):
        changes.update(
            flow_hash=prep.flow_hash,
            flow_source=prep.flow_source,
            flow_version=prep.flow.version,
        )
    with ledger.tx():
        ledger.writer.update_run(**changes)
        ledger.journal(
            ev.RunResumed(
                session=session,
                agents=agents_now,
                changed_agents={
                    r: [stored["agents"].get(r), t]
                    for r, t in agents_now.items()
                    if stored["agents"].get(r) != t
                },
                budget=prep.budget.to_json(),
                params=prep.params.model_dump(mode="json"),
                revised=prep.revised,
                budget_from=dict(prep.budget_from),
                spent=budget.report(),
            )
        )


def turn_events(reader: Reader) -> list[dict[str, Any]]:
    """A stored run's turn starts and ends, oldest first (what failover folds on resume)."""
    kinds = ("turn_started", "turn_valid", "turn_failed", "turn_interrupted", "lane_paused")
    rows = [row for kind in kinds for row in reader.events_of(kind)]
    return sorted(rows, key=lambda row: int(row["seq"]))
