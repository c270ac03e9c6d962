"""Packages import only what their layer allows, and only the control loop holds a Writer.

The table is the architecture (ARCHITECTURE.md, "Layers"); a new edge must be argued there.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "flamechase"

ARCHITECTURE = Path(__file__).resolve().parents[1] / "ARCHITECTURE.md"
_ROW = re.compile(r"^\| `([\w_]+)` \| (.+?) \| .+\|$")


def allowed() -> dict[str, set[str]]:
    """layer -> layers it may import, as ARCHITECTURE.md's "Layers" table says."""
    text = ARCHITECTURE.read_text()
    table = text.split("## Layers (who may import whom)", 1)[1].split("\n## ", 1)[0]
    out: dict[str, set[str]] = {}
    for line in table.splitlines():
        m = _ROW.match(line.strip())
        if not m:
            continue
        layer, may = m.groups()
        if may == "anything":
            out[layer] = {"*"}
        elif may.startswith("nothing"):
            out[layer] = set()
        else:
            out[layer] = set(re.findall(r"`([\w_]+)`", may))
    return out


ALLOWED = allowed()


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
                if (
                    isinstance(node, ast.ImportFrom)
                    and node.module == "flamechase.store.db"
                    and any(a.name == "Writer" for a in node.names)
                ):
                    users.append(str(path.relative_to(SRC)))
    assert users == ["engine/ledger.py"]


def test_the_table_names_every_layer() -> None:
    layers = {p.relative_to(SRC).parts[0].removesuffix(".py") for p in SRC.rglob("*.py")}
    assert layers <= set(ALLOWED), sorted(layers - set(ALLOWED))
    assert ALLOWED["engine"] and ALLOWED["cli"] == {"*"} and ALLOWED["events"] == set()


def test_every_package_says_what_it_owns() -> None:
    for init in SRC.rglob("__init__.py"):
        if "sample" in init.parts:
            continue
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc) > 40, f"{init.relative_to(SRC)} needs a docstring"
