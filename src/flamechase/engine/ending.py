"""How a run ends: its status and exit code, what its end says (how many turns were valid,
the way out, what it spent), and the one transaction that records it.

The control loop calls `record` with its own ledger (the single writer: nothing here opens
one), once it has decided the run ends; no process of the run survives it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from flamechase import events as ev
from flamechase.engine.admission import BudgetTracker
from flamechase.engine.ledger import Ledger
from flamechase.engine.recovery import sweep_leftovers
from flamechase.engine.setup import RunDirs
from flamechase.errors import EXIT_FAILED, EXIT_HELD, EXIT_OK, EXIT_SIGNAL
from flamechase.events.present import money, plural
from flamechase.store import handover

END_STATUS = {
    "finished": (EXIT_OK, ev.RunFinished),
    "stopped": (EXIT_SIGNAL, ev.RunStopped),
    "failed": (EXIT_FAILED, ev.RunFailed),
    "held": (EXIT_HELD, ev.RunHeld),
}
# The way out of a stop, and of a failure the flow declared (a planning that failed, say):
# the same command refuses to resume a failed run (engine/rerun.py), so it says what does.
STOPPED_HINT = "to go on, run the same command again"
FAILED_HINT = (
    "see what failed: flamechase events {run}; once its cause is fixed, start afresh with "
    "-p resume_mode=fresh"
)


@dataclasses.dataclass(frozen=True, slots=True)
class RunEnd:
    run_id: str
    status: str  # finished | stopped | failed | held
    exit_code: int
    message: str
    # What the user may do about it, for `exec` to say: not journaled, since it holds only
    # for a run that can be resumed (a simulated run's state home is thrown away).
    hint: str = ""
    # The hint is a resume (said only where the flow resumes), not advice of another kind.
    hint_resumes: bool = True
    # The flow's own traceback when its code broke the run (also in the run directory).
    traceback: str = ""
    # The flow's code was left running in a worker thread (it never returned): the process
    # should exit rather than go on beside it.
    abandoned: bool = False
    # What the whole run spent ("Spent $0.25 over 2 turns"): the end's one line says it, since
    # the log's own end line is not printed beside it.
    spent: str = ""


def record(
    run_id: str,
    ledger: Ledger | None,
    budget: BudgetTracker | None,
    dirs: RunDirs | None,
    workspace: Path,
    status: str,
    message: str,
    *,
    hint: str = "",
    again: bool = False,
    fold: bool = True,
) -> RunEnd:
    """Record how the run ended (`ledger` None: it ended before its database was open; `dirs`
    None: before its directories were); no process of this run survives it. A run whose
    counted turns all failed did not finish: it failed, and says so. `fold`: the end event is
    folded into the flow's state (not when its code broke)."""
    resumes = True
    all_failed = False
    if ledger is not None:
        valid, total = ledger.valid_turns()
        if total and not valid and status == "finished":
            status = "failed"
            message += f"; none of its {total} turn{'s' if total != 1 else ''} was valid"
            # More of the same budget would fail the same way: the way out is the agents.
            hint = (
                f"see why the agents failed: flamechase status {run_id} (each lane's "
                f"last error), flamechase events {run_id}"
            )
            resumes = False
            all_failed = True
        elif total:
            message += f"; {valid} of {total} turn{'s' if total != 1 else ''} valid"
    code, kind = END_STATUS[status]
    if ledger is not None:
        tokens = ledger.procs()
        sweep_leftovers([(None, t) for t in tokens])
        with ledger.tx():
            if tokens:
                ledger.writer.forget_procs(tokens)
            ledger.writer.update_run(
                status=status,
                active_seconds=budget.active_seconds() if budget else 0.0,
                last_error=message if status == "failed" else None,
            )
            if dirs is not None:
                ledger.writer.set_meta(handover.TREE_AT_END, _tree_at_end(dirs, workspace))
            ledger.journal(
                kind(
                    message=message,
                    budget=budget.report() if budget else {},
                    valid_turns=valid,
                    all_turns_failed=all_failed,
                    resumes=again and status == "held",
                ),
                fold=fold,
            )
    return RunEnd(run_id, status, code, message, hint, hint_resumes=resumes, spent=_spent(budget))


def _spent(budget: BudgetTracker | None) -> str:
    """What the whole run spent, for the end's one line ("Spent $0.25 over 2 turns")."""
    if budget is None:
        return ""
    return f"Spent {money(budget.spend.cost)} over {plural(budget.spend.turns, 'turn')}"


def _tree_at_end(dirs: RunDirs, workspace: Path) -> dict[str, str]:
    """What the tree holds where candidates would go: `artifacts apply` refuses when the
    user has changed any of it since."""
    packages = dirs.reader.metas(handover.PREFIX)
    paths = {p for pkg in packages.values() for p in handover.touched(pkg)}
    return handover.tree_state(workspace, sorted(paths))
