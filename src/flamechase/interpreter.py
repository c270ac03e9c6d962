"""How the runtime starts Python programs of its own: always an isolated interpreter.

`python -m NAME` puts its working directory first on `sys.path`, and `PYTHONPATH`, a user
site (with its `.pth` files and `usercustomize`) or `PYTHONSTARTUP` add more; the runtime's
programs run in places agents write (a checkout an evaluator ran in, the user's tree after a
publication, a front's tree builders' files were copied into). A `flamechase.py` there would
shadow the real package. So every program the runtime starts on its own behalf starts as
`runtime_python()` says: this interpreter with `-I` (no working directory or script directory
on the path, no user site, no `PYTHON*` variables), which leaves only the installation's own
site-packages to import from.

`-I` keeps the installation's own directories on the path, so no runtime program may write
there: `installation_holding(path)` says whether a path lies inside them (a virtual
environment in the user's tree, where a merged `.pth` would run in every Python the runtime
starts). An editable install's own source is not counted: a run that changes flamechase's own
code runs it.

`unisolated(argv)` tells whether an argv starts Python without that isolation (the engine
refuses such a `Run` unjailed); `scrubbed(env)` is an environment without `PYTHON*`
variables. A leaf: imports nothing of flamechase, so every layer that starts a program may use it.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import site
import sys
import sysconfig
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = [
    "installation",
    "installation_holding",
    "runtime_module",
    "runtime_python",
    "runtime_shell",
    "scrubbed",
    "unisolated",
]

_PYTHON_NAME = re.compile(r"^python(\d+(\.\d+)*)?$")
_TAKES_VALUE = {"-X", "-W", "--check-hash-based-pycs"}


def runtime_python() -> tuple[str, str]:
    """The argv prefix of a Python program the runtime runs: this interpreter, isolated."""
    return (sys.executable, "-I")


def runtime_module(module: str, *args: str) -> tuple[str, ...]:
    """`python -I -m MODULE ARGS` with this interpreter."""
    return (*runtime_python(), "-m", module, *args)


def runtime_shell(module: str = "flamechase") -> str:
    """The same as one shell command (`'/path/python' -I -m flamechase`), for a brief or a
    prompt that tells an agent how to call flamechase."""
    return shlex.join(runtime_module(module))


def _is_python(word: str) -> bool:
    if _PYTHON_NAME.match(os.path.basename(word)):
        return True
    try:
        return os.path.realpath(word) == os.path.realpath(sys.executable)
    except (OSError, ValueError):
        return False


def _command(argv: Sequence[str]) -> Sequence[str]:
    """`argv` past an `env [-i] [NAME=VALUE]...` prefix."""
    if argv and os.path.basename(argv[0]) == "env":
        rest = list(argv[1:])
        while rest and (rest[0].startswith("-") or "=" in rest[0]):
            rest.pop(0)
        return rest
    return argv


def unisolated(argv: Sequence[str]) -> bool:
    """Whether `argv` starts a Python interpreter that may import from its working directory,
    a user site or `PYTHON*` variables: one without `-I` (or without all of `-P`, `-s` and
    `-E`). A program that is not Python directly is not judged here (False)."""
    argv = _command(argv)
    if not argv or not _is_python(argv[0]):
        return False
    flags: set[str] = set()
    words = list(argv[1:])
    while words:
        word = words.pop(0)
        if word in ("-m", "-c", "-") or not word.startswith("-"):
            break
        if word in _TAKES_VALUE:
            if words:
                words.pop(0)
            continue
        if word.startswith(("--", "-X", "-W")):
            continue
        flags.update(word[1:])
    return not ("I" in flags or {"P", "s", "E"} <= flags)


@functools.cache
def installation() -> tuple[Path, ...]:
    """The directories this interpreter imports and starts from, resolved: its standard
    library, its site-packages and scripts, the user site, and a virtual environment's whole
    prefix (its `pyvenv.cfg` names the interpreter it runs)."""
    found = [sysconfig.get_path(n) for n in ("stdlib", "platstdlib", "purelib", "platlib")]
    found += [sysconfig.get_path("scripts"), *site.getsitepackages(), site.getusersitepackages()]
    if sys.prefix != sys.base_prefix:
        found.append(sys.prefix)
    return tuple(dict.fromkeys(Path(os.path.realpath(p)) for p in found if p))


def installation_holding(path: str | os.PathLike[str]) -> Path | None:
    """The directory of `installation()` that `path` (existing or not) lies in, if any."""
    real = Path(os.path.realpath(path))
    return next((d for d in installation() if real == d or d in real.parents), None)


def scrubbed(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without `PYTHON*` variables (a path, a startup file or a home they could name)."""
    return {k: v for k, v in env.items() if not k.startswith("PYTHON")}
