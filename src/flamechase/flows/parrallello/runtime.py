"""The runtime's own programs, as `Run` commands: their keys, places, argv and outputs.

Every key is `pll:<front>:<what>:<round>:<who>`, so a receipt finds its way back to the front
and round that asked for it, and a resumed run asks again only for what has no receipt.
Places: `fronts/<F>` is the front's tree (only these programs write it), `builders/<lane>`
each builder's copy, `critics/<F>` the critic's copy, `stages/<F>` where prep stages work.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from flamechase.flow import Run, runtime_module, runtime_shell
from flamechase.flows.parrallello.plan import FrontSpec, PlanSpec

__all__ = ["Key", "front_place", "parse_key", "tool_output"]

SOURCE = "source"
# Where a builder leaves images for the critic, and where the critic finds the contact sheets
# the runtime made of them: never compared, never taken into a front's tree.
SHEETS = ".parrallello/sheets"
SHEETS_MAX, SHEETS_PX = 3, 1600  # the seed's "at most 3 contact sheets (at most 1600 px)"
IGNORES = (
    "**/__pycache__/**",
    "**/*.pyc",
    ".pytest_cache/**",
    ".mypy_cache/**",
    ".ruff_cache/**",
    f"{SHEETS}/**",
)


class Key(NamedTuple):
    front: str
    what: str
    round: int
    who: str


def key(front: str, what: str, rnd: int = 0, who: str = "") -> str:
    return f"pll:{front}:{what}:{rnd}:{who}"


def parse_key(text: str) -> Key | None:
    parts = text.split(":")
    if len(parts) != 5 or parts[0] != "pll" or not parts[3].isdigit():
        return None
    return Key(parts[1], parts[2], int(parts[3]), parts[4])


# What each program is, in words (`Run.label`: the views never show a key).
_WORDS = {
    "release": "the release tag of your tree",
    "control": "the control plane written into your tree",
    "sync": "the copy of front {front}'s tree into builder {who}'s place",
    "csync": "the copy of front {front}'s tree into its critic's place",
    "diff": "the check of builder {who}'s changes against its files in front {front}",
    "cdiff": "the check of the critic's changes to front {front}'s gate",
    "apply": "the taking of builder {who}'s changes into front {front}'s tree",
    "capply": "the taking of the critic's gate changes into front {front}'s tree",
    "tsync": "the copy of front {front}'s tree where the critic's gate change is tried",
    "tapply": "the taking of the critic's gate change into its trial copy of front {front}",
    "fhash": "the check that front {front}'s gate is the one its trial ran",
    "recal": "the taking of front {front}'s recalibrated gate into its tree, between blocks",
    "recalhash": "the freezing of front {front}'s recalibrated gate",
    "stage": "the taking of the staged work into front {front}'s tree",
    "freeze": "the freezing of front {front}'s gate files",
    "hash": "the check that front {front}'s gate files are as frozen",
    "rehash": "the hashing of front {front}'s gate as the critic changed it",
    "baseline": "front {front}'s gate on its baseline",
    "gate": "front {front}'s gate",
    "regate": "front {front}'s gate again, as the critic changed it",
    "reap": "the clean-up of builder {who}'s background jobs",
    "sheets": "the contact sheets the builders of front {front} left, taken to its critic",
    "checkpoint": "a git checkpoint of your tree",
    "integrate": "the landing of front {front} in your tree",
}


def label_of(k: str, detail: str = "") -> str:
    """`k` (a key of `key`) in words: `pll:P1:diff:1:core` is "the check of builder core's
    changes against its files in front P1 (round 1)"; `detail` goes before the round."""
    parsed = parse_key(k)
    if parsed is None:
        return "one of the runtime's programs"
    words = _WORDS.get(parsed.what, "the runtime's {what} for front {front}")
    text = words.format(front=parsed.front, who=parsed.who or "?", what=parsed.what)
    return text + detail + (f" (round {parsed.round})" if parsed.round else "")


def front_label(front: str) -> str:
    return f"front {front}'s tree"


def builder_label(owner: str, front: str) -> str:
    return f"builder {owner}'s copy of front {front}"


def front_place(lane: str) -> str:
    """The front's tree, named after its lane (its id, or a planner's slot)."""
    return f"fronts/{lane}"


def builder_place(lane: str) -> str:
    return f"builders/{lane}"


def critic_place(lane: str) -> str:
    return f"critics/{lane}"


def stage_place(lane: str) -> str:
    return f"stages/{lane}"


def lead_place(lane: str) -> str:
    """The lead's desk: an empty place (a lead is never given the code)."""
    return f"leads/{lane}"


def trial_place(lane: str, recalibration: bool = False) -> str:
    """Where a critic's gate change is run before it is taken (a recalibration's stays there
    until the block ends, when it is taken)."""
    return f"recals/{lane}" if recalibration else f"trials/{lane}"


def tool_output(receipt: dict[str, Any], prefix: str) -> dict[str, Any] | None:
    """The JSON a tool printed on its last `PREFIX {...}` line, if any."""
    for line in reversed(str(receipt.get("output") or "").splitlines()):
        if line.startswith(prefix + " "):
            try:
                data = json.loads(line[len(prefix) + 1 :])
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None


def _sync(*args: str) -> tuple[str, ...]:
    # Isolated (`-I`): they run in trees builders' files reach, where a `flamechase.py` must
    # never shadow the real package.
    return runtime_module("flamechase.tools.treesync", *args)


def owned(front: FrontSpec) -> list[str]:
    return [g for globs in front.owners.values() for g in globs]


