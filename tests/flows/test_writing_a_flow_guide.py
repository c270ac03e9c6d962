"""Every Python block of docs/writing-a-flow.md runs: a block is either a verbatim part of an
example under docs/examples/ (each run end to end by its own test), or it is run here, in
order, where the guide says it goes on: in the review example's namespace, with a
`workspace` to run in."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

from flamechase.flow import SimActor

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "writing-a-flow.md"
EXAMPLES = ROOT / "docs" / "examples"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def test_every_python_block_of_the_guide_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    examples = {p.name: p.read_text() for p in sorted(EXAMPLES.glob("*.py"))}
    namespace = runpy.run_path(str(EXAMPLES / "review_flow.py"), run_name="guide")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    namespace["workspace"] = workspace
    monkeypatch.chdir(ROOT)  # the guide names the examples by their path in the repository
    excerpts, ran = [], []
    for n, block in enumerate(BLOCK.findall(GUIDE.read_text()), start=1):
        home = next((name for name, text in examples.items() if block in text), None)
        if home is not None:  # run by the example's own test (below)
            excerpts.append(n)
            continue
        exec(compile(block, f"{GUIDE.name}, python block {n}", "exec"), namespace)
        ran.append(n)
    assert len(excerpts) >= 4 and len(ran) >= 3, (excerpts, ran)
    assert isinstance(namespace["ReviewActor"](), SimActor)  # "Simulating a flow"


def test_each_example_has_a_test_that_runs_it() -> None:
    for example in sorted(EXAMPLES.glob("*.py")):
        stem = example.stem.removesuffix("_flow")
        tests = list((ROOT / "tests" / "flows").glob(f"test_{stem}_example.py"))
        assert tests, f"{example.name} has no tests/flows/test_{stem}_example.py"
        assert example.name in tests[0].read_text()
