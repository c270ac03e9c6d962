"""Making what a jail grants exist before it starts (the only part of `jail` that writes).

A grant that does not exist cannot be bound (bubblewrap) or ruled (Landlock), and a CLI that
finds its state directory missing would try to create it in a read-only home. So before a
turn: the private TMPDIR, the CLI's missing state directories, and the private home with the
CLI's state files copied in and its state directories linked.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

from flamechase.jail.spec import JailSpec, contains


def ready(spec: JailSpec) -> None:
    """Create the spec's private TMPDIR, missing state directories and private home.

    A missing state path with a suffix (`~/.claude.json`) is a file the CLI creates itself:
    it is not made here. Idempotent: a home seeded by an earlier turn keeps its files.
    """
    _private_dir(spec.tmp)
    for path in spec.state:
        if not path.exists() and not path.suffix:
            _private_dir(path)
    if spec.home is not None:
        _seed_home(spec)


def needs_home(state: tuple[Path, ...] | list[Path], user_home: Path | None = None) -> bool:
    """Whether a CLI with these state paths needs a private home: it keeps a file directly
    in $HOME, which it rewrites by rename (a grant on the file alone cannot allow that)."""
    real = (user_home or Path.home()).absolute()
    return any(p.absolute().parent == real and p.suffix for p in state)


def _private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)


def _seed_home(spec: JailSpec) -> None:
    assert spec.home is not None
    home = spec.home
    _private_dir(home)
    real = spec.real_home()
    for path in spec.state:
        source = path.absolute()
        if not contains(real, source) or source == real:
            continue
        target = home / source.relative_to(real)
        if target.exists() or target.is_symlink():
            continue
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if source.is_dir():
            target.symlink_to(source)  # the real state directory, granted writable
        elif source.is_file():
            with contextlib.suppress(OSError):  # unreadable: the CLI starts without it
                shutil.copy2(source, target)
