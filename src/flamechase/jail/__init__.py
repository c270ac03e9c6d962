"""Every agent process in a jail: what it may write, see and signal, and how it all ends.

    spec.py       JailSpec: a role's grants, hidden and protected paths, mode (a value)
    bwrap.py      the bubblewrap command line: read-only world, PID namespace, torn down
    landlock.py   the Landlock fallback (+ landlock_exec.py, its launcher and subreaper)
    probe.py      which jails run on this machine, and why not
    choice.py     -p sandbox=auto|bwrap|landlock|off -> the jail, or a refusal
    coverage.py   what each jail stops and does not stop, in words
    ready.py      creating what a jail grants before it starts

Callers: `wrap(argv, spec)` before starting a process, `ready(spec)` once before the turn,
`decode_exit(code, spec)` on its exit code, `not_started(...)` to tell a program that never
started (its launcher could not run it) from one that ran and failed. A leaf: imports only
`errors`.
"""

from __future__ import annotations

from flamechase.jail.bwrap import ENV, bwrap_argv
from flamechase.jail.choice import Choice, choose
from flamechase.jail.coverage import summary
from flamechase.jail.landlock import enforces_ports, landlock_abi, landlock_argv
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
    "enforces_ports",
    "landlock_abi",
    "needs_home",
    "not_started",
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


# How each launcher says it could not run the program, then exits 126 or 127: env(1) inside
# bubblewrap (`/usr/bin/env: ‘PROGRAM’: No such file or directory`), the Landlock launcher
# (also inside bubblewrap, for a turn kept to its port block).
_LAUNCHER_SAYS = "flamechase jail: cannot run "
_CANNOT_RUN = {"bwrap": (f"{ENV}: ", _LAUNCHER_SAYS), "landlock": (_LAUNCHER_SAYS,)}


def not_started(code: int | None, stderr: str, program: str, spec: JailSpec | None) -> str | None:
    """The launcher's words when the jailed `program` never started (None: it ran). Only its
    one line counts: a program that ran and printed anything else ran."""
    if spec is None or code not in (126, 127):
        return None
    prefixes = _CANNOT_RUN.get(spec.mode, ())
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    if len(lines) != 1 or not lines[0].startswith(prefixes):
        return None
    return lines[0] if program in lines[0] else None
