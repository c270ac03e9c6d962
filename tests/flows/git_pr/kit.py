"""Driving parallel_flame_chase:git_pr's decider by hand: events in, commands out.

`Driver` plays the engine's part without any process: it feeds events to `evolve`, journals
the instant commands `decide` asks for (as the engine would, so the flow's outbox settles) and
answers the runtime programs the flow asks for with the results a test chooses.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from flamechase import events as ev
from flamechase.flow import (
    Command,
    Emit,
    Freeze,
    HoldLane,
    MakePlace,
    Measure,
    PublishReport,
    ReleaseLane,
    Run,
    RunSetup,
    StartTurn,
    WaitUntil,
)
from flamechase.flows.git_pr.model import GitState
from flamechase.flows.git_pr.params import GitPrParams
from flamechase.loader import load_flow

FLOW = load_flow("parallel_flame_chase:git_pr")
BASE = "b" * 40  # the baseline commit
T0 = 1_800_000_000.0


def sha(n: int) -> str:
    return f"{n:040x}"


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Driver:
    def __init__(self, lanes: int = 2, objective: str = "make it faster", **params: Any) -> None:
        given = {
            "evaluator": "python3 score.py",
            "metric_pattern": r"SCORE: (\d+)",
            "lanes": lanes,
            **params,
        }
        p = GitPrParams(**given)
        self.state: GitState = FLOW.start(
            RunSetup(run_id="r1", objective=objective, params=p, lanes=FLOW.lanes(p), source="/src")
        )
        self.t = T0
        self.seq = 0
        self.journal: list[ev.Event] = []
        self.turns: dict[str, int] = {}
        self.records: dict[str, dict[str, Any]] = {}  # published report id -> record

    # ---- the engine's part -------------------------------------------------------------------

    def feed(self, *events: ev.Event) -> None:
        """Journal `events`, then what the flow owes for them (as the engine does)."""
        for e in events:
            self._journal(e)
            self._settle()

    def _journal(self, e: ev.Event) -> None:
        self.t += 1.0
        self.seq += 1
        e = dataclasses.replace(e, seq=self.seq, at=iso(self.t))
        self.journal.append(e)
        self.state = FLOW.evolve(self.state, e)

    def _settle(self) -> None:
        for _ in range(100):
            instant = [
                c
                for c in FLOW.decide(self.state, self.t)
                if isinstance(c, Emit | PublishReport | HoldLane | ReleaseLane)
            ]
            if not instant:
                return
            for c in instant:
                if isinstance(c, PublishReport):
                    self.records[c.report_id] = dict(c.record)
                self._journal(_event_of(c))
        raise AssertionError("the flow does not settle")

    def decide(self, now: float | None = None) -> list[Command]:
        return list(FLOW.decide(self.state, self.t if now is None else now))

    def jobs(self, now: float | None = None) -> dict[str, Run | Measure]:
        """The programs the flow asks for now (the places they need are made first)."""
        self.places()
        return {c.key: c for c in self.decide(now) if isinstance(c, Run | Measure)}

    def job(self, prefix: str) -> Run | Measure:
        found = [c for k, c in self.jobs().items() if k.startswith(prefix)]
        assert len(found) == 1, (prefix, sorted(self.jobs()))
        return found[0]

    def ran(self, prefix: str, result: Mapping[str, Any], *, code: int = 0) -> Run:
        job = self.job(prefix)
        assert isinstance(job, Run), job
        receipt = {
            "argv": list(job.argv),
            "exit_code": code,
            "output": json.dumps(result) + "\n",
            "error": None if code == 0 else f"exited with code {code}",
            "output_sha256": "0" * 64,
            "duration": 0.1,
        }
        self.feed(ev.Ran(lane=job.lane, key=job.key, receipt=receipt))
        return job

    def measured(self, prefix: str, value: float | None, error: str | None = None) -> Measure:
        job = self.job(prefix)
        assert isinstance(job, Measure), job
        receipt = {
            "command": job.command,
            "exit_code": 0 if error is None else 1,
            "value": value,
            "error": error,
            "duration": 0.5,
            "output_sha256": "1" * 64,
        }
        self.feed(ev.Measured(lane=job.lane, key=job.key, receipt=receipt))
        return job

    def places(self) -> None:
        for c in self.decide():
            if isinstance(c, MakePlace):
                self.feed(ev.PlaceMade(place=c.name, path=f"/run/{c.name}/workspace", how=c.how))

    # ---- whole steps ---------------------------------------------------------------------------

    def freeze(self, files: Mapping[str, str] | None = None, error: str | None = None) -> Freeze:
        """Answer the freezing of the evaluator's files (default: score.py)."""
        (job,) = [c for c in self.decide() if isinstance(c, Freeze)]
        frozen = {"score.py": "5" * 64} if files is None else dict(files)
        self.feed(ev.Frozen(key=job.key, place=job.place, files=frozen, error=error))
        return job

    def set_up(
        self,
        main_score: float | None = 50.0,
        main_error: str | None = None,
        frozen: Mapping[str, str] | None = None,
    ) -> None:
        """Places, the plan, the central repository, the clones, the evaluator's files frozen
        and the baseline measured."""
        self.places()
        self.feed(
            ev.TurnStarted(actor="coordinator", turn=1),
            ev.TurnValid(actor="coordinator", turn=1, result={"lanes": []}),
        )
        self.places()
        self.ran("setup/central", {"main": BASE, "tree": "t" * 40, "files": 3})
        for key in sorted(self.jobs()):
            if key.startswith("setup/clone/") or key == "setup/main-checkout":
                self.ran(key, {"head": BASE, "commit": BASE, "tree": "t" * 40})
        self.freeze(frozen)
        self.measured("setup/main-measure", main_score, main_error)

    def turn(
        self,
        lane: str,
        requests: Sequence[Mapping[str, Any]] = (),
        refused: Sequence[str] = (),
        failed: bool = False,
    ) -> None:
        n = self.turns.get(lane, 0) + 1
        self.turns[lane] = n
        role = f"lane_{lane.split('-')[1]}_actor_{'a' if n % 2 else 'b'}"
        self.feed(ev.TurnStarted(lane=lane, actor=role, turn=n))
        end: ev.TurnEnded = (
            ev.TurnFailed(lane=lane, actor=role, turn=n, error="boom")
            if failed
            else ev.TurnValid(
                lane=lane,
                actor=role,
                turn=n,
                report_status="progress",
                result={"status": "progress", "summary": "s"},
            )
        )
        self.feed(
            dataclasses.replace(
                end, requests=[dict(r) for r in requests], requests_refused=list(refused)
            )
        )

    def push(
        self, lane: str, pushed: Mapping[str, str], results: Mapping[str, str] | None = None
    ) -> Run | None:
        """Answer the lane's export as if its outbox held `pushed` (what changed since the
        runtime last saw it, and what was deleted) and, if asked, the forward with `results`
        (default: every ref accepted)."""
        export = self.job("export/")
        assert isinstance(export, Run)
        seen = json.loads(export.env["FLAMECHASE_GIT_SEEN"])
        changed = {r: s for r, s in pushed.items() if seen.get(r) != s}
        deleted = sorted(r for r in seen if r not in pushed)
        self.ran(
            "export/", {"changed": changed, "deleted": deleted, "bundle": "/b" if changed else None}
        )
        forwards = [k for k in self.jobs() if k.startswith("forward/")]
        if not forwards:
            return None
        job = self.jobs()[forwards[0]]
        assert isinstance(job, Run)
        updates = dict(a.split("=", 1) for a in _values(job.argv, "--update"))
        deletes = _values(job.argv, "--delete")
        got = {ref: "ok" for ref in [*updates, *deletes]} | dict(results or {})
        before = self.state.refs.get(lane, {})
        refs: dict[str, str | None] = {
            r: (updates.get(r) if got[r] == "ok" else before.get(r)) for r in [*updates, *deletes]
        }
        self.ran("forward/", {"results": got, "refs": refs, "main": self.state.main})
        return job

    def kinds(self) -> list[str]:
        return [e.kind for e in self.journal]

    def of(self, kind: type[ev.Event]) -> list[Any]:
        return [e for e in self.journal if isinstance(e, kind)]

    def reports_to(self, lane: str) -> list[str]:
        """Summaries of the system reports published for `lane`, in order."""
        return [
            str(self.records[e.report_id]["summary"])
            for e in self.journal
            if isinstance(e, ev.ReportPublished) and e.lane == f"system:{lane}"
        ]


def _values(argv: Sequence[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def _event_of(c: Command) -> ev.Event:
    if isinstance(c, Emit):
        return c.event
    if isinstance(c, PublishReport):
        return ev.ReportPublished(lane=c.lane, report_id=c.report_id, report_kind=c.kind)
    if isinstance(c, HoldLane):
        return ev.LaneHeld(lane=c.lane, reason=c.reason, remedy=c.remedy)  # as the ledger does
    assert isinstance(c, ReleaseLane)
    return ev.LaneReleased(lane=c.lane, reason=c.reason)


def starts(cmds: Sequence[Command]) -> list[StartTurn]:
    return [c for c in cmds if isinstance(c, StartTurn)]


def waits(cmds: Sequence[Command]) -> list[WaitUntil]:
    return [c for c in cmds if isinstance(c, WaitUntil)]
