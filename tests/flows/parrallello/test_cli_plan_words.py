"""A plan file's mistakes are refused in the plan's own words, naming the front by its id, in
one line through the CLI: never pydantic's ("Dictionary should have at most 2 items after
validation")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import cli

GATE = 'gate: "python3 gates/p1.py"'


@pytest.mark.parametrize(
    ("plan", "says"),
    [
        (
            f"fronts: [{{id: P1, {GATE}, owners: {{core: [a], tests: [b], docs: [c]}}}}]",
            "front P1, owners: 3 builders (core, tests, docs); a front has at most 2 (one per "
            "builder lane): give one builder's files to another, or make another front of them",
        ),
        (
            f"fronts: [{{id: P1, {GATE}, owners: {{}}}}]",
            "front P1, owners: no builder; give at least one, as `owners: {NAME: [GLOB, ...]}`",
        ),
        ("fronts: []", "fronts: the plan has no front; give at least one"),
        (
            f"fronts: [{{id: P1, {GATE}, owners: {{core: [a]}}, colour: red}}]",
            "front P1, colour: not a key of a front; known keys: id, title, goal,",
        ),
        (
            f"fronts: [{{id: '1 bad', {GATE}, owners: {{core: [a]}}}}]",
            "front '1 bad', id: must be a short name: a letter, then letters, digits, _ or -",
        ),
        (
            f"fronts: [{{id: P1, {GATE}, owners: {{core: a}}}}]",
            "front P1, owners.core: must be a list, e.g. [solver.py]",
        ),
        (
            f"rounds_per_block: 5\nfronts: [{{id: P1, {GATE}, owners: {{core: [a]}}}}]",
            "rounds_per_block: must be at most 3",
        ),
        (
            f"fronts: [{{id: P1, {GATE}, owners: {{core: [a]}}, weight: heavy}}]",
            "front P1, weight: must be a number",
        ),
        ("fronts: [{id: P1, owners: {core: [a]}}]", "front P1, gate: is required"),
    ],
)
def test_a_plans_mistake_is_said_in_the_plans_words(
    plan: str, says: str, source_tree: Path, state_home: Path
) -> None:
    (source_tree / "PLAN.yaml").write_text(plan + "\n")
    proc = cli(
        "exec", "-f", "parrallello", "-a", "builder=sim/steady", "-a", "critic=sim/steady",
        "-p", "prep=false,plan=PLAN.yaml,budget.turns=4", "build it", cwd=source_tree,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("flamechase exec: error: param plan=PLAN.yaml: " + says), line
    assert "should" not in line and "validation" not in line and "Input" not in line, line
    assert not (state_home / "runs").exists()
