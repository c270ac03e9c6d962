"""Every agent process in a jail: what it may write, see and signal, and how it all ends.

    spec.py       JailSpec: a role's grants, hidden and protected paths, mode (a value)
    bwrap.py      the bubblewrap command line: read-only world, PID namespace, torn down
    landlock.py   the Landlock fallback (+ landlock_exec.py, its launcher and subreaper)
    probe.py      which jails run on this machine, and why not
    choice.py     -p sandbox=auto|bwrap|landlock|off -> the jail, or a refusal
    coverage.py   what each jail stops and does not stop, in words
    ready.py      creating what a jail grants before it starts

Callers: `wrap(argv, spec)` before starting a process, `ready(spec)` once before the turn,
`decode_exit(code, spec)` on its exit code. A leaf: imports only `errors`.
"""

from __future__ import annotations

from flamechase.jail.bwrap import bwrap_argv
from flamechase.jail.choice import Choice, choose
from flamechase.jail.coverage import summary
from flamechase.jail.landlock import landlock_abi, landlock_argv
from flamechase.jail.probe import Probe, probe
from flamechase.jail.ready import needs_home, ready
from flamechase.jail.spec import MODES, JailSpec, Mode, safe_grants

__all__ = [
    "MODES",
    "Choice",
    "JailSpec",
    "Mode",
    "Probe",
    "choose",
    "decode_exit",
    "landlock_abi",
    "needs_home",
    "probe",
    "ready",
    "safe_grants",
    "summary",
    "wrap",
]


def wrap(argv: list[str], spec: JailSpec | None) -> list[str]:
    """`argv` as it runs inside the jail `spec` (unchanged without one, or with mode off)."""
    if spec is None or spec.mode == "off":
        return argv
    if spec.mode == "bwrap":
        return bwrap_argv(argv, spec)
    return landlock_argv(argv, spec)


def decode_exit(code: int, spec: JailSpec | None) -> int:
    """The jailed program's own exit code: bubblewrap reports death by signal N as exit
    128 + N (like a shell); give it back as -N, as for an unjailed process."""
    if spec is not None and spec.mode == "bwrap" and 128 < code < 128 + 65:
        return -(code - 128)
    return code
