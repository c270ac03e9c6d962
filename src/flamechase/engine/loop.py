"""The control loop: collect what finished -> record it -> ask the flow -> start what it wants.

Everything generic about a run lives here or in the modules it composes: admission against
budgets, rests between a lane's turns, holds and usage pauses, signals, crash recovery, the
source lock, places, the blob store, measurements and the journal (through the `Ledger`, the
single writer). A flow is asked what should happen (`decide`) after every change and is told
what happened (`evolve`, inside each transaction); it never does anything itself.

The loop waits on events (a job ended, a rest or pause is over, a flow's `WaitUntil`, a budget
deadline, a signal), never on a fixed poll. Turns run on an `Executor`; the loop only sees
jobs go out and results come back.
"""

# long file: what is left is the cycle itself (asking the flow, dispatching, admitting and
# starting turns, recording what finished): every step reads and changes the same loop state
# (jobs, dirs, the disk gate, budget, the failover book, ledger, the stop and finish flags),
# which a module of its own would have to be handed whole and hand back. The run's ending
# is engine/ending.py, a resumed session's record opening.py, a turn end's failover failover.py.

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from collections.abc import Callable

from flamechase import events as ev
from flamechase.engine import (
    diskfull,
    ending,
    failover,
    faults,
    opening,
    portwatch,
    turnfiles,
)
from flamechase.engine.admission import BudgetTracker
from flamechase.engine.checks import Checks, Progress
from flamechase.engine.clock import Clock, RealClock
from flamechase.engine.diskgate import DiskGate
from flamechase.engine.ending import FAILED_HINT, STOPPED_HINT, RunEnd
from flamechase.engine.executor import Executor, LocalExecutor, TurnResult
from flamechase.engine.flowcode import FlowCode, hear_signals
from flamechase.engine.jobs import Done, Jobs, Offload, TurnDone
from flamechase.engine.ledger import Ledger, Observer
from flamechase.engine.notices import notice_event
from flamechase.engine.prepare import Prepared
from flamechase.engine.scheduling import TurnBuilder, slot_of
from flamechase.engine.setup import RunDirs
from flamechase.errors import (
    EXIT_FAILED,
    ControlPathViolation,
    DiskFull,
    FlamechaseError,
    FlowCodeError,
    FlowError,
)
from flamechase.flow import commands as cm
from flamechase.fsutil import atomic_write
from flamechase.procs import Reaper
from flamechase.store import home, ports
from flamechase.workspace.diskuse import disk_use
from flamechase.workspace.reuse import CopyPool

__all__ = ["Engine", "Observer"]

# Rounds of `decide` -> instant commands a single change may take before the flow is called
# stuck (each round must journal something, or the flow is asking for what it already has).
SETTLE_ROUNDS = 1000


