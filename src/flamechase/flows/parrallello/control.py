"""The control plane in the user's tree (`-p control_dir=CONTROL`): at each block end, the
plan and each front's contract, verdicts, tickets and baseline as files under CONTROL/,
written by `gitpoint control` (one commit of its own when the tree is git).

Everything is taken from the flow's state, never from a file in an agent's place: what a
team reviews in git is what the runtime decided, not what an agent wrote."""

from __future__ import annotations

import json
from typing import Any

from flamechase.flow import Command, Run, runtime_module
from flamechase.flows.parrallello import runtime as rt
from flamechase.flows.parrallello.state import FrontState, PState

__all__ = ["commands", "files_of", "ran", "release", "result", "snapshot"]


def _json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"


def _front_files(f: FrontState) -> dict[str, str]:
    contract = {
        "targets": f.contract,
        "lead_decisions": list(f.decisions),
        "recalibrations": list(f.recalibrations),
    }
    baseline = {"prep": f.prep.model_dump(mode="json"), "opened": f.opened, "frozen": f.frozen}
    return {
        f"{f.id}/contract.json": _json(contract),
        f"{f.id}/verdicts.json": _json([r.model_dump(mode="json") for r in f.history]),
        f"{f.id}/tickets.json": _json([t.model_dump(mode="json") for t in f.tickets]),
        f"{f.id}/baseline.json": _json(baseline),
    }


def files_of(state: PState) -> dict[str, str]:
    """Relative path (under CONTROL/) -> text, from the run's state alone."""
    out = {"plan.json": _json(state.plan.model_dump(mode="json") if state.plan else None)}
    for f in state.fronts.values():
        out.update(_front_files(f))
    return out


def snapshot(state: PState, front: str, block: int) -> PState:
    """The control plane owed after `front`'s block `block` ended, frozen now (a later one
    replaces it; nothing when the control plane is off)."""
    if not state.knobs.control_dir:
        return state
    n = state.controls + 1
    due = {
        "key": rt.key("-", "control", 0, str(n)),
        "message": f"parrallello {state.run_id}: control plane after {front}'s block {block}",
        "data": json.dumps(files_of(state), sort_keys=True),
    }
    return state.replace(controls=n, control_due=due)


def commands(state: PState) -> list[Command]:
    """The Run writing the owed control plane into the tree, as `gitpoint control`."""
    due, where = state.control_due, state.knobs.control_dir
    if due is None or not where:
        return []
    argv = runtime_module(
        "flamechase.tools.gitpoint",
        "control",
        "--dir",
        where,
        "--data",
        due["data"],
        "--message",
        due["message"],
    )
    k = due["key"]
    return [Run(key=k, place=rt.SOURCE, argv=argv, timeout=600, label=rt.label_of(k))]


def ran(state: PState, k: str, receipt: dict[str, Any]) -> PState:
    """Its receipt: the result kept (shown in `status`), the debt settled if it is this one."""
    out = rt.tool_output(receipt, "GITPOINT") or {}
    done = out or {"error": str(receipt.get("error") or "no output")[:300]}
    due = state.control_due
    return state.replace(
        control=done, control_due=None if due is not None and due["key"] == k else due
    )


def result(receipt: dict[str, Any]) -> dict[str, Any]:
    """What `gitpoint` printed (its error when it printed nothing)."""
    return rt.tool_output(receipt, "GITPOINT") or {
        "error": str(receipt.get("error") or "no output")[:300]
    }


def release(state: PState, ok: bool) -> list[Command]:
    """An approved run's final commit tagged (`-p release_tag`), before it finishes."""
    tag = state.knobs.release_tag
    if not tag or state.release is not None or not ok:
        return []
    message = f"parrallello run {state.run_id}: approved"
    argv = runtime_module(
        "flamechase.tools.gitpoint", "release", "--tag", tag, "--message", message
    )
    k = rt.key("-", "release")
    return [Run(key=k, place=rt.SOURCE, argv=argv, timeout=600, label=rt.label_of(k))]
