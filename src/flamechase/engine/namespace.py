"""A namespace per lane: its ports, its database names and its temporary directory.

Parallel copies of one project collide on the machine, not in the tree: every lane's tests
and dev servers bind the same ports, create the same database names and write the same temp
paths. Each turn (and each program run in a lane's place) is told its lane's own:

    FLAMECHASE_LANE          the lane (`lane-2`), or empty outside lanes
    FLAMECHASE_PORT_BASE     first port of its block (no other live run's lane holds it)
    FLAMECHASE_PORT_COUNT    how many ports the block has
    FLAMECHASE_DB_PREFIX     a prefix for database names (`fc_1a2b3c4d_lane_2_`)
    TMPDIR                   its own temporary directory

The block comes from the state home's registry (`store.ports`) and stays the lane's across
its turns and the run's resumes. A lane's turns are kept to it by their jail where the kernel
can (`JailSpec.ports`: Landlock ABI 4, Linux 6.7, under bubblewrap or Landlock): binding a
TCP port outside it fails with EACCES, while port 0 (the kernel's pick), connecting anywhere
and UDP stay free. Elsewhere (an older kernel, `sandbox=off`, turns outside lanes) the block
is advised: it keeps cooperating programs apart, a block a squatter listens on is never
handed out, and a turn seen listening outside its block is named in the run's log and
`status` (engine/portwatch).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from flamechase.engine.layout import SOURCE, RunLayout
from flamechase.store import ports

__all__ = ["Namespace", "namespace_of", "own_tmp", "prompt_note"]


@dataclass(frozen=True, slots=True)
class Namespace:
    lane: str
    block: ports.PortBlock
    db_prefix: str
    tmp: Path

    def env(self) -> dict[str, str]:
        return {
            "FLAMECHASE_LANE": self.lane,
            "FLAMECHASE_PORT_BASE": str(self.block.base),
            "FLAMECHASE_PORT_COUNT": str(self.block.count),
            "FLAMECHASE_DB_PREFIX": self.db_prefix,
            "TMPDIR": str(self.tmp),
        }


def own_tmp(layout: RunLayout, *, lane: str | None, place: str, role: str) -> Path:
    """The temporary directory of a slot: the one its jail gives it (engine/confinement)."""
    if lane is not None:
        return layout.lane_tmp(lane)
    if place != SOURCE:
        return layout.place_dir(place) / "tmp"
    return layout.root / "roles" / role / "tmp"


def db_prefix(run_id: str, slot: str) -> str:
    """Lower-case letters, digits and `_` only (valid unquoted in PostgreSQL, MySQL and
    SQLite file names), short enough to leave room under PostgreSQL's 63 characters."""
    digest = hashlib.sha256(run_id.encode()).hexdigest()[:8]
    name = re.sub(r"[^a-z0-9]+", "_", slot.lower()).strip("_")[:24] or "run"
    return f"fc_{digest}_{name}_"


def namespace_of(
    layout: RunLayout, run_id: str, *, lane: str | None, place: str, role: str
) -> Namespace:
    slot = lane if lane is not None else f"@{role}"
    return Namespace(
        lane=lane or "",
        block=ports.allocate(run_id, slot),
        db_prefix=db_prefix(run_id, slot),
        tmp=own_tmp(layout, lane=lane, place=place, role=role),
    )


def prompt_note(ns: Namespace, *, enforced: bool = False) -> str:
    """What the agent is told of its namespace (appended to its turn's prompt); `enforced`:
    its jail refuses binds outside the block."""
    last = ns.block.base + ns.block.count - 1
    who = f"lane {ns.lane}" if ns.lane else "this role"
    outside = (
        "Binding a TCP port outside them fails with 'Permission denied' (port 0, a port the "
        "system picks, works)."
        if enforced
        else "A server listening outside your ports is noticed and reported."
    )
    return (
        "\n\nMachine namespace: other lanes work on this machine at the same time. "
        f"For {who}, bind servers and tests only to ports {ns.block.base}-{last} "
        "($FLAMECHASE_PORT_BASE, $FLAMECHASE_PORT_COUNT), start every database name you "
        f"create with {ns.db_prefix} ($FLAMECHASE_DB_PREFIX), and keep temporary files "
        f"under $TMPDIR. {outside}"
    )
