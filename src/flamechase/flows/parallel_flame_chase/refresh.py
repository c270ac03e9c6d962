"""Explorer lanes kept fresh (`lane_refresh=rebase`): before a lane 2..N turn, when lane 1
has had a valid turn since the lane's base, the runtime program `flamechase.tools.lanerefresh`
carries the lane copy's own changes onto lane 1's current tree (a three-way merge).
Conflicting files keep the lane's version and are named in that lane's next prompt.

Lane 1's tree is read only between its turns: after each valid lane-1 turn, before its next
starts, the runtime records the tree as a commit (a "snap", kept as lane 1's `Fresh`), and
lanes are refreshed onto that commit, never onto the tree a lane-1 turn may be half-way
through writing (a turn that then fails would have reached the lanes).

Pure: the flow keeps one `Fresh` per lane; `commands` asks for the programs, `ran` folds
their answers, `waiting` names the lanes whose turn must wait for one.

A lane's refresh keeps its key until answered (the key names the refresh, not lane 1's count
when asked): lane 1 moving on while it runs must not start a second one beside it, which
would merge from the base the first replaces and, answered first, be undone by the first's
answer (the lane set back, and the answered key asked again).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from flamechase import events as ev
from flamechase.flow import Command, FlowState, Run, runtime_module
from flamechase.flow.lanes import Lane

PREFIX = "lanerefresh:"
SNAP = "snap"  # lane 1's tree recorded between its turns
_TOOL = "flamechase.tools.lanerefresh"


class Fresh(FlowState):
    """Where a lane copy stands: the commit of lane 1's tree it is based on, and how many
    valid lane-1 turns that tree had seen (`at`)."""

    base: str = ""  # empty until recorded
    at: int = 0  # the lane-1 count last asked for (a failed refresh is retried after the next)
    on: int = 0  # the lane-1 count of the tree the copy is on
    conflicts: tuple[str, ...] = ()  # of the last refresh, named in `for_turn`'s prompt
    since: int = 0  # the lane-1 count the copy was on before the last refresh
    for_turn: int = 0
    error: str | None = None
    remake: int = 0  # which copy of the lane this is (a dropped copy's remake records anew)
    seen: int = 0  # the lane-1 count when the last answer came: the next refresh reads no less
    tried_for: int = 0  # the lane turn the last answer came before (one refresh per turn)


def _key(lane: str, what: str, at: int, copy: int) -> str:
    return f"{PREFIX}{lane}:{what}:{at}:{copy}"


def dropped(fresh: Mapping[str, Fresh], lane: str) -> dict[str, Fresh]:
    """`fresh` after the lane's copy was dropped: its remake is recorded as a new base (a
    flow that remakes a lane's copy, such as a mission's redirect, must not refresh the new
    copy from the old one's base)."""
    old = fresh.get(lane) or Fresh()  # a record still running is about the old copy too
    return {**fresh, lane: Fresh(remake=old.remake + 1)}


def wanted(fresh: Fresh | None, lane1: Fresh | None, next_turn: int) -> str | None:
    """What a private lane needs before its next turn: "record", "refresh" or nothing
    (`lane1`: the last recorded tree of lane 1's)."""
    if fresh is None:
        return "record"
    if not fresh.base:  # a record that failed: this lane goes on unrefreshed
        return None if fresh.error else "record"
    # One refresh per lane turn: lane 1 moving on during it waits for the lane's next turn
    # (waiting for lane 1 to stand still would starve a lane beside a quick lane 1).
    if fresh.tried_for == next_turn or lane1 is None or not lane1.base:
        return None
    if fresh.error and fresh.at >= lane1.on:  # failed: tried again onto a newer record
        return None
    return "refresh" if fresh.on < lane1.on else None


def _lane_1(lanes: Sequence[Lane]) -> Lane | None:
    return next((ln for ln in lanes if ln.in_source), None)


