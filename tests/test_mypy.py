"""flamechase.mypy: with the plugin, mypy reads `FlowState.replace` as taking the state's fields."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

FLOW = """
    from typing import Generic, TypeVar

    from flamechase.flow import FlowState

    T = TypeVar("T")


    class Tally(FlowState):
        count: int = 0
        seen: tuple[str, ...] = ()


    class Boxed(FlowState, Generic[T]):
        item: T


    def fold(state: Tally, box: Boxed[int]) -> Tally:
        state = state.replace(count=state.count + 1, seen=(*state.seen, "a"))
        box = box.replace(item=2)
        box.replace(item="2")
        state.replace(cuont=1)
        return state.replace(count="1")
"""


def _mypy(tmp_path: Path, plugins: str) -> list[str]:
    (tmp_path / "flow.py").write_text(textwrap.dedent(FLOW))
    (tmp_path / "mypy.ini").write_text(f"[mypy]\nstrict = True\nplugins = {plugins}\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            "mypy.ini",
            "--cache-dir",
            "cache",
            "flow.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return [line for line in proc.stdout.splitlines() if ": error:" in line]


def test_a_misspelled_field_and_a_wrong_type_are_mypy_errors(tmp_path: Path) -> None:
    errors = _mypy(tmp_path, "pydantic.mypy, flamechase.mypy")
    said = [e.split(": error: ", 1)[1] for e in errors]
    assert len(said) == 3, errors
    assert said[0].startswith('Argument "item" to "replace" of "FlowState" has incompatible type')
    assert 'Unexpected keyword argument "cuont"' in said[1] and 'did you mean "count"' in said[1]
    assert said[2].startswith('Argument "count" to "replace" of "FlowState" has incompatible')


def test_without_the_plugin_mypy_lets_them_through(tmp_path: Path) -> None:
    # What the plugin adds: `replace(**changes: Any)` alone is checked at run time only.
    assert _mypy(tmp_path, "pydantic.mypy") == []
