"""A notice said at the start of a run: a plain line, or a short line with its detail kept.

Some notices are long (what the jail stops and leaves open, whose spend is self-reported):
said in full at every start and in every `status`, they drowned what changed. A `Folded`
notice is shown as its one `line` in the log, the live view and `status`, and in full (its
`detail`) by `status --verbose`.
"""

from __future__ import annotations

import dataclasses

from flamechase.events.run import Notice
from flamechase.jail.choice import Choice
from flamechase.jail.coverage import NAMES
from flamechase.jail.spec import Mode


@dataclasses.dataclass(frozen=True, slots=True)
class Folded:
    line: str  # what every view shows
    detail: str  # the whole of it, for `status --verbose`


StartNotice = str | Folded


# The jail in a line: the gist of what it stops and leaves open (coverage.py says it all).
JAIL_GIST: dict[Mode, str] = {
    "bwrap": "writes only inside its grants, own PID namespace; network and reads left open",
    "landlock": "writes only inside its grants; reads and network left open",
}


# Whether lanes' turns are kept to their port blocks (engine/namespace), in a few words.
PORTS_GIST = {True: "lanes' port blocks enforced", False: "lanes' port blocks only advised"}


def jail_notice(choice: Choice) -> StartNotice:
    """What the run's jail stops (the choice's last notice), folded to its gist, with whether
    it keeps lanes to their port blocks; `sandbox=off` is said whole (it is short, and every
    word of it matters)."""
    mode = choice.mode
    full = f"every agent and measurement: {choice.notices[-1]}"
    gist = JAIL_GIST.get(mode)
    if gist is None:
        return full
    ports = PORTS_GIST[choice.ports]
    return Folded(f"every agent and measurement: {NAMES[mode]} ({gist}; {ports})", full)


def notice_event(notice: StartNotice) -> Notice:
    """The event a start notice is said as: a folded one keeps its detail for `--verbose`."""
    if isinstance(notice, Folded):
        return Notice(message=notice.line, detail=notice.detail)
    return Notice(message=notice)