def between_turns(lanes: Mapping[str, Lane]) -> bool:
    """Whether lane 1's tree may be copied now: no lane-1 turn is writing it (a lane copy
    remade mid-run, as a mission's redirect asks, waits for the turn under way)."""
    return not any(ln.in_source and ln.busy for ln in lanes.values())


def snap_owed(
    fresh: Mapping[str, Fresh], lanes: Sequence[Lane], lane1_valid: int, source: str
) -> Lane | None:
    """Lane 1, when its tree must be recorded before its next turn starts: it had a valid
    turn since the last record, and there are lanes to refresh onto it."""
    one = _lane_1(lanes)
    if not source or one is None or one.busy or all(ln.in_source for ln in lanes):
        return None
    snap = fresh.get(one.name)
    return one if lane1_valid > (snap.at if snap is not None else 0) else None


def _at(fresh: Fresh | None, what: str, made_at: int) -> int:
    """The lane-1 count a program's key names: for a record, the tree the copy was made from;
    for a refresh, the least lane-1 count of the tree it reads (lane 1 moved past the copy's
    `at`, and may have moved on before the last answer). Fixed until the program's answer:
    lane 1 recorded again meanwhile changes the commit a re-ask names, never the key."""
    if what == "record" or fresh is None:
        return made_at
    return max(fresh.at + 1, fresh.seen)


def commands(
    fresh: Mapping[str, Fresh],
    lanes: Sequence[Lane],
    places: Mapping[str, str],
    lane1_valid: int,
    source: str,
    made_at: Mapping[str, int],
) -> list[Command]:
    out: list[Command] = []
    if not source:  # a run begun before lane refresh existed: its lanes go on as they are
        return out
    one = snap_owed(fresh, lanes, lane1_valid, source)
    if one is not None:
        out.append(
            Run(
                key=_key(one.name, SNAP, lane1_valid, 0),
                place=one.place,
                lane=None,
                argv=runtime_module(_TOOL, "record", "--tree", source),
                jailed=False,
                label="a record of lane 1's tree for the lanes' refreshes",
            )
        )
    lane1 = fresh.get(one.name) if (one := _lane_1(lanes)) is not None else None
    for lane in lanes:
        # A lane waiting (for its submission's measurement) keeps its copy as submitted: the
        # measurement copy is made from it, and must hold the lane's work and nothing else.
        if lane.in_source or lane.busy or lane.waiting or lane.place not in places:
            continue
        f = fresh.get(lane.name)
        what = wanted(f, lane1, lane.turns + 1)
        copy = places[lane.place]
        if what == "record":
            argv = runtime_module(_TOOL, "record", "--tree", copy)
        elif what == "refresh" and f is not None and lane1 is not None:
            argv = runtime_module(
                _TOOL, "refresh", "--base", f.base, "--lane", lane.name, "--copy", copy,
                "--onto-commit", lane1.base, "--at", str(lane1.on),
            )  # fmt: skip
        else:
            continue
        out.append(
            Run(
                key=_key(
                    lane.name,
                    what,
                    _at(f, what, made_at.get(lane.name, 0)),
                    f.remake if f is not None else 0,
                ),
                place=lane.place,
                # No lane: the runtime's own bookkeeping of a copy, not one of the lane's
                # programs (it binds none of the lane's ports and is no lane measurement).
                lane=None,
                argv=argv,
                reads=("source",),
                jailed=False,  # writes the runtime's own repository under the run directory
                label=f"{lane.name}'s refresh onto lane 1's tree",
            )
        )
    return out


def waiting(
    fresh: Mapping[str, Fresh], lanes: Sequence[Lane], lane1_valid: int, source: str
) -> set[str]:
    """Lanes whose next turn waits: lane 1 until its tree is recorded, a private lane until
    its copy is recorded or refreshed."""
    if not source:
        return set()
    one = _lane_1(lanes)
    lane1 = fresh.get(one.name) if one is not None else None
    out = {
        ln.name
        for ln in lanes
        if not ln.in_source and wanted(fresh.get(ln.name), lane1, ln.turns + 1)
    }
    owed = snap_owed(fresh, lanes, lane1_valid, source)
    return out | ({owed.name} if owed is not None else set())


