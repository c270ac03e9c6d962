"""What each jail stops and what it does not, in words a user reads at the start of a run.

One source for the start-of-run notice, `status` and the README's Containment table
(tests/jail/test_coverage.py keeps the README in step with `STOPS` and `LEAVES`).
"""

from __future__ import annotations

from flamechase.jail.spec import Mode

NAMES: dict[Mode, str] = {
    "bwrap": "bubblewrap jail",
    "landlock": "Landlock jail",
    "off": "no jail (sandbox=off)",
}

# A lane's port block (jail/landlock: Landlock ABI 4, Linux 6.7), under either jail.
PORTS_STOPPED = (
    "a lane's turn binding a TCP port outside its block (port 0, the kernel's pick, stays "
    "free; Landlock ABI 4+ only)"
)
PORTS_LEFT = "binding UDP ports (Landlock restricts TCP binds only) and connecting anywhere"
PORTS_ADVISED = (
    "a lane's turn binding a TCP port outside its block where the Landlock ABI is below 4 "
    "(Linux < 6.7): blocks are advised, not enforced, and a listener outside one is named"
)

STOPS: dict[Mode, tuple[str, ...]] = {
    "bwrap": (
        "writing, deleting or renaming anything outside its grants",
        "chmod, chown, utime and xattr changes outside its grants",
        "reading other lanes' copies, TMPDIRs and private homes (hidden)",
        "seeing or signalling the engine, other lanes and other turns (own PID namespace)",
        "a process of the turn outliving it, daemons included (the namespace is torn down)",
        PORTS_STOPPED,
    ),
    "landlock": (
        "writing, deleting or renaming anything outside its grants",
        "signalling the engine, other lanes and other turns (Landlock ABI 6+ only)",
        "a daemon outliving a turn that ends by itself (the launcher reaps what it left)",
        PORTS_STOPPED,
    ),
    "off": (),
}

LEAVES: dict[Mode, tuple[str, ...]] = {
    "bwrap": (
        "network access (shared: agents need their model APIs)",
        "reading what this user can read outside the hidden paths (e.g. ~/.ssh)",
        "services reached over sockets (D-Bus, systemd --user, docker) acting for it",
        "CPU, memory and disk use inside its grants",
        PORTS_LEFT,
        PORTS_ADVISED,
    ),
    "landlock": (
        "chmod, chown, utime and xattr changes (Landlock has no rights for them)",
        "reading anything this user can read, other lanes' places included",
        "signalling the engine, other lanes and other turns where the Landlock ABI is "
        "below 6 (Linux < 6.12)",
        "a daemon that clears its environment, when the turn is cut and the agent "
        "ignores SIGTERM for the whole grace period",
        "network access and services reached over sockets",
        PORTS_LEFT,
        PORTS_ADVISED,
    ),
    "off": (
        "every agent can write, chmod, read and signal whatever this user can and bind any "
        "port, and a daemon that clears its environment can outlive its turn",
    ),
}


def summary(mode: Mode, *, scoped: bool = True, ports: bool = True) -> str:
    """One line: the jail, what it stops, what it leaves open.

    `scoped`: for Landlock, whether the kernel scopes signals (ABI 6+); below that the
    signal line moves from what it stops to what it leaves. `ports`: whether the kernel
    keeps lanes to their port blocks (Landlock ABI 4+); below that the port line moves too.
    """
    stops = [
        s.replace("; Landlock ABI 4+ only", "") for s in STOPS[mode] if ports or s != PORTS_STOPPED
    ]
    leaves = [s for s in LEAVES[mode] if not ports or s != PORTS_ADVISED]
    if mode == "landlock":
        stops = [
            s.replace(" (Landlock ABI 6+ only)", "")
            for s in stops
            if scoped or "signalling" not in s
        ]
        leaves = [s for s in leaves if not scoped or "below 6" not in s]
    if mode == "off":
        return f"{NAMES[mode]}: nothing is stopped; {leaves[0]}"
    return f"{NAMES[mode]}: stops {'; '.join(stops)}. Does not stop {'; '.join(leaves)}"
