"""`python -m flamechase` run in a tree an agent wrote: a module planted there under the name of
one flamechase imports (click, yaml, pydantic) is never imported in its place."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests import plants


def test_python_m_flamechase_imports_nothing_from_the_tree_it_runs_in(tmp_path: Path) -> None:
    marks, tree = tmp_path / "marks", tmp_path / "tree"
    marks.mkdir()
    tree.mkdir()
    for name in ("click", "yaml", "pydantic", "rich"):
        (tree / f"{name}.py").write_text(plants.code(name, marks))
    proc = subprocess.run(
        [sys.executable, "-m", "flamechase", "flows", "list"],
        cwd=tree,
        env=plants.env_without_python(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert plants.marks(marks) == [], proc.stdout
    assert proc.returncode == 0, proc.stderr
    assert "parrallello" in proc.stdout