class Engine:
    def __init__(
        self,
        prep: Prepared,
        observer: Observer | None = None,
        *,
        executor: Executor | None = None,
        clock: Clock | None = None,
        fault_hook: Callable[[str], None] | None = None,
        offload: Offload | None = None,
    ) -> None:
        self.prep = prep
        self.flow = prep.flow
        self.observer = observer
        self.clock: Clock = clock or RealClock()
        self.executor = executor or LocalExecutor(prep.backends_by_text())
        # Crash-test hook: called with a label between store operations.
        self.fault_hook = fault_hook or faults.env_hook()
        self.offload = offload or asyncio.to_thread
        self.stopping = 0  # 1 after the first signal, 2 after the second
        # Every call into the flow's code: in a worker thread, so a signal is still heard.
        self.code = FlowCode(prep.flow)
        self.code.grace = prep.params.kill_grace
        self.checks = Checks(prep.flow.name, prep.agents, ())
        self.progress = Progress(prep.flow.name)
        # Which of a role's alternatives takes its next turn (engine/failover).
        self.failover = failover.Book(
            {role: [s.text for s in specs] for role, specs in prep.choices.items()}
        )
        self.wake = asyncio.Event()
        self.reaper = Reaper()
        self.run_id = ""
        # Set once the run is open (see `_session`); None before, for the error paths.
        self._ledger: Ledger | None = None
        self._budget: BudgetTracker | None = None
        self._jobs: Jobs | None = None
        self.builder: TurnBuilder
        self.dirs: RunDirs
        self.disk: DiskGate
        self._finish: cm.FinishRun | None = None
        self._budget_said = False
        self._stop_said = 0
        self._running_said = False
        self._cut_sent = False
        self.ports = portwatch.PortNotices()

    def _fault(self, label: str) -> None:
        if self.fault_hook is not None:
            self.fault_hook(label)

    def stop(self) -> None:
        """What a signal does: the first stops new turns, the second cuts those under way."""
        self.stopping += 1
        self.wake.set()

    # ---- the run -------------------------------------------------------------------------

    async def run(self) -> RunEnd:
        try:
            opened = opening.open_run(self.prep, self.code, self.clock, self.observer, self._fault)
        except Exception as exc:
            self.code.close()
            if diskfull.is_disk_full(exc):
                raise DiskFull(diskfull.message(home.runs_dir())) from exc
            raise
        self.run_id = opened.run_id
        restore = hear_signals(self.code, asyncio.get_running_loop(), self.stop)
        session = 0
        try:
            session = opened.ledger.writer.open_session(os.getpid(), self.prep.recorded_agents())
            return await self._session(opened, session)
        except FlowCodeError as exc:
            await self._cut_all()
            return self._flow_broke(exc, opened)
        except ControlPathViolation as exc:
            await self._cut_all()
            return self._end("failed", str(exc))
        except FlamechaseError as exc:
            if diskfull.is_disk_full(exc):
                return await self._disk_full(opened)
            await self._cut_all()
            return self._end("failed", str(exc))
        except Exception as exc:
            if diskfull.is_disk_full(exc):
                return await self._disk_full(opened)
            await self._cut_all()
            with contextlib.suppress(Exception):
                self._end("failed", "internal error; see the traceback")
            raise
        except BaseException:
            await self._cut_all()
            with contextlib.suppress(Exception):
                self._end("failed", "internal error; see the traceback")
            raise
        finally:
            restore()
            with contextlib.suppress(Exception):
                await self.executor.close()
            with contextlib.suppress(Exception):
                if session:
                    opened.ledger.writer.close_session(session)
            with contextlib.suppress(Exception):
                opened.reader.close()
            with contextlib.suppress(Exception):
                opened.ledger.close()
            with contextlib.suppress(Exception):
                # Kept measurement copies are this engine's (their manifests are in memory):
                # the disk they hold is given back with the lock, not left for `gc`.
                CopyPool.remove(opened.layout.pool)
            ports.let_go(opened.run_id)  # its lanes' blocks, claimed on the machine
            opened.lock.release()
            self.code.close()

    def _flow_broke(self, exc: FlowCodeError, opened: opening.Opened) -> RunEnd:
        """The flow's code raised, or never returned: the run ends as the error says, with
        the flow's traceback kept in the run directory and named in the one line."""
        message = str(exc)
        if exc.traceback:
            path = opened.layout.flow_traceback
            with contextlib.suppress(OSError):
                atomic_write(path, exc.traceback.encode("utf-8", "replace"))
                message += f"; its traceback: {path}"
        end = self._end(exc.status, message)
        return dataclasses.replace(end, traceback=exc.traceback, abandoned=self.code.abandoned)

    async def _disk_full(self, opened: opening.Opened) -> RunEnd:
        """End the run on a full disk: cut what runs, record `failed` if there is room to."""
        message = diskfull.message(opened.layout.root)
        with contextlib.suppress(Exception):
            await self._cut_all()
        try:
            return self._end("failed", message)
        except Exception:  # no room even for that: status shows the run stopped, resumable
            return RunEnd(self.run_id, "failed", EXIT_FAILED, message)

    async def _session(self, opened: opening.Opened, session: int) -> RunEnd:
        prep = self.prep
        self._ledger = opened.ledger
        if opened.fresh:
            try:
                opening.create(self.ledger, prep, opened)
            except FlowCodeError:  # the flow broke before its run was made: made without it
                opening.create(self.ledger, prep, opened, flow=False)
                raise
        else:
            opening.load(self.ledger, prep, opened.reader)
        self._budget = opening.budget_of(prep, opened.reader, self.clock)
        self.builder = TurnBuilder(prep, opened.layout, opened.reader, opened.run_id, self.code)
        self.dirs = RunDirs(prep, opened.layout, opened.reader, self.ledger)
        self.disk = DiskGate(prep.budget.disk, lambda: disk_use(self.dirs.layout.root))
        self._jobs = Jobs(self.executor, self.wake, self.code, self.offload)
        self._watch_flow(opened)
        if not opened.fresh:
            opening.recover(self.ledger, opened.reader, self.budget)
            if prep.choices:
                self.failover.replay(opening.turn_events(opened.reader))
            opening.resumed(self.ledger, prep, opened.reader, session, self.budget)
        # What a session records before its first turn is one commit (one disk flush, not
        # one per write): its notices, its directories' identities, a revised objective and
        # `running`, all of it or none of it.
        with self.ledger.tx():
            for notice in prep.notices:
                self.ledger.journal(notice_event(notice))
            self.dirs.make()
            if prep.revised:
                self.ledger.writer.update_run(
                    task=prep.objective, task_fingerprint=prep.task_fingerprint
                )
                self.ledger.journal(
                    ev.ObjectiveRevised(
                        task_fingerprint=prep.task_fingerprint, objective=prep.objective
                    )
                )
            self.ledger.writer.update_run(status="running", last_error=None)
        end = await self._drive()
        await self.reaper.settle()
        return end

    def _watch_flow(self, opened: opening.Opened) -> None:
        """What the flow's commands are checked against (its lanes, what the run did), and
        when a call into its code must give up (budget.duration)."""
        self.checks = Checks.of_run(
            self.flow.name, self.prep.agents, self.ledger.lanes, opened.reader
        )
        self.ledger.seen = self.checks.see
        clock, budget = self.clock, self.budget

        def left() -> float | None:
            deadline = budget.duration_deadline()
            return None if deadline is None else deadline - clock.monotonic()

        self.code.deadline = left

    @property
    def ledger(self) -> Ledger:
        assert self._ledger is not None
        return self._ledger

    @property
    def budget(self) -> BudgetTracker:
        assert self._budget is not None
        return self._budget

    @property
    def jobs(self) -> Jobs:
        assert self._jobs is not None
        return self._jobs

    # ---- ending ----------------------------------------------------------------------------

    def _end(self, status: str, message: str, *, hint: str = "", again: bool = False) -> RunEnd:
        """Record how the run ended (engine/ending), through this loop's ledger."""
        return ending.record(
            self.run_id,
            self._ledger,
            self._budget,
            getattr(self, "dirs", None),  # None when the run ended while opening
            self.prep.workspace,
            status,
            message,
            hint=hint,
            again=again,
            fold=self.code.broken is None,
        )

    async def _cut_all(self) -> None:
        if self._jobs is None:
            return
        await self.jobs.cut_all()
        for done in await self.jobs.drain(timeout=30):
            with contextlib.suppress(Exception):
                self._record(done)

    # ---- the loop --------------------------------------------------------------------------

    async def _drive(self) -> RunEnd:
        while True:
            for done in self.jobs.take_done():
                self._record(done)
            if self.stopping > self._stop_said:
                # Said at once, before anything else: whoever pressed Ctrl-C is waiting.
                self._stop_said = self.stopping
                self.ledger.say(
                    ev.Stopping(cut=self.stopping >= 2, under_way=len(self.jobs.turns()))
                )
            await self._hard_stops()
            commands = self._settle()
            deferred, wake_at = self._dispatch(commands)
            self.progress.round(
                (self.ledger.last_seq, self.jobs.started + self.jobs.taken),
                commands,
                self.clock.time(),
            )
            spent = self.budget.spent(self.jobs.counted_turns())
            if spent and not self._budget_said:
                self._budget_said = True
                self.ledger.say(ev.BudgetSpent(key=spent, budget=self.budget.report()))
            if not self.jobs.busy():
                end = self._idle_end(commands, deferred)
                if end is not None:
                    return end
            deadline = self.budget.duration_deadline()
            if deadline is not None and deadline > self.clock.monotonic():
                wake_at.append(deadline - self.clock.monotonic() + self.clock.time())
            await self._sleep(wake_at)

    def _idle_end(self, commands: list[cm.Command], deferred: bool) -> RunEnd | None:
        """Nothing under way: does the run end now, and how?"""
        if self.stopping:
            return self._end("stopped", "stopped by a signal", hint=STOPPED_HINT)
        if self._finish is not None:
            f = self._finish
            hint = FAILED_HINT.format(run=self.run_id) if f.status == "failed" else ""
            return self._end(f.status, f.reason, hint=hint, again=f.resumes)
        if deferred:
            return None
        spent = self.budget.spent()
        if spent is not None:
            return self._end(
                "finished",
                f"budget {spent} is spent",
                hint=f"to go on, resume with a larger -p budget.{spent}=…",
            )
        if self.disk.refused:  # all that is left waits on copies budget.disk refused
            return self._end(
                "finished",
                self.disk.reason(),
                hint="to go on, free disk with `flamechase gc`, or resume with a larger "
                "-p budget.disk=…",
            )
        if not any(isinstance(c, cm.WaitUntil) for c in commands):
            raise FlowError(
                f"flow {self.flow.name} asked for nothing more and did not end the "
                "run (a flow bug): its last commands were "
                f"{[type(c).__name__ for c in commands] or 'none'}"
            )
        return None

    def _copy_refused(self, c: cm.MakePlace) -> bool:
        """budget.disk: a new copy past it is not made (said once); turns that need no new
        copy go on (engine/diskgate). A copy that must wait is asked for again later. A kept
        copy brought back grows nothing: it is set aside for this place and made."""
        if not self.jobs.making(c.name) and self.dirs.reserve(c):
            return False
        verdict = self.disk.verdict(c, copying=self.jobs.copying())
        if verdict == "make":
            return False
        if verdict == "refuse":
            self.budget.disk_over = self.disk.over
            said = self.disk.notice()
            if said is not None:
                self.ledger.say(said)
        return True

    async def _hard_stops(self) -> None:
        crossed = self.budget.crossed()
        hard = self.stopping >= 2 or (crossed is not None and not self.prep.budget.graceful)
        if hard and self.jobs.turns() and not self._cut_sent:
            self._cut_sent = True
            await self.jobs.cut_all()

    async def _sleep(self, wake_at: list[float]) -> None:
        now = self.clock.time()
        timeout = min((max(0.0, t - now) for t in wake_at), default=3600.0)
        self.wake.clear()
        if self.jobs.any_done():
            return
        await self.clock.wait(self.wake, min(timeout, 3600.0))

    # ---- asking the flow -------------------------------------------------------------------

    def _decide(self) -> list[cm.Command]:
        """`decide`, its commands checked against the flow's declarations and the run."""
        assert self.ledger.state is not None
        commands = self.code.decide(self.ledger.state, self.clock.time())
        self.checks.check(commands, self._standing)
        return commands

    def _standing(self, place: str) -> str:
        if self.dirs.has_place(place):
            return "made"
        if self.jobs.making(place):
            return "making"
        return "dropped" if place in self.checks.dropped else "unknown"

    def _settle(self) -> list[cm.Command]:
        """Ask `decide` until it wants nothing done at once; its last answer."""
        for _ in range(SETTLE_ROUNDS):
            commands = self._decide()
            instant = [c for c in commands if isinstance(c, cm.INSTANT)]
            if not instant:
                return commands
            before = self.ledger.last_seq
            with self.ledger.tx():
                for c in instant:
                    self._do_instant(c)
            if self.ledger.last_seq == before:
                raise FlowError(
                    f"flow {self.flow.name} keeps asking for what it already has "
                    f"({type(instant[0]).__name__}); a flow bug"
                )
        raise FlowError(
            f"flow {self.flow.name} does not settle: {SETTLE_ROUNDS} rounds of "
            "commands after one change"
        )

    def _do_instant(self, c: cm.Command) -> None:
        if isinstance(c, cm.PublishReport):
            self.ledger.publish(c.lane, c.report_id, c.record, c.kind, c.artifacts)
        elif isinstance(c, cm.HoldLane):
            self.ledger.hold(c.lane, c.reason, c.remedy)
        elif isinstance(c, cm.ReleaseLane):
            self.ledger.release(c.lane, c.reason)
        elif isinstance(c, cm.Emit):
            self.ledger.journal(c.event)

    # ---- starting what the flow wants --------------------------------------------------------

    def _dispatch(self, commands: list[cm.Command]) -> tuple[bool, list[float]]:
        """Start what is not under way; (whether an admissible turn waits, wake times)."""
        deferred = False
        wake_at: list[float] = []
        self.disk.round()
        # Drops first: a program or turn started in the same round must not be jailed with
        # the dropped place to hide, which is removed under it as its jail is set up.
        for c in sorted(commands, key=lambda c: not isinstance(c, cm.DropPlace)):
            if isinstance(c, cm.FinishRun):
                self._finish = self._finish or c
            elif isinstance(c, cm.WaitUntil):
                wake_at.append(c.at)
            elif not self.dirs.ready(c):
                continue  # a place it uses is still being made: asked again once it is
            elif isinstance(c, cm.MakePlace):
                if not self._copy_refused(c):
                    self.jobs.make_place(c, self.dirs)
            elif isinstance(c, cm.Measure | cm.Run):
                self.jobs.measure(c, self.dirs.measure_job(c, self.builder), self.dirs)
            elif isinstance(c, cm.Freeze):
                self.jobs.freeze(c, self.dirs)
            elif isinstance(c, cm.DropPlace) and self.dirs.has_place(c.name):
                # Recorded gone first, removed after: a crash in between leaves a stray copy,
                # never a recorded place whose files are missing (which a resume refuses).
                path = self.dirs.forget_place(c.name)
                self.disk.dropped()
                with self.ledger.tx():
                    self.ledger.place_dropped(c.name)
                    self.ledger.writer.set_meta("control_paths", self.dirs.guard.to_json())
                if self.dirs.keep(path):
                    # No job whose end wakes the loop: the flow is asked again at once.
                    deferred = True
                    wake_at.append(self.clock.time())
                else:
                    self.jobs.remove(path, self.dirs)
        # A dropped snapshot not taken by a copy asked for in this round goes (workspace/reuse).
        for path in self.dirs.pool.evict():
            self.jobs.remove(path, self.dirs)
        if self.stopping or self._finish is not None:
            return deferred, wake_at
        for c in commands:
            if isinstance(c, cm.StartTurn) and self.dirs.ready(c):
                waiting = self._admit(c)
                if waiting is None:
                    self._start(c)
                elif waiting > 0:
                    deferred = True
                    wake_at.append(waiting)
        return deferred, wake_at

    def _admit(self, c: cm.StartTurn) -> float | None:
        """None: start now. 0: not now (busy, held, budget). >0: admissible at that time."""
        slot = slot_of(c)
        if self.jobs.has_turn(slot):
            return 0
        row = self.ledger.lanes.get(c.lane or "")
        if row is not None and row.held:
            return 0
        if (
            self.budget.admits(slot=slot, counted=c.counted, inflight=self.jobs.counted_turns())
            is not None
        ):
            return 0
        now = self.clock.time()
        later = self.dirs.not_before(slot, row, now)
        choice = self.failover.choice(c.role, now)
        if choice is not None and choice.agent is None and choice.until is not None:
            later = max(later, choice.until)  # every alternative in a window: the lane waits
        if later > now:
            return later
        return None

    def _start(self, c: cm.StartTurn) -> None:
        self.dirs.guard.verify()
        slot = slot_of(c)
        running = c.lane is not None and not self._running_said
        attempt = self.ledger.next_attempt(slot, c.number)
        assert self.ledger.state is not None
        choice = self.failover.choice(c.role, self.clock.time())
        agent = None
        if choice is not None and choice.agent is not None:
            agent = self.prep.choices[c.role][choice.index]
        planned = self.builder.build(
            c,
            attempt=attempt,
            objective=self.prep.objective,
            flow_state=self.ledger.state,
            lanes=self.dirs.lane_rows(),
            places=self.dirs.places(),
            agent=agent,
        )
        self.budget.reserved.discard(slot)
        # Not flushed to disk (a turn starting is bookkeeping a machine crash may lose without
        # harm: the next durable commit carries it, else the turn was never started), and
        # the run's first lane turn says the lanes run in the same commit (a resumed engine
        # says it again).
        with self.ledger.tx(durable=False):
            if running:
                self.ledger.journal(ev.RunRunning(lanes=list(self.ledger.lanes)))
            if choice is not None and agent is not None:
                moved = self.failover.switch(c.lane, c.role, c.number, agent.text, choice)
                if moved is not None:
                    self.ledger.journal(moved)
            self.ledger.turn_started(
                planned.started,
                slot=slot,
                io_dir=str(planned.io_dir),
                acks=planned.acks,
                token=planned.token,
                counted=c.counted,
            )
        self._running_said = self._running_said or running
        self.jobs.start_turn(planned, c, self.dirs)

    # ---- recording what finished ----------------------------------------------------------------

    def _record(self, done: Done) -> None:
        self._fault("collect")
        self.dirs.guard.verify()  # before every write: nothing read through a swapped path
        if isinstance(done, TurnDone):
            self._turn_done(done)
        else:
            done.record(self.ledger)

    def _turn_done(self, done: TurnDone) -> None:
        r: TurnResult = done.result
        grace = self.prep.params.kill_grace
        for _pgid, token in r.spawned:
            self.reaper.later(token, r.since, grace)
        self.reaper.later(done.planned.token, r.since, grace)
        forget = self.dirs.swept(done.planned.token, self.reaper)
        self.dirs.rested(done.planned.slot, self.clock.time(), done.command.lane is not None)
        event = self.failover.turn_ended(
            done.command.role, done.planned.job.agent, done.event(), self.clock.time()
        )
        counted = done.command.counted and isinstance(event, ev.TurnValid | ev.TurnFailed)
        if isinstance(event, ev.TurnInterrupted | ev.LanePaused) and done.command.counted:
            self.budget.reserved.add(done.planned.slot)
        with self.ledger.tx():
            self.budget.add(
                counted=counted,
                cost=r.usage.cost_usd,
                output_tokens=r.usage.output_tokens,
                input_tokens=r.usage.input_tokens,
            )
            who = done.command.lane or f"role {done.command.role}"
            block = portwatch.block_of(done.planned.job.request.env)
            for notice in self.ports.of(who, block, r.ports_outside, r.own_netns):
                self.ledger.journal(notice)
            self.ledger.turn_ended(
                event,
                slot=done.planned.slot,
                backend=done.planned.job.agent,
                started=r.started,
                ended=r.ended,
                io_dir=str(done.planned.io_dir),
                place=done.command.place,
                error=done.error,
            )
            self.ledger.writer.update_run(active_seconds=self.budget.active_seconds())
            if forget:
                self.ledger.writer.forget_procs(forget)
            self._instants_in_tx()
        turnfiles.settle(done.planned.io_dir, valid=isinstance(event, ev.TurnValid))
        if r.flow_error:  # recorded as failed, and the run stops on the flow's bug
            raise FlowCodeError(f"flow {self.flow.name}'s {r.error}", r.flow_error)

    def _instants_in_tx(self) -> None:
        """Inside the turn's transaction: what the flow owes for it lands with it."""
        for _ in range(SETTLE_ROUNDS):
            assert self.ledger.state is not None
            instant = [c for c in self._decide() if isinstance(c, cm.INSTANT)]
            before = self.ledger.last_seq
            for c in instant:
                self._do_instant(c)
            if not instant or self.ledger.last_seq == before:
                return
