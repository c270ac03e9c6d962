"""PUBLIC: a stored run read back, typed: for a flow's tests and for tools.

    record = read_run(run_dir)          # or `run_engine(...).record()` in a test
    record.status, record.flow           # "finished", "review"
    record.of(events.TurnValid)          # the run's events of a kind, as their classes
    record.state                         # the flow's stored state (JSON), record.summary
    record.state_as(FLOW)                # ... loaded back by the flow (`Flow.load_state`)
    record.turns, record.reports, record.measurements, record.places

Everything is read once, read-only (safe while the run is live), when `read_run` is called:
read again for a later picture. Events come back as `flamechase.events` classes; a flow's own
kinds need the flow's module imported (`read_run` imports the flow the run recorded, as the
views do, unless `import_flow=False`), else they come back as `events.Unknown`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from flamechase.events import Event, parse
from flamechase.store.db import DB_NAME
from flamechase.store.reader import Reader

if TYPE_CHECKING:
    from pydantic import BaseModel

    from flamechase.flow import Flow

__all__ = ["Measurement", "Report", "RunRecord", "Turn", "read_run"]

E = TypeVar("E", bound=Event)
S = TypeVar("S", bound="BaseModel")
_PAGE = 5000


@dataclasses.dataclass(frozen=True, slots=True)
class Turn:
    """One attempt at a turn. `lane` None: a turn outside lanes (a planner, a judge).
    `status`: valid, failed, interrupted (cut; taken again) or limited (a usage limit).
    `result`: the validated result of a valid turn."""

    lane: str | None
    role: str
    number: int
    attempt: int
    status: str
    result: Mapping[str, Any] | None
    error: str | None
    counted: bool
    place: str | None
    duration: float
    cost_usd: float
    output_tokens: int


@dataclasses.dataclass(frozen=True, slots=True)
class Report:
    """A report published into `lane`'s reports (`PublishReport`), with its frozen artifacts
    (path, sha256, size, description)."""

    report_id: str
    lane: str
    kind: str
    record: Mapping[str, Any]
    artifacts: tuple[Mapping[str, Any], ...]


@dataclasses.dataclass(frozen=True, slots=True)
class Measurement:
    """The receipt the runtime kept under a key: a `Measure`'s (`value`), a `Run`'s (exit
    code, output), or a `Freeze`'s (`files`: path -> SHA-256)."""

    key: str
    lane: str | None
    place: str
    at: str
    receipt: Mapping[str, Any]

    @property
    def value(self) -> float | None:
        v = self.receipt.get("value")
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

    @property
    def error(self) -> str | None:
        e = self.receipt.get("error")
        return str(e) if e else None


@dataclasses.dataclass(frozen=True, slots=True)
class RunRecord:
    """A run as stored: its row, every event, the flow's state and what the runtime kept."""

    run_dir: Path
    run: Mapping[str, Any]  # id, flow, flow_source, workspace, task, status, params, budget...
    events: tuple[Event, ...]
    state_json: str | None  # the flow's state after the last committed event, as stored
    summary: Mapping[str, Any]  # what the flow's `describe(state)` returned with it
    turns: tuple[Turn, ...]
    reports: tuple[Report, ...]
    measurements: Mapping[str, Measurement]  # by key, in the order they were kept
    places: Mapping[str, str]  # private place name -> its path

    @property
    def id(self) -> str:
        return str(self.run["id"])

    @property
    def flow(self) -> str:
        return str(self.run["flow"])

    @property
    def status(self) -> str:
        """starting, running, finished, stopped, failed or held (as last recorded)."""
        return str(self.run["status"])

    @property
    def state(self) -> dict[str, Any] | None:
        """The flow's stored state as JSON (None before the flow's first transaction)."""
        return None if self.state_json is None else dict(json.loads(self.state_json))

    def state_as(self, flow: Flow[S, Any]) -> S:
        """The stored state loaded back by `flow` (its `load_state`), typed."""
        if self.state_json is None:
            raise ValueError(f"run {self.id} has no stored flow state yet")
        return flow.load_state(self.state_json)

    def of(self, *kinds: type[E]) -> list[E]:
        """The events that are instances of `kinds`, oldest first."""
        return [e for e in self.events if isinstance(e, kinds)]

    def kinds(self) -> list[str]:
        """Every event's kind, oldest first (a stored kind nobody registered included)."""
        return [str(e.row()["kind"]) for e in self.events]


def read_run(run_dir: Path | str, *, import_flow: bool = True) -> RunRecord:
    """The run stored in `run_dir` (a directory under the state home's `runs/`, holding
    `run.db`). `import_flow`: import the flow the run recorded (built-in, module or path;
    never from the network), so that its own event kinds come back as its classes; loading a
    flow runs its code."""
    path = Path(run_dir)
    with Reader(path / DB_NAME) as reader:
        run = reader.run()
        if import_flow:
            from flamechase.loader import load_recorded

            load_recorded(str(run.get("flow_source") or ""))
        stored = reader.flow_state()
        artifacts: dict[str, list[Mapping[str, Any]]] = {}
        for a in reader.artifacts():
            artifacts.setdefault(str(a["report_id"]), []).append(
                {k: a[k] for k in ("path", "sha256", "size", "description")}
            )
        return RunRecord(
            run_dir=path,
            run=run,
            events=tuple(_events(reader)),
            state_json=None if stored is None else str(stored["state"]),
            summary=dict(stored["summary"]) if stored else {},
            turns=tuple(_turn(row) for row in reader.turns()),
            reports=tuple(
                Report(d.report_id, d.lane, d.kind, d.record, tuple(artifacts.get(d.report_id, ())))
                for d in reader.reports()
            ),
            measurements={
                str(m["key"]): Measurement(
                    str(m["key"]), m["lane"], str(m["place"]), str(m["at"]), m["receipt"]
                )
                for m in reader.measurements()
            },
            places={name: str(p["path"]) for name, p in reader.places().items()},
        )


def _events(reader: Reader) -> list[Event]:
    out: list[Event] = []
    while True:
        page = reader.events(after=out[-1].seq if out else 0, limit=_PAGE)
        out += [parse(row) for row in page]
        if len(page) < _PAGE:
            return out


def _turn(row: Mapping[str, Any]) -> Turn:
    slot = str(row["lane"] or "")
    return Turn(
        lane=None if not slot or slot.startswith("@") else slot,
        role=str(row["role"]),
        number=int(row["number"]),
        attempt=int(row["attempt"]),
        status=str(row["status"]),
        result=row["report"],
        error=row["error"],
        counted=bool(row["counted"]),
        place=row["place"],
        duration=float(row["duration"]),
        cost_usd=float(row["cost_usd"]),
        output_tokens=int(row["output_tokens"]),
    )
