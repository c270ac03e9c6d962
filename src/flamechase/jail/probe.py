"""Which jails can run on this machine, and in one line why not.

bubblewrap: installed, and able to create the namespaces a jail needs (a root user can; an
unprivileged one needs user namespaces, which some distributions or containers forbid).
Landlock: the kernel's ABI level (0: none), which decides what the fallback can scope.
The probe runs a real jail of `true` once per process: whatever would stop a turn's jail
stops the probe the same way.
"""

from __future__ import annotations

import dataclasses
import functools
import shutil
import subprocess
import tempfile
from pathlib import Path

from flamechase.jail.bwrap import bwrap_argv, bwrap_path
from flamechase.jail.landlock import NET_ABI, SCOPE_ABI, landlock_abi
from flamechase.jail.spec import JailSpec

PROBE_TIMEOUT = 20.0


@dataclasses.dataclass(frozen=True, slots=True)
class Probe:
    """What this machine can confine with. `bwrap_reason` is None when bubblewrap works."""

    bwrap_reason: str | None
    landlock_abi: int

    @property
    def bwrap_ok(self) -> bool:
        return self.bwrap_reason is None

    @property
    def landlock_ok(self) -> bool:
        return self.landlock_abi > 0

    @property
    def landlock_scopes(self) -> bool:
        """Whether Landlock can scope signals and abstract sockets (ABI 6, Linux 6.12)."""
        return self.landlock_abi >= SCOPE_ABI

    @property
    def landlock_ports(self) -> bool:
        """Whether Landlock can keep a lane to its TCP port block (ABI 4, Linux 6.7), under
        either jail (bubblewrap runs the turn through the launcher's network-only form)."""
        return self.landlock_abi >= NET_ABI

    @property
    def landlock_reason(self) -> str | None:
        if self.landlock_ok:
            return None
        return "this kernel has no Landlock (Linux 5.13+ with landlock in the LSM list)"


def bwrap_problem() -> str | None:
    """Why a bubblewrap jail cannot start here (one line), or None when it can."""
    exe = bwrap_path()
    if exe is None:
        return "bubblewrap is not installed (Debian: apt-get install bubblewrap)"
    true = shutil.which("true") or "/bin/true"
    with tempfile.TemporaryDirectory(prefix="flamechase-probe-") as d:
        place = Path(d)
        argv = bwrap_argv([true], JailSpec(mode="bwrap", place=place, tmp=place), bwrap=exe)
        try:
            done = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=PROBE_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"a bubblewrap jail of `true` did not end within {PROBE_TIMEOUT:g}s"
        except OSError as exc:
            return f"cannot run {exe}: {exc.strerror or exc}"
    if done.returncode == 0:
        return None
    said = done.stderr.decode("utf-8", "replace").strip().splitlines()
    why = said[-1] if said else f"exit code {done.returncode}"
    return f"bubblewrap cannot create a jail here ({why})"


@functools.cache
def probe() -> Probe:
    """This machine's jails, probed once per process."""
    return Probe(bwrap_reason=bwrap_problem(), landlock_abi=landlock_abi())
