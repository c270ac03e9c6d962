"""The bubblewrap jail: a read-only world, writable grants, hidden paths, a PID namespace.

The command line, outermost first:

    env --ignore-signal=TERM bwrap --die-with-parent --unshare-pid --ro-bind / / --dev /dev
        --proc /proc [--bind TMP /tmp] <mounts> --chdir PLACE -- env --default-signal=TERM ARGV

- `--ro-bind / /` makes every path read-only (EROFS): no content *or metadata* change
  (chmod, chown, utime, xattr, rename, delete) anywhere outside the writable binds.
- `--unshare-pid` gives the turn its own PID namespace: it sees and can signal only its own
  processes. bwrap's pid 1 dies with the bwrap the engine started (`--die-with-parent`), and
  the kernel then kills everything left in the namespace, whatever it did to its environment,
  session or process group. bwrap exits as soon as ARGV exits, so that happens at once.
- How the engine ends a turn (procs: SIGTERM to the group, a grace period, SIGKILL) stays
  right: bwrap ignores SIGTERM (set by the outer `env`), so the TERM reaches the agent, which
  gets the default action back (the inner `env`) and may clean up; the SIGKILL after the grace
  period kills bwrap and so the whole namespace.
- The network is shared: agents need their model APIs. A lane's turn with a port block
  (`spec.ports`) runs ARGV through the Landlock launcher's network-only form instead of the
  inner `env` where the kernel can (jail/landlock): it restricts TCP bind to the block and
  port 0, nothing else, resets the signals `env` would and execs ARGV.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from flamechase.jail.landlock import LAUNCHER, net_argv
from flamechase.jail.spec import JailSpec, contains, outermost

BWRAP = "/usr/bin/bwrap"
ENV = "/usr/bin/env"
TMP = Path("/tmp")  # noqa: S108 -- the directory a private one replaces, not one we write


def bwrap_path() -> str | None:
    """bubblewrap's executable, or None when it is not installed."""
    return shutil.which("bwrap") or (BWRAP if Path(BWRAP).is_file() else None)


def _mounts(spec: JailSpec) -> list[tuple[Path, str]]:
    """(destination, kind) for every mount over the read-only root, outermost first.

    kinds: "hide" (an empty read-only tmpfs, or /dev/null over a file), "rw" (a writable
    bind), "ro" (a protected path re-bound read-only inside a grant, or a readable path
    beneath a hidden one). At one destination the later kind wins: "ro" beats "rw".
    A protected path inside a grant also has every directory between it and the grant bound
    onto itself (writable): a mount point cannot be renamed or removed, so the protected path
    cannot be moved aside and replaced by renaming a directory above it.
    """
    order = {"hide": 0, "rw": 1, "ro": 2}
    out: list[tuple[Path, str]] = []
    for p in spec.hidden:
        r = p.resolve()
        if r.exists():
            out.append((r, "hide"))
    rw = [p.resolve() for p in spec.wanted() if p.resolve().exists()]
    out += [(r, "rw") for r in outermost(rw)]
    for p in spec.protected:
        r = p.resolve()
        grants = [g for g in rw if contains(g, r)]
        if r.exists() and grants:
            out.append((r, "ro"))
            inner = max(grants, key=lambda g: len(g.parts))
            out += [(a, "rw") for a in r.parents if a != inner and contains(inner, a)]
    out += [(p.resolve(), "ro") for p in spec.readable if p.resolve().exists()]
    out = list(dict.fromkeys(out))
    out.sort(key=lambda m: (len(m[0].parts), order[m[1]]))
    return out


def _private_tmp(spec: JailSpec, argv: list[str]) -> bool:
    """Whether /tmp can be replaced by the private TMPDIR: only when nothing the process
    needs (a grant, a protected path it reads, its own program, the home, the launcher and
    its interpreter) lives under /tmp."""
    needed = [*spec.wanted(), *spec.protected, *spec.readable, spec.real_home()]
    needed += [Path(a) for a in argv[:1] if a.startswith("/")]
    if spec.ports is not None:
        needed += [LAUNCHER, Path(sys.executable).parent]  # a venv's bin: a link elsewhere
    tmp = TMP.resolve()
    return not any(contains(tmp, p.resolve()) for p in needed) and spec.tmp.resolve() != tmp


def bwrap_argv(argv: list[str], spec: JailSpec, *, bwrap: str | None = None) -> list[str]:
    """`argv` inside a bubblewrap jail built from `spec`."""
    exe = bwrap or bwrap_path() or BWRAP
    out = [
        ENV,
        "--ignore-signal=TERM",
        exe,
        "--die-with-parent",
        "--unshare-pid",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    if _private_tmp(spec, argv):
        out += ["--bind", str(spec.tmp.resolve()), str(TMP)]
    hidden_dirs: list[str] = []
    for dest, kind in _mounts(spec):
        if kind == "hide" and dest.is_dir():
            out += ["--tmpfs", str(dest)]
            hidden_dirs.append(str(dest))
        elif kind == "hide":
            out += ["--ro-bind", "/dev/null", str(dest)]
        else:
            out += ["--bind" if kind == "rw" else "--ro-bind", str(dest), str(dest)]
    for dest_dir in hidden_dirs:  # after the binds inside them are placed
        out += ["--remount-ro", dest_dir]
    if spec.home is not None:
        out += ["--setenv", "HOME", str(spec.home.resolve())]
    out += ["--chdir", str(spec.place.resolve())]
    inner = net_argv(argv, spec) or [ENV, "--default-signal=TERM", *argv]
    return [*out, "--", *inner]
