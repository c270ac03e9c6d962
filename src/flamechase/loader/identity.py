"""A loaded flow's code hash: SHA-256 over its module and the modules of its own package it
imports (transitively), and over every .py file of the flow's package however (or whether) it
is imported (an `importlib` call, a lazy import inside `decide`), so a resume can tell whether
it would run the same flow code. A flow that is one file is hashed as that file.

Module names enter the hash relative to the flow's top package, so the same code hashes the
same wherever it was imported from (a file's import name is derived from its path; a git
checkout lives under its commit).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from flamechase.flow import Flow
from flamechase.loader import importcache

# Built-in flows are also made of the public flow library they are written on.
BUILTIN_PREFIXES = ("flamechase.flows", "flamechase.flow")
# The registry of built-in flows names them; it is not a flow's code.
_LOADER = frozenset({"flamechase.flows"})


def code_hash(flow: Flow[Any]) -> str:
    module = sys.modules[type(flow).__module__]
    root = module.__name__.split(".")[0]
    prefixes = BUILTIN_PREFIXES if root == "flamechase" else (root,)
    code = {
        name: path
        for name, path in _code_of(module.__name__, prefixes).items()
        if name not in _LOADER
    }
    importcache.save()
    digest = hashlib.sha256()
    for name, path in sorted(code.items()):
        shown = name if root == "flamechase" else "<flow>" + name[len(root) :]
        digest.update(shown.encode() + b"\0" + _source(name, path) + b"\0")
    for rel, data in sorted(_package_files(module).items()):
        digest.update(b"file:" + rel.encode() + b"\0" + data + b"\0")
    return digest.hexdigest()


def _package_files(module: ModuleType) -> dict[str, bytes]:
    """Every .py file of the flow's own package (relative path -> bytes), imported or not.
    A flow that is one file is that file (a flow with helpers is a package)."""
    parts = module.__name__.split(".")
    if parts[0] == "flamechase":  # a built-in: its own package under flamechase.flows
        if parts[:2] != ["flamechase", "flows"] or len(parts) < 3:
            return {}
        top = sys.modules.get(".".join(parts[:3]))
    else:
        top = sys.modules.get(parts[0])
    file = getattr(top, "__file__", None)
    if top is None or not file:
        return {}
    tree = getattr(getattr(top, "__loader__", None), "tree", None)
    if tree is not None and getattr(tree, "package", False):  # pinned: the commit's files
        root = f"{tree.root}/" if tree.root else ""
        return {rel.removeprefix(root): data for rel, data in tree.code.items()}
    if getattr(top, "__path__", None) is not None:
        home = Path(file).parent
        return {
            p.relative_to(home).as_posix(): p.read_bytes()
            for p in home.rglob("*.py")
            if p.is_file()
            and not any(x.startswith((".", "__")) for x in p.relative_to(home).parts[:-1])
        }
    return {}


def _source(name: str, path: Path) -> bytes:
    """The bytes a module was imported from: its loader's (a pinned flow's come from the
    commit's objects, not the checkout), else the file's."""
    get_data = getattr(getattr(sys.modules.get(name), "__loader__", None), "get_data", None)
    return bytes(get_data(str(path))) if callable(get_data) else path.read_bytes()


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
        todo += [
            t
            for t in importcache.imported(_source(name, Path(file)), package)
            if t in sys.modules and any(t == p or t.startswith(p + ".") for p in prefixes)
        ]
    return found
