"""`-p sandbox=auto|bwrap|landlock|off`: the jail a run gets, decided once, said out loud.

auto: bubblewrap where it can create namespaces, else Landlock, else refuse: a run never
goes unconfined unless `sandbox=off` says so. bwrap / landlock: that jail or a refusal that
names why and what would run. off: no jail, and a notice that says what that leaves open.
"""

from __future__ import annotations

import dataclasses

from flamechase.errors import SandboxUnavailable
from flamechase.jail.coverage import summary
from flamechase.jail.probe import Probe
from flamechase.jail.spec import Mode

REQUESTS = ("auto", "bwrap", "landlock", "off")


@dataclasses.dataclass(frozen=True, slots=True)
class Choice:
    """The jail chosen and the lines to say at the start of the run; `ports`: whether it
    keeps lanes to their TCP port blocks (Landlock ABI 4+), else they are advised."""

    mode: Mode
    notices: tuple[str, ...]
    ports: bool = False


def choose(requested: str, probe: Probe) -> Choice:
    """The jail for `-p sandbox=<requested>` on a machine described by `probe`.

    Raises SandboxUnavailable (exit 2, before anything is written) when the requested jail,
    or with `auto` any jail, cannot run here.
    """
    ports = probe.landlock_ports
    if requested == "off":
        return Choice("off", (summary("off"),))
    if requested == "bwrap":
        if not probe.bwrap_ok:
            raise SandboxUnavailable(
                f"sandbox=bwrap: {probe.bwrap_reason}; use -p sandbox=auto to fall back to "
                "Landlock, or sandbox=off to run agents unconfined"
            )
        return Choice("bwrap", (summary("bwrap", ports=ports),), ports)
    if requested == "landlock":
        if not probe.landlock_ok:
            raise SandboxUnavailable(
                f"sandbox=landlock: {probe.landlock_reason}; use -p sandbox=auto (bubblewrap "
                "where it runs), or sandbox=off to run agents unconfined"
            )
        return Choice(
            "landlock", (summary("landlock", scoped=probe.landlock_scopes, ports=ports),), ports
        )
    if requested != "auto":
        raise SandboxUnavailable(f"sandbox={requested}: expected one of {', '.join(REQUESTS)}")
    if probe.bwrap_ok:
        return Choice("bwrap", (summary("bwrap", ports=ports),), ports)
    if probe.landlock_ok:
        return Choice(
            "landlock",
            (
                f"{probe.bwrap_reason}: falling back to Landlock",
                summary("landlock", scoped=probe.landlock_scopes, ports=ports),
            ),
            ports,
        )
    raise SandboxUnavailable(
        f"sandbox=auto: no jail can run here: {probe.bwrap_reason}, and "
        f"{probe.landlock_reason}; install bubblewrap, or pass -p sandbox=off to run agents "
        "unconfined"
    )
