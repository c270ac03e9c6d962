"""Importing flow code: a .py file, a package directory, or an importable module.

Importing runs the module's code: that is what loading a flow means (README, "Flows").
A file or directory is imported under a name derived from its path's SHA-256, so a
resume in another process finds the same name; bytecode is not written next to it, so a
pinned git checkout stays exactly its commit.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from flamechase.errors import FlowNotFound
from flamechase.flow import Flow

DEFAULT_ATTR = "FLOW"
USER_PREFIX = "flamechase_flow_"


# What importing a flow may raise and still be the flow's failure to import, not the end of
# flamechase: `sys.exit()` or a KeyboardInterrupt raised by a flow's module-level code.
IMPORT_FAILURES = (Exception, SystemExit, KeyboardInterrupt)


def first_line(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r}) (a flow's code may not end the process)"
    text = str(exc).strip()
    return f"{exc.__class__.__name__}: {text.splitlines()[0]}" if text else exc.__class__.__name__


def import_path(path: Path, shown: str) -> ModuleType:
    """Import a flow file or package directory (`shown` is how the user named it)."""
    target = path / "__init__.py" if path.is_dir() else path
    if path.is_dir() and not target.is_file():
        raise FlowNotFound(
            f"{shown} is a directory without __init__.py; a flow is a .py file "
            "or a package directory whose __init__.py defines FLOW"
        )
    if not target.is_file() or target.suffix != ".py":
        raise FlowNotFound(
            f"{shown} is not a flow: give a .py file or a package directory that defines FLOW"
        )
    name = USER_PREFIX + hashlib.sha256(str(path).encode()).hexdigest()[:16]
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    loaded = sys.modules.get(name)
    if loaded is not None and getattr(loaded, "__flamechase_digest__", None) == digest:
        return loaded
    # Edited since it was imported in this process (the prompt runs many flows): import the
    # new code, submodules included, rather than run what is no longer on disk.
    for stale in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[stale]
    spec = importlib.util.spec_from_file_location(
        name, target, submodule_search_locations=[str(path)] if path.is_dir() else None
    )
    if spec is None or spec.loader is None:
        raise FlowNotFound(f"{shown} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    module.__dict__["__flamechase_digest__"] = digest
    sys.modules[name] = module
    quiet = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        spec.loader.exec_module(module)
    except IMPORT_FAILURES as exc:
        sys.modules.pop(name, None)
        raise FlowNotFound(f"flow {shown} failed to import: {first_line(exc)}") from exc
    finally:
        sys.dont_write_bytecode = quiet
    return module


def import_module(name: str, shown: str) -> ModuleType:
    """Import `name` from the installed packages (sys.path)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise FlowNotFound(
                f"-f {shown}: no module named {exc.name!r} in this Python "
                f"({sys.executable}); install the package that has it"
            ) from exc
        raise FlowNotFound(f"flow {shown} failed to import: {first_line(exc)}") from exc
    except IMPORT_FAILURES as exc:
        raise FlowNotFound(f"flow {shown} failed to import: {first_line(exc)}") from exc


def flow_in(module: object, attr: str | None, shown: str) -> Flow[Any]:
    """The Flow instance `module.attr` (FLOW by default)."""
    name = attr or DEFAULT_ATTR
    found = getattr(module, name, None)
    if isinstance(found, Flow):
        return found
    if found is None:
        others = flows_in(module)
        hint = f"; it has {', '.join(others)}" if others else ""
        raise FlowNotFound(f"{shown} defines no {name} = <flamechase.flow.Flow instance>{hint}")
    raise FlowNotFound(
        f"{shown}: {name} is a {type(found).__name__}, not a flamechase.flow.Flow instance"
    )


def flows_in(module: object) -> list[str]:
    """Names of the Flow instances a module defines."""
    return sorted(k for k, v in vars(module).items() if isinstance(v, Flow))


def as_flow(obj: object, shown: str) -> Flow[Any]:
    """An entry point's object: a Flow instance, or a module that defines FLOW."""
    if isinstance(obj, Flow):
        return obj
    if isinstance(obj, ModuleType):
        return flow_in(obj, None, shown)
    raise FlowNotFound(
        f"{shown} is a {type(obj).__name__}, not a flamechase.flow.Flow "
        "instance or a module defining FLOW"
    )