def _output(receipt: Mapping[str, Any]) -> dict[str, Any]:
    for line in reversed(str(receipt.get("output") or "").splitlines()):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return {}


def ran(
    fresh: Mapping[str, Fresh], event: ev.Ran, next_turn: int, lane1_valid: int
) -> dict[str, Fresh] | None:
    """`fresh` with a refresh program's answer folded in (None: not one of ours)."""
    if not event.key.startswith(PREFIX):
        return None
    lane, what, at_s, copy_s = event.key[len(PREFIX) :].rsplit(":", 3)
    out = _output(event.receipt)
    old = fresh.get(lane) or Fresh()
    at = int(at_s)
    if what == SNAP:
        if at <= old.at:
            return dict(fresh)
        if event.receipt.get("error") or "error" in out or not out.get("base"):
            # Lane 1 goes on; the lanes stay on the tree recorded before, until the next.
            err = str(out.get("error") or event.receipt.get("error") or "no result")
            return {**fresh, lane: old.replace(at=at, error=err)}
        return {**fresh, lane: old.replace(base=str(out["base"]), at=at, on=at, error=None)}
    if int(copy_s) != old.remake:  # an answer about a copy since dropped
        return dict(fresh)
    if (old.base or old.error) and (what == "record" or at <= old.at):
        # Older than the answer folded last (a journal of a run whose refreshes overlapped):
        # the copy is where the later one left it.
        return dict(fresh)
    if event.receipt.get("error") or "error" in out or not out.get("base"):
        # The turn goes on the copy as it is; the next valid lane-1 turn tries again.
        err = str(out.get("error") or event.receipt.get("error") or "no result")
        failed = old.replace(at=at, error=err, seen=lane1_valid, tried_for=next_turn)
        return {**fresh, lane: failed}
    conflicts = tuple(str(p) for p in out.get("conflicts") or ()) if what == "refresh" else ()
    since = old.on
    if old.base and old.for_turn == next_turn:
        # A refresh the lane's next turn has not seen yet (lane 1 moved on before that turn
        # started): the turn hears of both, and of the lane-1 turns since the earlier one.
        conflicts = tuple(dict.fromkeys((*old.conflicts, *conflicts)))
        since = old.since
    # The lane-1 count of the commit it was refreshed onto, as the program said it back (a
    # re-ask after lane 1 was recorded again names a newer commit than the key's count).
    said = out.get("at")
    on = said if isinstance(said, int) else at
    new = old.replace(
        base=str(out["base"]),
        at=max(at, on),
        on=on,
        since=since,
        conflicts=conflicts,
        error=None,
        seen=lane1_valid,
        for_turn=next_turn,
        tried_for=next_turn if what == "refresh" else 0,
    )
    return {**fresh, lane: new}


def note(fresh: Fresh | None, turn: int, lane1_turns: Sequence[int] = ()) -> str:
    """The words a lane's prompt gets after a refresh that kept its version of some files:
    which files, and which lane-1 turns changed them (`lane1_turns`: the turn number of each
    valid lane-1 turn, in order)."""
    if fresh is None or fresh.for_turn != turn or not fresh.conflicts:
        return ""
    turns = list(lane1_turns[fresh.since : fresh.on])
    by = (
        f" (lane 1 changed them in its turn{'s' if len(turns) > 1 else ''} "
        + ", ".join(str(t) for t in turns)
        + ")"
        if turns
        else ""
    )
    return (
        "Your copy was refreshed onto lane 1's current tree before this turn. These "
        f"files changed in both{by}; your version was kept, lane 1's is not in your copy — "
        "reconcile them deliberately: " + ", ".join(fresh.conflicts) + ".\n\n"
    )
