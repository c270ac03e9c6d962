"""The control loop: the only writer of run state.

take what finished -> decide -> commit in one transaction -> tell the observer -> schedule.

Each collected turn is committed in a single SQLite transaction (turn row, lane counters,
published report, frozen-artifact rows, submission, acknowledgements, events), so a crash at
any instant leaves the turn either recorded or not at all. A turn not recorded is found in
`inflight` on resume: its processes are ended and the same actor takes the turn again with
the same number. The loop waits on events (a turn ended, a lane's rest is over, a budget
deadline, a signal), never on a fixed poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import secrets
import signal
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from flamechase import jail as jails
from flamechase import procs
from flamechase.agents.backend import TurnRequest
from flamechase.engine import inbox as inbox_mod
from flamechase.engine import leaderboard as lb
from flamechase.engine.budget import BudgetTracker, Spend
from flamechase.engine.confinement import lane_jail
from flamechase.engine.layout import RunLayout
from flamechase.engine.planning import plan as run_planning
from flamechase.engine.prepare import Prepared
from flamechase.engine.recovery import sweep_leftovers
from flamechase.engine.turns import TurnOutcome, run_turn
from flamechase.errors import (
    EXIT_FAILED,
    EXIT_HELD,
    EXIT_OK,
    EXIT_SIGNAL,
    ControlPathViolation,
    FlamechaseError,
    SnapshotFailed,
)
from flamechase.flow import LaneDef, LaneView
from flamechase.fsutil import real_dir, write_new
from flamechase.reports import TurnReport, parse_report
from flamechase.store import home
from flamechase.store.blobs import ArtifactRefused, BlobStore
from flamechase.store.db import Reader, Writer, now_iso
from flamechase.workspace.checkpoints import read_checkpoint
from flamechase.workspace.guard import ControlPaths
from flamechase.workspace.locks import SourceLock
from flamechase.workspace.snapshots import clean_partials, snapshot


class Observer(Protocol):
    def event(self, event: dict[str, Any]) -> None: ...


@dataclasses.dataclass(frozen=True, slots=True)
class RunEnd:
    run_id: str
    status: str  # finished | stopped | failed | held
    exit_code: int
    message: str


@dataclasses.dataclass(slots=True)
class LaneState:
    """In-memory mirror of one `lanes` row plus what is under way."""

    d: LaneDef
    workspace: Path
    turns: int = 0
    valid_turns: int = 0
    next_actor: int = 0
    consecutive_failures: int = 0
    held: bool = False
    last_error: str | None = None
    last_status: str | None = None
    paused_until: datetime | None = None
    next_attempt: int = 1
    eligible_at: float = 0.0
    task: asyncio.Task[TurnOutcome] | None = None
    cut: Callable[[], Awaitable[None]] | None = None
    # Of the turn under way:
    number: int = 0
    attempt: int = 0
    role: str = ""
    acks: dict[str, int] = dataclasses.field(default_factory=dict)
    io_dir: Path | None = None


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(5)


class Engine:
    def __init__(self, prep: Prepared, observer: Observer | None = None,
                 *, fault_hook: Callable[[str], None] | None = None) -> None:
        self.prep = prep
        self.flow = prep.flow
        self.params = prep.params
        self.observer = observer
        # Crash-test hook: called with a label between store operations.
        self.fault_hook = fault_hook or _env_fault_hook()
        self.lanes: dict[str, LaneState] = {}
        self.stopping = 0  # 1 after the first signal, 2 after the second
        self.wake = asyncio.Event()
        self._pending: list[dict[str, Any]] = []
        self.submissions: list[dict[str, Any]] = []
        # Agent tokens recorded in `procs` this session, per lane, until their sweep is done.
        self._tokens: dict[str, list[str]] = {}
        self.run_id = ""
        self.layout: RunLayout
        self.writer: Writer
        self.reader: Reader
        self.guard: ControlPaths
        self.budget: BudgetTracker
        self.blobs: BlobStore
        self.plan: dict[str, Any] | None = None

    # ---- writing ---------------------------------------------------------------------------

    def _fault(self, label: str) -> None:
        if self.fault_hook is not None:
            self.fault_hook(label)

    @contextlib.contextmanager
    def _tx(self, *, durable: bool = True) -> Iterator[None]:
        """One transaction; its events reach the observer only after the commit."""
        self._fault("before-commit")
        with self.writer.transaction(durable=durable):
            yield
        self._fault("after-commit")
        pending, self._pending = self._pending, []
        if self.observer is not None:
            for ev in pending:
                self.observer.event(ev)

    def _emit(self, kind: str, lane: str | None = None, actor: str | None = None,
              **payload: Any) -> None:
        self._pending.append(self.writer.event(kind, lane=lane, actor=actor, payload=payload))

    def _say(self, kind: str, lane: str | None = None, actor: str | None = None,
             **payload: Any) -> None:
        with self._tx():
            self._emit(kind, lane, actor, **payload)

    # ---- opening ---------------------------------------------------------------------------

    def _open(self) -> SourceLock:
        prep = self.prep
        runs = home.runs_dir()
        fresh = prep.resume_from is None
        self.run_id = new_run_id() if fresh else prep.resume_from.name  # type: ignore[union-attr]
        lock = SourceLock(home.ensure_private_dir(home.locks_dir()), prep.workspace)
        lock.acquire(self.run_id)
        try:
            home.ensure_private_dir(home.state_home())
            home.ensure_private_dir(runs)
            root = runs / self.run_id
            if fresh:
                root.mkdir(mode=0o700)
            elif root.is_symlink() or not root.is_dir():
                raise ControlPathViolation(f"run directory {root} was replaced or linked; "
                                           "the run cannot be resumed safely")
            self.layout = RunLayout(root)
            self.writer = Writer(self.layout.db)
            os.chmod(self.layout.db, 0o600)
            if fresh:
                self._create(root)
            self.reader = Reader(self.layout.db)
            self.blobs = BlobStore(self.layout.blobs)
        except BaseException:
            lock.release()
            raise
        return lock

    def _create(self, root: Path) -> None:
        prep = self.prep
        lanes = self.flow.lanes(self.params)
        with self._tx():
            self.writer.create_run(
                run_id=self.run_id, flow=self.flow.name, workspace=str(prep.workspace),
                task=prep.objective, fingerprint=prep.task_fingerprint,
                params=self.params.model_dump(mode="json"), budget=prep.budget.to_json(),
                agents={r: s.text for r, s in prep.agents.items()}, run_dir=str(root),
            )
            for pos, lane in enumerate(lanes):
                ws = prep.workspace if lane.in_source else self.layout.lane_workspace(lane.name)
                self.writer.add_lane(lane.name, pos, list(lane.actors), str(ws))
            self._emit("run_created", flow=self.flow.name, workspace=str(prep.workspace),
                       objective=prep.objective, lanes=[ln.name for ln in lanes],
                       agents={r: s.text for r, s in prep.agents.items()},
                       budget=prep.budget.to_json())

    def _make_dirs(self) -> None:
        """Create (idempotently) every lane directory and snapshot, and guard them."""
        lay = self.layout
        guard = ControlPaths()
        for d in (lay.root, lay.lanes, lay.blobs):
            d.mkdir(mode=0o700, exist_ok=True)
            guard.record(d, "dir")
        guard.record(lay.db, "file")
        clean_partials(lay.lanes)
        for st in self.lanes.values():
            name = st.d.name
            for d in (lay.lane_dir(name), lay.artifact_root(name), lay.lane_dir(name) / "turns"):
                d.mkdir(mode=0o700, exist_ok=True)
                guard.record(d, "dir")
            if not st.d.in_source:
                ws = lay.lane_workspace(name)
                if not ws.exists():
                    if st.turns:
                        raise SnapshotFailed(
                            f"the private copy of {name} ({ws}) is gone after {st.turns} turns; "
                            "its work is lost, so the run will not recreate it; start fresh "
                            "with -p resume_mode=fresh"
                        )
                    clean_partials(lay.lane_dir(name))
                    snapshot(self.prep.workspace, ws)
                    self._say("snapshot_made", lane=name, path=str(ws))
                guard.record(ws, "dir")
        stored = self.reader.meta("control_paths")
        if stored is not None:
            # Identities recorded at creation must still hold after a resume.
            ControlPaths.from_json(stored).verify()
        with self._tx():
            self.writer.set_meta("control_paths", guard.to_json())
        self.guard = guard

    def _load(self) -> None:
        defs = {d.name: d for d in self.flow.lanes(self.params)}
        for row in self.reader.lanes():
            d = defs[row["lane"]]
            st = LaneState(d=d, workspace=Path(row["workspace"]), turns=row["turns"],
                           valid_turns=row["valid_turns"], next_actor=row["next_actor"],
                           consecutive_failures=row["consecutive_failures"], held=row["held"],
                           last_error=row["last_error"], last_status=row["last_status"],
                           paused_until=_parse_time(row["paused_until"]))
            attempts = [t["attempt"] for t in self.reader.turns(d.name)
                        if t["number"] == st.turns + 1]
            st.next_attempt = max(attempts, default=0) + 1
            self.lanes[d.name] = st
        run = self.reader.run()
        self.plan = run["plan"]
        spend = self.reader.spend()
        self.budget = BudgetTracker(
            self.prep.budget,
            Spend(turns=int(spend["turns"]), cost=float(spend["cost"]),
                  output_tokens=int(spend["output_tokens"]),
                  input_tokens=int(spend["input_tokens"])),
            float(run["active_seconds"]),
        )
        self.submissions = self.reader.submissions()

    def _recover(self) -> None:
        """End what a crashed engine left running; its cut turns are taken again."""
        leftovers = self.reader.procs()
        if leftovers:
            sweep_leftovers([(p["pgid"], p["token"]) for p in leftovers])
        inflight = self.reader.inflight()
        with self._tx():
            for row in inflight:
                st = self.lanes.get(row["lane"])
                self.writer.insert_turn(
                    lane=row["lane"], number=row["number"], attempt=row["attempt"],
                    role=row["role"], backend=row["backend"], status="interrupted",
                    started=row["started"], ended=now_iso(), duration=0.0,
                    error="cut: the engine stopped before the turn was collected",
                    io_dir=row["io_dir"],
                )
                self.writer.end_inflight(row["lane"])
                if st is not None:
                    st.next_attempt = row["attempt"] + 1
                self._emit("turn_interrupted", row["lane"], row["role"], turn=row["number"],
                           attempt=row["attempt"], reason="engine crash or kill")
            if leftovers:
                self.writer.forget_procs([p["token"] for p in leftovers])

    # ---- the run -----------------------------------------------------------------------------

    async def run(self) -> RunEnd:
        lock = self._open()
        session = 0
        loop = asyncio.get_running_loop()
        installed = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, self._on_signal)
                installed.append(sig)
        try:
            session = self.writer.open_session(os.getpid(), {
                r: s.text for r, s in self.prep.agents.items()})
            self._load()
            resumed = self.prep.resume_from is not None
            if resumed:
                self._recover()
                stored = self.reader.run()
                changes: dict[str, Any] = {"budget": self.prep.budget.to_json(),
                                           "params": self.params.model_dump(mode="json")}
                agents_now = {r: s.text for r, s in self.prep.agents.items()}
                if agents_now != stored["agents"]:
                    changes["agents"] = agents_now
                with self._tx():
                    self.writer.update_run(**changes)
                    self._emit("run_resumed", session=session, agents=agents_now,
                               changed_agents={r: [stored["agents"].get(r), t]
                                               for r, t in agents_now.items()
                                               if stored["agents"].get(r) != t},
                               budget=self.prep.budget.to_json(), revised=self.prep.revised)
            for notice in self.prep.notices:
                self._say("notice", message=notice)
            self._make_dirs()
            if self.prep.revised and not self.flow.planner:
                with self._tx():
                    self.writer.update_run(task=self.prep.objective,
                                           task_fingerprint=self.prep.task_fingerprint)
                    self._emit("objective_revised",
                               task_fingerprint=self.prep.task_fingerprint)
            needs_plan = self.flow.planner and (self.plan is None or self.prep.revised)
            if needs_plan and not await self._plan():
                if self.stopping:
                    return self._finish("stopped", EXIT_SIGNAL, "stopped by a signal")
                if self.budget.spent() is not None:
                    return self._finish("finished", EXIT_OK,
                                        f"budget {self.budget.spent()} is spent")
                return self._finish("failed", EXIT_FAILED, self._last_error)
            with self._tx():
                self.writer.update_run(status="running", last_error=None)
                self._emit("run_running", lanes=list(self.lanes))
            end = await self._drive()
            await procs.settle()
            return end
        except ControlPathViolation as exc:
            await self._cut_all("control path violation")
            return self._finish("failed", EXIT_FAILED, str(exc))
        except FlamechaseError as exc:
            await self._cut_all(str(exc))
            return self._finish("failed", EXIT_FAILED, str(exc))
        except BaseException:
            await self._cut_all("engine error")
            with contextlib.suppress(Exception):
                self._finish("failed", EXIT_FAILED, "internal error; see the traceback")
            raise
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
            with contextlib.suppress(Exception):
                if session:
                    self.writer.close_session(session)
            with contextlib.suppress(Exception):
                self.reader.close()
            with contextlib.suppress(Exception):
                self.writer.close()
            lock.release()

    _last_error = ""

    def _finish(self, status: str, code: int, message: str) -> RunEnd:
        self._sweep_all()
        with self._tx():
            self.writer.update_run(status=status, active_seconds=self.budget.active_seconds(),
                                   last_error=message if status == "failed" else None)
            self._emit(f"run_{status}", message=message, budget=self.budget.report())
        return RunEnd(self.run_id, status, code, message)

    def _sweep_all(self) -> None:
        """No process of this run survives it: end every recorded agent's leftovers."""
        rows = self.reader.procs()
        sweep_leftovers([(p["pgid"], p["token"]) for p in rows])
        if rows:
            self.writer.forget_procs([p["token"] for p in rows])

    async def _cut_all(self, why: str) -> None:
        for st in self.lanes.values():
            if st.cut is not None:
                with contextlib.suppress(Exception):
                    await st.cut()
        tasks = [st.task for st in self.lanes.values() if st.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=30)
            for st in self.lanes.values():
                if st.task is not None and st.task.done():
                    with contextlib.suppress(Exception):
                        self._collect(st, st.task.result())

    # ---- planning ------------------------------------------------------------------------------

    async def _plan(self) -> bool:
        planner = self.flow.planner
        assert planner is not None
        run = self.reader.run()
        n = int(run["replans"]) + 1
        ws = self.layout.planning_workspace(n)
        for d in (ws.parent.parent, ws.parent, self.layout.planning_attempt(n, 1).parent):
            d.mkdir(exist_ok=True, mode=0o700)  # private like the run directory (not umask)
        clean_partials(ws.parent)
        snapshot(self.prep.workspace, ws)
        lanes = [st.d for st in self.lanes.values()]
        base = self._request(planner, "", 0, 1, ws, self.layout.planning_attempt(n, 1), "",
                             {"FLAMECHASE_LANES": ",".join(ln.name for ln in lanes)})
        self._say("planning_started", actor=planner, revision=n, workspace=str(ws))

        def on_attempt(attempt: int, out: TurnOutcome) -> None:
            with self._tx():
                self.writer.insert_turn(
                    lane="", number=n, attempt=attempt, role=planner,
                    backend=self.prep.agents[planner].text,
                    status="plan_valid" if out.status == "valid" else "plan_failed",
                    started=out.started, ended=out.ended, duration=out.duration,
                    report=out.result, error=out.error, exit_code=out.exit_code,
                    **_usage_cols(out),
                    io_dir=str(self.layout.planning_attempt(n, attempt)),
                )
                self.budget.add(counted=False, cost=out.usage.cost_usd,
                                output_tokens=out.usage.output_tokens,
                                input_tokens=out.usage.input_tokens)
                self._emit("plan_attempt", actor=planner, attempt=attempt,
                           status=out.status, error=out.error, cost_usd=out.usage.cost_usd,
                           output_tokens=out.usage.output_tokens,
                           duration=round(out.duration, 3))

        result = await run_planning(
            flow=self.flow, backend=self.prep.backends[planner], base=base, lanes=lanes,
            objective=self.prep.objective, workspace_map=self._workspace_map(),
            attempt_dir=lambda k: self.layout.planning_attempt(n, k),
            on_spawn=self._spawn_hook(""), on_attempt=on_attempt,
            admit=lambda: self.budget.spent() is None and not self.stopping,
            first_attempt=1 + max((t["attempt"] for t in self.reader.turns("")
                                   if t["number"] == n), default=0),
        )
        if result.plan is None:
            self._last_error = (f"planning failed after {len(result.errors)} fresh sessions: "
                                + " | ".join(result.errors))
            return False
        with self._tx():
            released = [st.d.name for st in self.lanes.values() if st.held]
            self.writer.update_run(plan=result.plan, replans=n, task=self.prep.objective,
                                   task_fingerprint=self.prep.task_fingerprint)
            for st in self.lanes.values():
                st.held, st.consecutive_failures = False, 0
                self.writer.update_lane(st.d.name, held=0, held_reason=None,
                                        consecutive_failures=0)
            self.plan = result.plan
            self._emit("planned", actor=planner, revision=n, plan=result.plan,
                       released=released)
            if n > 1:
                self._emit("objective_replanned", revision=n,
                           task_fingerprint=self.prep.task_fingerprint, released=released)
        return True

    # ---- scheduling ------------------------------------------------------------------------------

    def _spawn_hook(self, lane: str) -> Callable[[int, str], None]:
        def hook(pgid: int, token: str) -> None:
            # Recorded before the agent can do anything durable: a resume can end it.
            self.writer.record_spawn(lane, pgid, token)
            self._tokens.setdefault(lane, []).append(token)

        return hook

    def _request(self, role: str, lane: str, number: int, attempt: int, workspace: Path,
                 io_dir: Path, prompt: str, env: dict[str, str]) -> TurnRequest:
        p = self.params
        return TurnRequest(
            run_id=self.run_id, run_dir=self.layout.root, flow=self.flow.name, role=role,
            lane=lane, turn=number, attempt=attempt, workspace=workspace, io_dir=io_dir,
            prompt=prompt, env=env, turn_timeout=p.turn_timeout,
            silence_timeout=p.silence_timeout, kill_grace=p.kill_grace,
        )

    def _workspace_map(self) -> dict[str, Any]:
        lay = self.layout
        return {
            "run_id": self.run_id,
            "source": str(self.prep.workspace),
            "lanes": {
                st.d.name: {
                    "workspace": str(st.workspace),
                    "ownership": ("original-source-and-integration" if st.d.in_source
                                  else "private-snapshot"),
                    "actors": list(st.d.actors),
                    "artifact_root": str(lay.artifact_root(st.d.name)),
                    "checkpoint": str(lay.checkpoint(st.d.name)),
                }
                for st in self.lanes.values()
            },
        }

    def board(self) -> dict[str, Any]:
        declared = None
        direction = getattr(self.params, "direction", None)
        metric = getattr(self.params, "metric", None)
        if getattr(self.params, "evaluator", None) and direction:
            declared = {"metric": metric or "score", "direction": direction}
        return lb.board(self.submissions, declared,
                        evaluator=bool(getattr(self.params, "evaluator", None)))

    def _schedulable(self, st: LaneState, now: float) -> bool:
        if st.task is not None or st.held or now < st.eligible_at:
            return False
        return not (st.paused_until is not None and datetime.now(UTC) < st.paused_until)

    def _start(self, st: LaneState) -> None:
        self.guard.verify()
        lane = st.d.name
        number, attempt = st.turns + 1, st.next_attempt
        role = st.d.actors[st.next_actor % 2]
        io_dir = self.layout.turn_dir(lane, number, attempt)
        real_dir(io_dir)  # the lane may have planted a link here: never write through it
        batch = (inbox_mod.unread(self.reader, lane, list(self.lanes))
                 if self.flow.shares_reports else inbox_mod.Batch([], {}))
        inbox_path = io_dir / "inbox.json"
        # An input for the agent, rebuilt if the turn is taken again: no fsync needed.
        write_new(inbox_path, json.dumps(batch.deliveries, ensure_ascii=False,
                                         indent=1).encode("utf-8"))
        identity = {"run_id": self.run_id, "lane": lane, "turn": number, "attempt": attempt}
        view = LaneView(
            run_id=self.run_id, flow=self.flow.name, objective=self.prep.objective, lane=st.d,
            role=role, actor="a" if st.next_actor % 2 == 0 else "b", turn=number,
            attempt=attempt, mission=self.flow.mission(self.plan, lane),
            consecutive_failures=st.consecutive_failures, last_error=st.last_error,
            inbox=batch.deliveries, leaderboard=self.board(), workspace=st.workspace,
            workspace_map=self._workspace_map(), report_path=io_dir / "report.json",
            inbox_path=inbox_path, artifact_root=self.layout.artifact_root(lane),
            checkpoint_path=self.layout.checkpoint(lane), checkpoint_identity=identity,
        )
        env = {
            "FLAMECHASE_INBOX": str(inbox_path),
            "FLAMECHASE_ARTIFACTS": str(self.layout.artifact_root(lane)),
            "FLAMECHASE_CHECKPOINT": str(self.layout.checkpoint(lane)),
            "FLAMECHASE_LANES": ",".join(self.lanes),
        }
        request = self._request(role, lane, number, attempt, st.workspace, io_dir,
                                self.flow.lane_prompt(view), env)
        if self.prep.jail_mode != "off" and not st.d.in_source:
            spec = self._lane_jail(st, io_dir, role)
            jails.ready(spec)
            env["TMPDIR"] = str(spec.tmp)
            request = dataclasses.replace(request, jail=spec)
        backend = self.prep.backends[role]
        with self._tx(durable=False):
            self.writer.begin_turn(lane=lane, number=number, attempt=attempt, role=role,
                                   backend=self.prep.agents[role].text, io_dir=str(io_dir),
                                   acks=batch.acks)
            self._emit("turn_started", lane, role, turn=number, attempt=attempt,
                       backend=self.prep.agents[role].text,
                       delivered=[d["report_id"] for d in batch.deliveries])
        st.number, st.attempt, st.role = number, attempt, role
        st.acks, st.io_dir = batch.acks, io_dir

        def set_cut(cut: Callable[[], Awaitable[None]] | None) -> None:
            st.cut = cut

        def recover() -> Any:
            data = read_checkpoint(self.layout.checkpoint(lane), identity)
            if data is None:
                return None
            try:
                return parse_report(data)
            except ValueError:
                return None

        st.task = asyncio.ensure_future(run_turn(
            backend, request, on_spawn=self._spawn_hook(lane), validate=parse_report,
            repair_prompt=lambda reason: self.flow.repair_prompt(view, reason),
            recover=recover, finalize=lambda r: self._finalize(st, r),
            register_cut=set_cut,
        ))
        st.task.add_done_callback(lambda _t: self.wake.set())

    def _lane_jail(self, st: LaneState, io_dir: Path | None, role: str) -> jails.JailSpec:
        cli = self.prep.agents[role].cli if role in self.prep.agents else None
        return lane_jail(self.prep.jail_mode, self.layout, st.d.name, lanes=self.lanes,
                         place=st.workspace, turn_dir=io_dir, cli=cli, role=role,
                         source=self.prep.workspace, state_home=home.state_home())

    async def _finalize(self, st: LaneState, report: TurnReport) -> tuple[dict[str, Any],
                                                                          str | None]:
        """Freeze the deliverable and measure the submission, before the commit."""
        extra: dict[str, Any] = {"artifacts": []}
        if report.deliverable is not None:
            refs = [(a.path, a.description) for a in report.deliverable.artifacts]
            try:
                frozen = await asyncio.to_thread(
                    self.blobs.freeze, self.layout.artifact_root(st.d.name), refs)
            except ArtifactRefused as exc:
                return {}, f"invalid deliverable: {exc}"
            extra["artifacts"] = [
                {"path": f.path, "description": f.description, "size": f.size,
                 "sha256": f.sha256, "blob": str(self.blobs.blob_path(f.sha256))}
                for f in frozen
            ]
        sub = report.submission
        evaluator = getattr(self.params, "evaluator", None)
        if sub is not None and evaluator:
            self.guard.verify()  # the evaluator runs in the lane's workspace: still ours?
            env, spec = None, None
            if self.prep.jail_mode != "off" and not st.d.in_source:
                # It runs the lane's code: confined like the lane's turns.
                spec = self._lane_jail(st, None, "evaluator")
                jails.ready(spec)
                env = dict(os.environ, TMPDIR=str(spec.tmp))
            receipt = await lb.run_evaluator(
                evaluator, st.workspace, self.params.metric_pattern,  # type: ignore[attr-defined]
                float(getattr(self.params, "evaluator_timeout", 600.0)), env=env, jail=spec)
            measured = receipt["value"]
            declared = self.board()["primary"]
            problem = receipt["error"]
            if problem is None and declared and (
                    lb.metric_key(sub.metric) != declared["metric"]
                    or sub.direction != declared["direction"]):
                problem = (f"submission is for {sub.metric}/{sub.direction}, the run measures "
                           f"{declared['metric']}/{declared['direction']}")
            if problem is None and measured is not None and not lb.claim_matches(
                    sub.value, measured):
                problem = f"claimed {sub.value:g} but the evaluator measured {measured:g}"
            extra["receipt"] = receipt
            extra["measured"] = measured
            extra["verified"] = problem is None
            extra["unverified_reason"] = problem
        elif sub is not None:
            extra["measured"], extra["verified"], extra["receipt"] = None, False, None
            extra["unverified_reason"] = "no evaluator configured; value is the agent's claim"
        return extra, None

    # ---- collecting ------------------------------------------------------------------------------

    def _collect(self, st: LaneState, out: TurnOutcome) -> None:
        lane, role = st.d.name, st.role
        actor = "a" if st.role == st.d.actors[0] else "b"
        backend = self.prep.agents[role].text
        counted = out.status in ("valid", "failed")
        hold: str | None = None
        self._fault("collect")
        self.guard.verify()  # before every write: nothing read through a swapped path lands
        with self._tx():
            report_dict = out.result.model_dump(mode="json") if out.status == "valid" else None
            turn_id = self.writer.insert_turn(
                lane=lane, number=st.number, attempt=st.attempt, role=role, backend=backend,
                status=out.status, started=out.started, ended=out.ended,
                duration=round(out.duration, 3), report=report_dict, error=out.error,
                exit_code=out.exit_code, recovered_from_checkpoint=int(
                    out.recovered_from_checkpoint), io_dir=str(st.io_dir),
                **_usage_cols(out),
            )
            self._fault("collect-mid")
            self.budget.add(counted=counted, cost=out.usage.cost_usd,
                            output_tokens=out.usage.output_tokens,
                            input_tokens=out.usage.input_tokens)
            turn_payload = {"turn": st.number, "attempt": st.attempt, "status": out.status,
                            "duration": round(out.duration, 3),
                            "cost_usd": round(out.usage.cost_usd, 6),
                            "output_tokens": out.usage.output_tokens,
                            "transcript": str(out.transcript) if out.transcript else None}
            if out.status == "valid":
                report: TurnReport = out.result
                report_id = f"{lane}.{st.number:04d}.{secrets.token_hex(3)}"
                record = {
                    "report_id": report_id, "run_id": self.run_id, "lane": lane, "role": role,
                    "actor": actor, "turn": st.number, "attempt": st.attempt, "at": out.ended,
                    "recovered_from_checkpoint": out.recovered_from_checkpoint,
                    **report_dict,  # type: ignore[dict-item]
                    "artifacts": out.extra.get("artifacts", []),
                }
                seq = self.writer.publish_report(report_id=report_id, lane=lane,
                                                 turn_id=turn_id, kind="report", record=record)
                for a in out.extra.get("artifacts", []):
                    self.writer.add_artifact(report_id, a["path"], a["sha256"], a["size"],
                                             a["description"])
                self.writer.acknowledge(lane, st.acks)
                st.turns += 1
                st.valid_turns += 1
                st.consecutive_failures = 0
                st.last_error = None
                st.last_status = report.status
                if report.status == "blocked" and self.flow.holds_lanes:
                    hold = f"reported blocked: {report.summary[:300]}"
                self._emit("turn_valid", lane, role, report_id=report_id,
                           report_status=report.status, summary=report.summary[:500],
                           recovered_from_checkpoint=out.recovered_from_checkpoint,
                           acknowledged=st.acks, repairs=out.repairs, **turn_payload)
                self._emit("report_published", lane, role, report_id=report_id, seq=seq,
                           report_status=report.status,
                           artifacts=[{k: a[k] for k in ("path", "sha256", "size")}
                                      for a in out.extra.get("artifacts", [])])
                if report.submission is not None:
                    self._submit(st, report, report_id, out)
            elif out.status == "failed":
                report_id = f"{lane}.{st.number:04d}.{secrets.token_hex(3)}"
                record = {
                    "report_id": report_id, "run_id": self.run_id, "lane": lane, "role": role,
                    "actor": actor, "turn": st.number, "attempt": st.attempt, "at": out.ended,
                    "status": "turn_failed", "summary": (out.error or "turn failed")[:2000],
                    "changes": [], "evidence": [], "tests": [], "risks": [],
                    "next_step": "Retry with the alternating partner or report a concrete "
                                 "blocker.",
                    "deliverable": None, "submission": None, "artifacts": [],
                }
                self.writer.publish_report(report_id=report_id, lane=lane, turn_id=turn_id,
                                           kind="turn_failed", record=record)
                st.turns += 1
                st.consecutive_failures += 1
                st.last_error = (out.error or "turn failed")[:2000]
                st.last_status = "turn_failed"
                if self.flow.holds_lanes and st.consecutive_failures >= 2:
                    hold = f"{st.consecutive_failures} failed turns in a row: {st.last_error}"
                self._emit("turn_failed", lane, role, error=st.last_error, report_id=report_id,
                           exit_code=out.exit_code, repairs=out.repairs, **turn_payload)
            elif out.status == "limited":
                st.paused_until = out.resets_at
                st.next_attempt = st.attempt + 1
                self._emit("lane_paused", lane, role, until=_fmt_time(out.resets_at),
                           reason=out.error, **turn_payload)
            else:  # interrupted
                st.next_attempt = st.attempt + 1
                self._emit("turn_interrupted", lane, role, reason=out.error, **turn_payload)
            if counted:
                st.next_actor = 1 - (st.next_actor % 2)
                st.next_attempt = 1
            if hold is not None:
                st.held = True
                self._emit("lane_held", lane, reason=hold)
            self.writer.update_lane(
                lane, turns=st.turns, valid_turns=st.valid_turns, next_actor=st.next_actor,
                consecutive_failures=st.consecutive_failures, held=int(st.held),
                held_reason=hold if st.held else None, last_error=st.last_error,
                last_status=st.last_status, paused_until=_fmt_time(st.paused_until))
            self.writer.end_inflight(lane)
            self.writer.update_run(active_seconds=self.budget.active_seconds())
            # Forget agents whose leftovers are swept, so the table stays as small as the
            # turns under way (a resume sweeps whatever is still listed).
            pending = procs.pending_tokens()
            swept = [t for t in self._tokens.get(lane, []) if t not in pending]
            if swept:
                self.writer.forget_procs(swept)
                self._tokens[lane] = [t for t in self._tokens[lane] if t in pending]
        st.task, st.cut, st.io_dir = None, None, None
        st.eligible_at = time.monotonic() + self.params.rest_seconds

    def _submit(self, st: LaneState, report: TurnReport, report_id: str,
                out: TurnOutcome) -> None:
        sub = report.submission
        assert sub is not None
        before = self.board()["best"]
        row: dict[str, Any] = {"report_id": report_id, "lane": st.d.name, "at": out.ended,
               "metric": sub.metric, "direction": sub.direction, "claimed": sub.value,
               "measured": out.extra.get("measured"),
               "verified": bool(out.extra.get("verified")),
               "receipt": out.extra.get("receipt"), "best": False}
        self.submissions.append(row)
        after = self.board()["best"]
        became_best = after is not None and (before is None
                                             or after["report_id"] != before["report_id"])
        row["best"] = became_best
        self.writer.add_submission(
            report_id=report_id, lane=st.d.name, at=out.ended, metric=sub.metric,
            direction=sub.direction, claimed=sub.value, measured=row["measured"],
            verified=row["verified"], receipt=row["receipt"], best=became_best)
        self._emit("candidate_submitted", st.d.name, st.role, report_id=report_id,
                   metric=sub.metric, direction=sub.direction, claimed=sub.value,
                   measured=row["measured"], verified=row["verified"],
                   unverified_reason=out.extra.get("unverified_reason"))
        if became_best:
            self._emit("candidate_best_updated", st.d.name, st.role, report_id=report_id,
                       metric=sub.metric, direction=sub.direction, value=after["value"]
                       if after else None)

    # ---- the loop ------------------------------------------------------------------------

    def _on_signal(self) -> None:
        self.stopping += 1
        self.wake.set()

    async def _drive(self) -> RunEnd:
        cut_sent = False
        budget_said = False
        while True:
            # 1. Collect every finished turn.
            for st in self.lanes.values():
                if st.task is not None and st.task.done():
                    self._collect(st, st.task.result())
            inflight = [st for st in self.lanes.values() if st.task is not None]
            # 2. Hard stops: second signal, or a crossed budget with graceful=false.
            crossed = self.budget.crossed()
            hard = self.stopping >= 2 or (crossed is not None and not self.prep.budget.graceful)
            if hard and inflight and not cut_sent:
                cut_sent = True
                for st in inflight:
                    if st.cut is not None:
                        await st.cut()
            # 3. Decide whether anything new may start.
            spent = self.budget.spent(len(inflight))
            if spent and not budget_said:
                budget_said = True
                self._say("budget_spent", key=spent, budget=self.budget.report())
            if not inflight:
                if self.stopping:
                    return self._finish("stopped", EXIT_SIGNAL, "stopped by a signal")
                if spent is not None or self.budget.spent() is not None:
                    key = spent or self.budget.spent()
                    return self._finish("finished", EXIT_OK, f"budget {key} is spent")
                if all(st.held for st in self.lanes.values()):
                    reasons = "; ".join(f"{n}: {s.last_error or s.last_status}"
                                        for n, s in self.lanes.items())
                    return self._finish("held", EXIT_HELD, f"every lane is held ({reasons})")
            now = time.monotonic()
            if not self.stopping and spent is None:
                for st in self.lanes.values():
                    if self._schedulable(st, now) and self.budget.spent(
                            sum(1 for s in self.lanes.values() if s.task is not None)) is None:
                        self._start(st)
            # 4. Sleep until something can change.
            wake_at = [st.eligible_at for st in self.lanes.values()
                       if st.task is None and not st.held and st.eligible_at > now]
            for st in self.lanes.values():
                if st.task is None and st.paused_until is not None:
                    wake_at.append(now + max(0.0, (st.paused_until - datetime.now(UTC))
                                             .total_seconds()))
            deadline = self.budget.duration_deadline()
            if deadline is not None:
                wake_at.append(deadline)
            timeout = max(0.0, min(wake_at) - time.monotonic()) if wake_at else 3600.0
            self.wake.clear()
            if any(st.task is not None and st.task.done() for st in self.lanes.values()):
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), timeout=min(timeout, 3600.0))


def _usage_cols(out: TurnOutcome) -> dict[str, Any]:
    u = out.usage
    return {"cost_usd": u.cost_usd, "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens, "cache_read_tokens": u.cache_read_tokens,
            "cache_write_tokens": u.cache_write_tokens}


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _fmt_time(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _env_fault_hook() -> Callable[[str], None] | None:
    """FLAMECHASE_FAULT=label:N kills this process at the Nth time `label` is reached.

    For crash tests only: SIGKILL, so nothing gets to clean up.
    """
    spec = os.environ.get("FLAMECHASE_FAULT")
    if not spec:
        return None
    label, _, nth = spec.partition(":")
    target = int(nth or "1")
    seen = {"n": 0}

    def hook(at: str) -> None:
        if label in (at, "any"):
            seen["n"] += 1
            if seen["n"] == target:
                os.kill(os.getpid(), signal.SIGKILL)

    return hook
