"""parrallello's refusals through the CLI, each one line in the flow's own words: a plan file's
mistakes name the front by its id (never pydantic's "Dictionary should have at most 2 items
after validation"), and a missing prep or planner agent says how to run without one."""

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


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ("plan=PLAN.yaml", "needs an agent for 'prep'; "),
        ("", "needs an agent for 'planner', 'prep'; "),
    ],
)
def test_a_missing_prep_or_planner_agent_says_how_to_run_without_it(
    params: str, says: str, source_tree: Path, state_home: Path
) -> None:
    (source_tree / "PLAN.yaml").write_text(f"fronts: [{{id: P1, {GATE}, owners: {{core: [a]}}}}]\n")
    proc = cli(
        "exec", "-f", "parrallello", "-a", "builder=sim/steady", "-a", "critic=sim/steady",
        "-p", ",".join(x for x in (params, "budget.turns=4") if x), "build it", cwd=source_tree,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert says in line and line.endswith("-p prep=false"), line
    assert ("-p plan=PLAN.yaml" in line) == (not params), line
    # What it says works: without prep (and with a plan), the run starts.
    ok = cli(
        "exec", "-f", "parrallello", "-a", "builder=sim/steady", "-a", "critic=sim/steady",
        "-p", "plan=PLAN.yaml,prep=false,budget.turns=1", "build it", cwd=source_tree,
        timeout=120,
    )  # fmt: skip
    assert "needs an agent" not in ok.stderr and ok.returncode in (0, 1), ok.stderr
    assert (state_home / "runs").exists()
