"""Running the same command again after a run ended: resume it only when that can do something.

A stopped or crashed run always resumes. A run that ended (finished, failed, held) is picked up
again only when this command changes what it ended on: `--resume` says so outright, a revised
objective (`continue` with a changed TASK.md) re-plans and releases held lanes, a larger bound
gives a spent budget room, `--refresh` runs other flow code, and a run its flow held so that
the same command picks it up (`FinishRun.resumes`: the flow looks again). Otherwise resuming
would end it again at once (a failed planning stays failed), so the command is refused in one
line: what the run ended with, and exactly what to type (resume with what, or start afresh).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from flamechase import events as ev
from flamechase.budgets import Budget
from flamechase.errors import RunAlreadyEnded, StoreError
from flamechase.store.db import DB_NAME
from flamechase.store.reader import Reader

__all__ = ["ENDED", "check_rerun", "spent_key", "way_on"]

# The statuses a run ends with; any other (stopped, running after a crash, starting) resumes.
ENDED = ("finished", "failed", "held")
_END_KINDS = (ev.RunFinished.kind, ev.RunFailed.kind, ev.RunHeld.kind)
_MESSAGE_LIMIT = 400


def spent_key(budget: Budget, spend: Mapping[str, Any], active_seconds: float) -> str | None:
    """The first bound of `budget` that `spend` (as `Reader.spend()` gives it) has used up."""
    if budget.duration is not None and active_seconds >= budget.duration:
        return "duration"
    if budget.turns is not None and int(spend["turns"]) >= budget.turns:
        return "turns"
    if budget.cost is not None and float(spend["cost"]) >= budget.cost:
        return "cost"
    if budget.output_tokens is not None and int(spend["output_tokens"]) >= budget.output_tokens:
        return "output_tokens"
    return None


class _Ending(NamedTuple):
    message: str
    spend: Mapping[str, Any]
    active: float
    # Held so that the same command picks it up again (`FinishRun.resumes`).
    again: bool
    # Every counted turn failed (`RunEnded.all_turns_failed`).
    all_failed: bool


def _ended_with(run_dir: Path, row: Mapping[str, Any]) -> _Ending:
    """How the run `row` ended, from its last end event."""
    try:
        with Reader(run_dir / DB_NAME) as r:
            last = r.last_event(_END_KINDS)
            spend = r.spend()
    except StoreError:
        return _Ending(str(row.get("last_error") or ""), {}, 0.0, False, False)
    payload = (last or {}).get("payload", {})
    message = str(payload.get("message") or row.get("last_error") or "")
    again = (last or {}).get("kind") == ev.RunHeld.kind and payload.get("resumes") is True
    if "all_turns_failed" in payload:
        all_failed = payload["all_turns_failed"] is True
    else:
        # Runs recorded before the flag: the end message engine/loop.py wrote for it.
        all_failed = "; none of its " in message and message.endswith(" was valid")
    active = float(row.get("active_seconds") or 0.0)
    return _Ending(message, spend, active, again, all_failed)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 1] + "…"


def check_rerun(
    run_dir: Path,
    row: Mapping[str, Any],
    budget_given: Mapping[str, object],
    explicit: bool,
    revised: bool,
    refresh: bool,
) -> None:
    """Refuse (RunAlreadyEnded) to resume the ended run `row` when nothing given changes it:
    `budget_given` the bounds this command sets, `explicit` --resume, `revised` a changed
    objective, `refresh` other flow code asked for."""
    status = str(row.get("status") or "")
    if status not in ENDED or explicit or revised:
        return
    if refresh:
        return
    message, spend, active, again, _ = _ended_with(run_dir, row)
    if again:
        return  # held until the flow looks again: the same command asks it to
    stored = Budget.from_json(row.get("budget") or {})
    budget_now = stored.merged(budget_given)
    spent = spent_key(stored, spend, active) if spend else None
    if spent is not None and spent_key(budget_now, spend, active) is None:
        return  # more room where the budget ran out: the run goes on
    go_on = _go_on(stored, spent, status, message, "resuming it would end the same way; ")
    raise RunAlreadyEnded(
        f"run {row['id']} on this task already {status}: {_short(message) or 'no message'}; "
        f"{go_on}start afresh with -p resume_mode=fresh"
    )


def _go_on(stored: Budget, spent: str | None, status: str, message: str, failed: str) -> str:
    """The first half of what to type after a run that ended: `failed` for a failure (a run
    whose every turn failed is one, budget spent or not: more of it would fail the same way)."""
    if status == "failed":
        return failed
    if spent is not None:
        bound = getattr(stored, spent)
        return f"to go on, run it again with a larger -p budget.{spent}=… (it had {bound:g}), or "
    if status == "held":
        return "do that, or " if "to go on" in message else "to go on, release what held it, or "
    return failed


def way_on(run_dir: Path, row: Mapping[str, Any]) -> str:
    """What to type to go on from the run `row` (`status`'s `next:`), "" while it runs: the
    same words the same command's refusal would say (check_rerun)."""
    status = str(row.get("status") or "")
    if status == "stopped":
        return "to go on, run the same command again"
    if status not in ENDED:
        return ""
    message, spend, active, again, all_failed = _ended_with(run_dir, row)
    if again:
        return "run the same command again: the flow looks again at what held it"
    stored = Budget.from_json(row.get("budget") or {})
    spent = spent_key(stored, spend, active) if spend else None
    failed = "once the cause of its failure is fixed, " if status == "failed" else ""
    if status == "failed" and all_failed:
        failed = "see each lane's last error; once its agents work, "
    go_on = _go_on(stored, spent, status, message, failed)
    return f"{go_on}start afresh with -p resume_mode=fresh"