def mirror(k: str, place: str, lane: str, other_place: str, other_path: str) -> Run:
    return Run(
        key=k,
        place=place,
        lane=lane,
        argv=_sync("mirror", "--from", other_path),
        reads=(other_place,),
        label=label_of(k),
    )


def compare(
    k: str,
    lane: str,
    other_place: str,
    other_path: str,
    allow: Sequence[str],
    frozen: Sequence[str],
    plan: PlanSpec,
    *,
    apply: bool,
    place: str | None = None,
) -> Run:
    """Judge (or take) what the copy at `other_place` changed, in the front's tree (the
    front lane's place) or in `place`."""
    argv = _sync(
        "apply" if apply else "diff",
        "--from",
        other_path,
        "--allow",
        *allow,
        "--frozen",
        *frozen,
        "--ignore",
        *IGNORES,
        *plan.ignore,
    )
    return Run(
        key=k,
        place=place or front_place(lane),
        lane=lane,
        argv=argv,
        reads=(other_place,),
        label=label_of(k),
    )


def freeze_hash(k: str, front: FrontSpec, lane: str, place: str | None = None) -> Run:
    return Run(
        key=k,
        place=place or front_place(lane),
        lane=lane,
        argv=_sync("hash", "--globs", *front.freeze),
        label=label_of(k),
    )


def gate_command(front: FrontSpec, mode: str) -> str:
    """`GATE --quick|--full [--only ITEMS]`, as the runtime and the builders run it."""
    command = f"{front.gate} --{mode}"
    return command + (f" --only {shlex.quote(front.only)}" if front.only else "")


def gate_full(
    k: str, front: FrontSpec, lane: str, frozen: Mapping[str, str], place: str | None = None
) -> Run:
    """The gate's `--full` run: a yardstick, run in a copy of the front's tree the runtime
    makes for it, with the `frozen` files (path -> SHA-256, as hashed at the freeze) checked
    and read-only (`Run.frozen`): the gate that runs is the one that was hashed, and nothing
    it (or the builders' code it runs) writes reaches the front's tree."""
    command = gate_command(front, "full")
    argv = ("/bin/sh", "-c", command)
    # A performance gate measures alone: the runtime holds the run's lock for it, ahead of
    # any builder's hold (a builder sitting on the lock must not fail another front's gate).
    return Run(
        key=k,
        place=place or front_place(lane),
        lane=lane,
        argv=argv,
        timeout=front.gate_timeout,
        exclusive=front.exclusive,
        frozen=dict(frozen),
        label=label_of(k, f", `{command}`"),
    )


def reap(k: str, place: str, lane: str) -> Run:
    return Run(
        key=k,
        place=place,
        lane=lane,
        argv=runtime_module("flamechase", "job", "reap"),
        timeout=120,
        label=label_of(k),
    )


def sheets(k: str, place: str, lane: str, builders: Sequence[tuple[str, str, str]]) -> Run:
    """At most `SHEETS_MAX` of the images the builders (owner, place, path) left in `SHEETS`,
    decoded, checked and resized by the runtime into the critic's `place` (tools/sheets)."""
    argv = runtime_module(
        "flamechase.tools.sheets",
        "collect",
        "--dir",
        SHEETS,
        "--max",
        str(SHEETS_MAX),
        "--px",
        str(SHEETS_PX),
        "--from",
        *(f"{owner}={path}" for owner, _, path in builders),
    )
    return Run(
        key=k,
        place=place,
        lane=lane,
        argv=argv,
        reads=tuple(p for _, p, _ in builders),
        timeout=300,
        label=label_of(k),
    )


def checkpoint(tag: str, message: str, *, require: bool) -> Run:
    argv = runtime_module(
        "flamechase.tools.gitpoint",
        "checkpoint",
        "--tag",
        tag,
        "--message",
        message,
        *(("--require",) if require else ()),
    )
    k = key("-", "checkpoint")
    return Run(key=k, place=SOURCE, argv=argv, timeout=600, label=label_of(k))


def integrate(front: FrontSpec, lane: str, path: str, message: str) -> Run:
    argv = runtime_module(
        "flamechase.tools.gitpoint",
        "integrate",
        "--from",
        path,
        "--allow",
        *owned(front),
        *front.freeze,
        "--message",
        message,
    )
    k = key(front.id, "integrate")
    return Run(
        key=k, place=SOURCE, argv=argv, reads=(front_place(lane),), timeout=1800, label=label_of(k)
    )


def quick_command(front: FrontSpec, who: str) -> str:
    """What a builder runs while iterating (under the lock for a performance gate)."""
    command = gate_command(front, "quick")
    if front.exclusive:
        return (
            f"{runtime_shell()} lock run --who {shlex.quote(who)} "
            f"--max 900 -- /bin/sh -c {shlex.quote(command)}"
        )
    return command


def machine_commands() -> dict[str, str]:
    base = runtime_shell()
    return {"job": f"{base} job", "lock": f"{base} lock"}


TOOLS = frozenset(
    {
        "sync",
        "csync",
        "diff",
        "cdiff",
        "apply",
        "capply",
        "stage",
        "freeze",
        "hash",
        "rehash",
        "reap",
        "tsync",
        "tapply",
        "fhash",
        "recal",
        "recalhash",
    }
)


def tool_failed(k: Key, receipt: dict[str, Any]) -> str | None:
    """Why one of the runtime's own programs failed (None: it did its job, or `k` is a
    gate, whose failures are judged, not retried)."""
    if k.what not in TOOLS:
        return None
    out = tool_output(receipt, "JOBS" if k.what == "reap" else "TREESYNC")
    if receipt.get("exit_code") == 0 and out is not None and "error" not in out:
        return None
    why = (out or {}).get("error") or receipt.get("error") or "no output"
    return str(why)[:300]
