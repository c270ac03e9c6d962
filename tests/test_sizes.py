"""Small modules and short functions: a file over 500 lines or a function over 60 lines in
src/ says why, in a `# long file:` line (after the module docstring) or a `# long:` line
right above the def."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "flamechase"


def test_long_files_and_functions_say_why() -> None:
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        rel = path.relative_to(SRC)
        if len(lines) > 500 and not any(ln.startswith("# long file:") for ln in lines[:60]):
            bad.append(f"{rel}: {len(lines)} lines and no '# long file:' reason")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                length = node.end_lineno - node.lineno + 1
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                above = lines[first - 2].strip() if first >= 2 else ""
                if length > 60 and not above.startswith("# long:"):
                    bad.append(f"{rel}:{node.lineno} {node.name}: {length} lines, no reason")
    assert not bad, "\n".join(bad)
