"""Packages import only what their layer allows, and only the control loop holds a Writer.

The table is the architecture (ARCHITECTURE.md, "Layers"); a new edge must be argued there.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "flamechase"

# layer -> layers it may import (besides itself). Leaves import nothing of flamechase.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "events": set(),  # the vocabulary every layer shares: a leaf
    "procs": set(),
    "jail": {"errors"},  # a leaf but for its one typed refusal (SandboxUnavailable)
    "fsutil": set(),
    "reports": set(),
    "globs": set(),  # file globs: matching and overlap (flows and the runtime's tools)
    "flow": {"reports", "events", "globs"},  # the public flow API: deciders over events
    "config": {"errors", "flow"},  # validates -p against a flow's params model
    "store": {"errors", "fsutil"},
    "workspace": {"errors", "fsutil"},
    "agents": {"procs", "jail", "errors", "fsutil", "reports"},
    "flows": {"flow", "reports", "errors", "events", "globs"},
    # Programs the runtime runs in places, and the job/lock helpers agents call: leaves but
    # for the public glob library (the same ownership rules as the flows) and file primitives.
    "tools": {"globs", "fsutil", "errors"},
    "engine": {"store", "agents", "workspace", "procs", "flow", "flows", "reports", "config",
               "errors", "fsutil", "jail", "events"},
    "view": {"store", "errors", "engine", "flows", "agents", "config", "flow", "reports", "fsutil",
             "workspace", "events"},
    # PUBLIC harness for flow tests: the real engine with scripted turns and a fake clock.
    "testing": {"engine", "agents", "flow", "flows", "config"},
    "cli": {"*"},
    "__init__": set(),
    "__main__": {"cli"},
    "sample": {"*"},
}


def _layer(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py")


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(a.name for a in node.names)
    return [m for m in found if m == "flamechase" or m.startswith("flamechase.")]


def test_packages_import_only_their_allowed_layers() -> None:
    bad = []
    for path in SRC.rglob("*.py"):
        layer = _layer(path)
        allowed = ALLOWED.get(layer)
        assert allowed is not None, f"{path} is in a layer the table does not know: {layer}"
        if "*" in allowed:
            continue
        for module in _imports(path):
            parts = module.split(".")
            target = parts[1] if len(parts) > 1 else "__init__"
            if target != layer and target not in allowed and target != "__init__":
                bad.append(f"{path.relative_to(SRC)} imports {module}")
    assert not bad, "\n".join(bad)


def test_only_the_control_loop_imports_the_writer() -> None:
    users = []
    for path in SRC.rglob("*.py"):
        text = path.read_text()
        if "Writer" in text and "import" in text:
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.ImportFrom) and node.module == "flamechase.store.db" \
                        and any(a.name == "Writer" for a in node.names):
                    users.append(str(path.relative_to(SRC)))
    assert users == ["engine/ledger.py"]


def test_every_package_says_what_it_owns() -> None:
    for init in SRC.rglob("__init__.py"):
        if "sample" in init.parts:
            continue
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc) > 40, f"{init.relative_to(SRC)} needs a docstring"
