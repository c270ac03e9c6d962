"""The source's checkpoint before the first wave: the runtime commits and tags the tree
(`pre-parrallello-<date>`), its receipt becomes `checkpoint_made`, and a failed one that
`-p checkpoint=require` asked for ends the run; `off` skips it from the start."""

from __future__ import annotations

from typing import Any

from flamechase import events as ev
from flamechase.flow import Command, Emit, FinishRun
from flamechase.flows.parrallello import events as fev
from flamechase.flows.parrallello import runtime as rt
from flamechase.flows.parrallello.state import PState

__all__ = ["failed", "off", "ran", "take"]


def off(state: PState) -> PState:
    """`-p checkpoint=off`: the run says once that it took none."""
    skipped = fev.CheckpointMade(skipped="off (-p checkpoint=off)")
    return state.replace(
        checkpoint={"skipped": skipped.skipped}, outbox=state.outbox.add(Emit(skipped))
    )


def take(state: PState) -> Command:
    """Commit and tag the source before the first wave (never pushed)."""
    date = (state.created_at or "1970-01-01")[:10]
    return rt.checkpoint(
        f"pre-parrallello-{date}",
        f"checkpoint before parrallello run {state.run_id}",
        require=state.knobs.checkpoint == "require",
    )


def failed(state: PState) -> Command | None:
    """The run's end when the checkpoint failed: no front opens on a tree the runtime could
    not checkpoint."""
    if state.checkpoint is None or "error" not in state.checkpoint:
        return None
    why = state.checkpoint["error"]
    return FinishRun("failed", f"the checkpoint of the source failed: {why}")


def ran(state: PState, event: ev.Ran) -> PState:
    """The checkpoint's receipt: a tag and commit, a skip (not a repository), or an error."""
    out = rt.tool_output(event.receipt, "GITPOINT") or {}
    if event.receipt.get("exit_code") not in (0, None) or not out or "error" in out:
        reason = out.get("error") or out.get("skipped") or event.receipt.get("error")
        done: dict[str, Any] = {"error": str(reason or "no output")[:300]}
    elif "skipped" in out:
        done = {"skipped": out["skipped"]}
    else:
        done = {
            "tag": out.get("tag"),
            "commit": out.get("commit"),
            "committed": out.get("committed"),
        }
    made = fev.CheckpointMade(
        tag=done.get("tag"),
        commit=done.get("commit"),
        skipped=done.get("skipped"),
        error=done.get("error"),
    )
    return state.replace(checkpoint=done, outbox=state.outbox.add(Emit(made)))
