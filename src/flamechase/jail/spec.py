"""What one agent process, and everything it starts, may touch: a `JailSpec`.

A spec is a value (frozen, picklable) so the engine can decide a role's jail in one place and
hand it to a backend, a remote executor or the evaluator unchanged. Everything not granted is
read-only; `hidden` paths are not there at all (bubblewrap only: Landlock cannot hide).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

Mode = Literal["bwrap", "landlock", "off"]
MODES: tuple[Mode, ...] = ("bwrap", "landlock", "off")


@dataclasses.dataclass(frozen=True, slots=True)
class JailSpec:
    """One process tree's grants.

    place: the agent's working tree (its cwd), writable.
    tmp: a private TMPDIR, writable (the caller points TMPDIR at it); under bubblewrap it is
        also the process's /tmp unless something the process needs lives under /tmp.
    turn_dir: the turn's files (prompt, report, usage, inbox), writable.
    grants: further writable paths (artifact root, checkpoint's directory, the lane directory).
    state: the agent CLI's own state paths (sessions, auth refresh); directories are created
        if missing (`ready`), files are granted where they exist.
    home: a private $HOME for CLIs that rewrite files directly in $HOME (atomically, by
        rename, which a single-file grant cannot allow): HOME points at it; `state`
        directories in the real home appear in it as links to the real ones, `state` files
        are copied into it once (`ready`). The real home stays readable (CLIs installed under
        it keep working).
    hidden: paths that must not be visible at all (other lanes' places); bubblewrap only.
    readable: paths kept visible, read-only, even beneath a hidden one (the blob store under
        a hidden run directory); bubblewrap only (under Landlock everything is readable).
    protected: paths never writable even inside a grant (the source, the state home).
        Bubblewrap re-binds them read-only; Landlock cannot carve a hole in a grant, so a
        grant containing one is dropped instead.
    user_home: the real home `home` replaces (default: the current user's).
    ports: (first, count): the only TCP ports the process tree may bind, besides port 0 (the
        kernel's pick from the ephemeral range); None: any. A lane's port block. Enforced
        where the kernel's Landlock has network rules (ABI 4, Linux 6.7), under either jail;
        connecting and UDP are never restricted.
    """

    mode: Mode
    place: Path
    tmp: Path
    turn_dir: Path | None = None
    grants: tuple[Path, ...] = ()
    state: tuple[Path, ...] = ()
    home: Path | None = None
    hidden: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()
    protected: tuple[Path, ...] = ()
    user_home: Path | None = None
    ports: tuple[int, int] | None = None

    @property
    def confined(self) -> bool:
        return self.mode != "off"

    def real_home(self) -> Path:
        return (self.user_home or Path.home()).absolute()

    def wanted(self) -> list[Path]:
        """Every path the spec asks to be writable, in the order given.

        With a private home, `state` files in the real home are not granted: the process
        works on its own copies in the private home (`ready` seeds them).
        """
        out = [self.place, self.tmp]
        if self.turn_dir is not None:
            out.append(self.turn_dir)
        out += self.grants
        real = self.real_home()
        for p in self.state:
            if self.home is not None and p.is_file() and contains(real, p.absolute()):
                continue
            out.append(p)
        if self.home is not None:
            out.append(self.home)
        return out

    def writable(self) -> tuple[Path, ...]:
        """The existing writable roots, outermost only (a root inside another is implied),
        with grants that would expose a protected path dropped (see `safe_grants`)."""
        return tuple(outermost(safe_grants(self.wanted(), self.protected)))


def contains(outer: Path, inner: Path) -> bool:
    """Whether `inner` is `outer` or lies beneath it (lexically; resolve first)."""
    try:
        inner.relative_to(outer)
    except ValueError:
        return False
    return True


def safe_grants(wanted: Iterable[Path], protected: Iterable[Path]) -> list[Path]:
    """The existing paths of `wanted`, resolved, that contain none of `protected`.

    A grant inside a protected path is kept (it was asked for explicitly: a lane directory
    inside the state home); a grant around one is dropped: it would make the source writable.
    """
    prot = [p.resolve() for p in protected]
    out: list[Path] = []
    for w in wanted:
        r = w.resolve()
        if not r.exists() or r in out:
            continue
        if any(contains(r, p) for p in prot):
            continue
        out.append(r)
    return out


def outermost(paths: Iterable[Path]) -> list[Path]:
    """`paths` without those inside another of them, first occurrence order kept."""
    items = list(dict.fromkeys(paths))
    return [p for p in items if not any(q != p and contains(q, p) for q in items)]
