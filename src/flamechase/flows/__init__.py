"""Flows: the built-in flows and how `-f` finds a flow.

Each built-in flow is a module using only the public API in `flamechase.flow`, exactly as a
user's flow would: a pure decider over events. `-f NAME` picks a built-in; `-f PATH` (a .py
file or a directory with `__init__.py`) loads a user's flow, which must define
`FLOW = <Flow instance>`. `flow_identity` names a loaded flow's source and hashes its code, so
a resume can refuse to run other code than the run's own. Must not import the engine.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from flamechase.errors import FlowNotFound
from flamechase.flow import Flow

BUILTIN: dict[str, str] = {
    "flame_chase": "flamechase.flows.flame_chase",
    "parallel_flame_chase": "flamechase.flows.parallel_flame_chase",
    "parrallello": "flamechase.flows.parrallello",
}


def builtin_names() -> list[str]:
    return sorted(BUILTIN)


def load_flow(ref: str) -> Flow[Any]:
    """The flow `ref` names: a built-in name, or a path to a flow module/package."""
    if ref in BUILTIN:
        return _flow_of(importlib.import_module(BUILTIN[ref]), ref)
    path = Path(ref).expanduser()
    if ("/" in ref or ref.endswith(".py")) and path.exists():
        return _load_path(path.resolve(), ref)
    raise FlowNotFound(
        f"no flow called {ref!r}; built-in flows are {', '.join(builtin_names())}, or give a "
        "path to a .py file or package that defines FLOW"
    )


def _load_path(path: Path, ref: str) -> Flow[Any]:
    target = path / "__init__.py" if path.is_dir() else path
    if not target.is_file():
        raise FlowNotFound(f"flow path {ref!r} has no {target.name}; a flow is a .py file or a "
                           "package directory defining FLOW")
    name = f"flamechase_user_flow_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(
        name, target, submodule_search_locations=[str(path)] if path.is_dir() else None)
    if spec is None or spec.loader is None:
        raise FlowNotFound(f"cannot load flow from {ref!r}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise FlowNotFound(f"flow {ref!r} failed to import: {exc.__class__.__name__}: "
                           f"{str(exc).splitlines()[0] if str(exc) else ''}") from exc
    return _flow_of(module, ref)


def _flow_of(module: object, ref: str) -> Flow[Any]:
    flow = getattr(module, "FLOW", None)
    if not isinstance(flow, Flow):
        raise FlowNotFound(f"flow {ref!r} defines no FLOW = <flamechase.flow.Flow instance>")
    return flow


def flow_identity(flow: Flow[Any], ref: str) -> tuple[str, str]:
    """(source, code hash) of a loaded flow: where it came from, and a SHA-256 over its
    module and every module of its own package it imports (transitively), so a resume can
    tell whether it would run the same flow code."""
    module = sys.modules[type(flow).__module__]
    source = f"builtin:{ref}" if ref in BUILTIN else f"path:{Path(ref).expanduser().resolve()}"
    root = module.__name__.split(".")[0]
    # Built-in flows also depend on the public flow library they are written on.
    prefixes = ("flamechase.flows", "flamechase.flow") if root == "flamechase" else (root,)
    code = _code_of(module.__name__, prefixes)
    code.pop(__name__, None)  # this loader is not flow code
    digest = hashlib.sha256()
    for name, path in sorted(code.items()):
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return source, digest.hexdigest()


def _code_of(start: str, prefixes: tuple[str, ...]) -> dict[str, Path]:
    """Module name -> file, for `start` and what it imports under `prefixes`."""
    found: dict[str, Path] = {}
    todo = [start]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        module = sys.modules.get(name)
        file = getattr(module, "__file__", None)
        if not file:
            continue
        found[name] = Path(file)
        package = name if Path(file).name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(Path(file).read_bytes())):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 \
                        else package
                    base = f"{parent}.{base}" if base else parent
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            todo += [t for t in targets if t in sys.modules
                     and any(t == p or t.startswith(p + ".") for p in prefixes)]
    return found
