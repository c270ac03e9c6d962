"""`-f NAME:VARIANT`: a built-in flow's variants, by name; an unknown one is refused in one
line before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from flamechase.errors import FlowNotFound
from flamechase.flows import builtin_names
from flamechase.loader import flow_identity, load_flow
from tests.helpers import cli


def test_a_variant_loads_by_its_name_and_is_listed_with_the_builtins() -> None:
    flow = load_flow("parallel_flame_chase:git_pr")
    assert flow.name == "parallel_flame_chase:git_pr"
    assert "parallel_flame_chase:git_pr" in builtin_names()
    source, digest = flow_identity(flow, "parallel_flame_chase:git_pr")
    assert source == "builtin:parallel_flame_chase:git_pr" and len(digest) == 64


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        (
            "parallel_flame_chase:nope",
            "flow parallel_flame_chase has no variant 'nope'; its variants: "
            "parallel_flame_chase:git_pr",
        ),
        ("flame_chase:git_pr", "flow flame_chase has no variant 'git_pr'; its variants: none"),
    ],
)
def test_an_unknown_variant_is_refused_naming_the_known_ones(ref: str, message: str) -> None:
    with pytest.raises(FlowNotFound) as info:
        load_flow(ref)
    assert str(info.value) == message


def test_a_path_with_a_colon_is_still_a_path(tmp_path: Path) -> None:
    path = tmp_path / "my:flow.py"
    path.write_text((Path(__file__).parents[2] / "docs/examples/review_flow.py").read_text())
    assert load_flow(str(path)).name == "review"


def test_exec_refuses_an_unknown_variant_with_exit_2_and_writes_nothing(
    source_tree: Path, state_home: Path
) -> None:
    proc = cli(
        "exec", "-f", "parallel_flame_chase:nope", "-p", "budget.turns=1", "go", cwd=source_tree
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "flamechase exec: error: flow parallel_flame_chase has no "
        "variant 'nope'; its variants: parallel_flame_chase:git_pr"
    )
    assert not state_home.exists()


def test_the_variant_needs_an_evaluator(source_tree: Path, state_home: Path) -> None:
    proc = cli(
        "exec", "-f", "parallel_flame_chase:git_pr", "-p", "budget.turns=1", "go", cwd=source_tree
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "flamechase exec: error: param evaluator: parallel_flame_chase:git_pr needs -p "
        "evaluator='COMMAND': the runtime runs it on main and on every candidate to decide "
        "what is merged"
    )
    assert not state_home.exists()
