"""Flows: the built-in flows and how `-f` finds a flow.

Each built-in flow is a module using only the public API in `flamechase.flow`, exactly as a
user's flow would. A flow never writes run state; it declares roles, params, lanes and
prompts. `-f NAME` picks a built-in; `-f PATH` (a .py file or a directory with
`__init__.py`) loads a user's flow, which must define `FLOW = <Flow instance>`.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

from flamechase.errors import FlowNotFound
from flamechase.flow import Flow

BUILTIN: dict[str, str] = {
    "flame_chase": "flamechase.flows.flame_chase",
    "parallel_flame_chase": "flamechase.flows.parallel_flame_chase",
}


def builtin_names() -> list[str]:
    return sorted(BUILTIN)


def load_flow(ref: str) -> Flow:
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


def _load_path(path: Path, ref: str) -> Flow:
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


def _flow_of(module: object, ref: str) -> Flow:
    flow = getattr(module, "FLOW", None)
    if not isinstance(flow, Flow):
        raise FlowNotFound(f"flow {ref!r} defines no FLOW = <flamechase.flow.Flow instance>")
    return flow
