"""Files an agent plants where the runtime's programs run, to get its code imported by them.

Every plant, if imported, leaves a mark: a file `plant-mark-<kind>-<pid>` in the test's marks
directory (writable only outside a jail) or else in its `$TMPDIR` (a jailed one), and a line
`PLANTED <kind> ran in <cwd>` on stdout (kept in a receipt's output). A shadow then hands over
to the real package, as the attacks seen did, so that a run goes on and reaches every later
place. A test plants them, runs the runtime, and asserts no mark anywhere: `marks(...)` lists
what it finds.

    module          flamechase.py (shadows the package for `python -m flamechase...`)
    package         flamechase/__init__.py (the same, as a package)
    sitecustomize   sitecustomize.py (imported at start-up from any directory on the path)
    usercustomize   usercustomize.py (the same, from the user site)
    pth             plant.pth + _plant_pth.py (a .pth file's `import` line runs at start-up)

A directory can shadow the package one way only (a package beats a module beside it), so a
tree gets `module` or `package`, and the start-up plants with either.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

MARKER = "plant-mark-"
SAID = "PLANTED "

_CODE = """\
import os as _os
for _d in ({marks!r}, _os.environ.get("TMPDIR") or "/nonexistent"):
    try:
        with open(_os.path.join(_d, "{marker}{kind}-%d" % _os.getpid()), "w") as _f:
            _f.write(_os.getcwd())
        break
    except OSError:
        pass
print("{said}{kind} ran in " + _os.getcwd(), flush=True)
if {kind!r} in ("module", "package"):  # a shadow hands over to the real package
    import sys as _sys
    _here = _os.path.dirname(_os.path.abspath(__file__))
    _mine = (_here, _os.path.dirname(_here))
    _sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or ".") not in _mine]
    _sys.modules.pop("flamechase", None)
    if __name__ == "__main__":  # `python -m flamechase` ran this file itself
        import runpy
        runpy.run_module("flamechase", run_name="__main__", alter_sys=True)
    else:
        import flamechase as _real
        _sys.modules["flamechase"] = _real
"""


def code(kind: str, marks: Path) -> str:
    return _CODE.format(marks=str(marks), marker=MARKER, kind=kind, said=SAID)


def files(marks: Path, shadow: str = "module") -> dict[str, str]:
    """What to plant at a tree's root (relative path -> text): the `shadow` ("module" or
    "package") and every start-up plant."""
    out = {
        "sitecustomize.py": code("sitecustomize", marks),
        "usercustomize.py": code("usercustomize", marks),
        "plant.pth": "import _plant_pth\n",
        "_plant_pth.py": code("pth", marks),
    }
    if shadow == "module":
        out["flamechase.py"] = code("module", marks)
    else:
        out["flamechase/__init__.py"] = code("package", marks)
    return out


def plant(root: Path, marks: Path, shadow: str = "module") -> None:
    for rel, text in files(marks, shadow).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def user_site(base: Path, marks: Path) -> dict[str, str]:
    """A user site under `base` holding usercustomize and a .pth; the environment that makes
    a Python that is not isolated read it (and `base` itself, through PYTHONPATH)."""
    site = base / "userbase" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site = site / "site-packages"
    site.mkdir(parents=True, exist_ok=True)
    (site / "usercustomize.py").write_text(code("usercustomize", marks))
    (site / "plant.pth").write_text("import _plant_pth\n")
    (site / "_plant_pth.py").write_text(code("pth", marks))
    return {"PYTHONUSERBASE": str(base / "userbase"), "PYTHONPATH": str(base)}


def marks(marks_dir: Path, *trees: Path) -> list[str]:
    """Every mark a plant left: in `marks_dir`, and anywhere under `trees` (jailed plants
    write into their TMPDIR)."""
    found = [p.name for p in marks_dir.iterdir()] if marks_dir.is_dir() else []
    for tree in trees:
        if tree.is_dir():
            found += [str(p) for p in tree.rglob(f"{MARKER}*")]
    return sorted(found)


def said(events: list[dict[str, object]]) -> list[str]:
    """Receipts (of `ran` and `measured` events) whose output says a plant ran."""
    return [
        json.dumps(e["payload"])[:300]
        for e in events
        if e["kind"] in ("ran", "measured") and SAID in json.dumps(e["payload"])
    ]


def env_without_python() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
