"""The bundled sample, its improvement ladder, and the simulated lane actor that climbs it.

Real files and real subprocesses throughout: every STEPS figure here comes from running the
sample's `bench.py`, and every report is checked with the engine's own `parse_report`.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from flamechase.flows.sample_lanes import EVALUATOR, METRIC_PATTERN
from flamechase.flows.sample_lanes.actor import LaneActor
from flamechase.flows.sample_lanes.ladder import RUNGS, TOP, rung_of
from flamechase.reports import parse_report
from tests.sim_turns import copy_sample, make_request, one_turn, run_py, sample_dir, steps_of

NAIVE_STEPS = 364071
LADDER_STEPS = [364071, 181014, 10112, 7621, 3043, 801]
ACTOR = LaneActor()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---- the sample -------------------------------------------------------------------------


def test_sample_is_small_and_ships_rung_zero() -> None:
    files = [p for p in sample_dir().rglob("*") if p.is_file()]
    assert len(files) < 10
    assert sum(p.stat().st_size for p in files) < 20_000
    assert not [p for p in files if "__pycache__" in p.parts or p.suffix == ".pyc"]
    assert (sample_dir() / "solver.py").read_text() == RUNGS[0].source
    assert "STEPS" in (sample_dir() / "TASK.md").read_text()


def test_sample_bench_is_deterministic_and_its_tests_pass(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")

    async def go() -> list[tuple[int, str]]:
        return list(
            await asyncio.gather(
                run_py(ws, "bench.py"), run_py(ws, "bench.py"), run_py(ws, "-m", "unittest", "-q")
            )
        )

    (code1, out1), (code2, out2), (tcode, tout) = asyncio.run(go())
    assert (code1, code2) == (0, 0)
    assert out1 == out2
    assert steps_of(out1) == NAIVE_STEPS
    assert tcode == 0, tout
    assert "OK" in tout


def test_sample_bench_refuses_a_wrong_answer_without_steps(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    solver = ws / "solver.py"
    solver.write_text(solver.read_text().replace("count += 1", "count += 2"))
    code, out = asyncio.run(run_py(ws, "bench.py"))
    assert code == 1
    assert "WRONG" in out
    assert not re.findall(METRIC_PATTERN, out)


# Each rung's tests, then its bench, in one interpreter (start-up dominates the cost here).
TESTS_THEN_BENCH = """
import os, sys, unittest
for d in sys.argv[1:]:
    os.chdir(d)
    for name in ("solver", "bench", "test_solver"):
        sys.modules.pop(name, None)
    suite = unittest.defaultTestLoader.discover(d, top_level_dir=d)
    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=0).run(suite)
    print("TESTS:", "OK" if result.wasSuccessful() else "FAILED", result.testsRun, flush=True)
    import bench
    print("EXIT:", bench.main(), flush=True)
    sys.path.remove(d)
"""


def test_every_rung_lowers_steps_and_keeps_tests_green(tmp_path: Path) -> None:
    dirs = []
    for index, rung in enumerate(RUNGS):
        ws = copy_sample(tmp_path / f"rung-{index}")
        (ws / "solver.py").write_text(rung.source)
        assert rung_of(rung.source) == index
        dirs.append(str(ws))
    code, out = asyncio.run(run_py(tmp_path, "-c", TESTS_THEN_BENCH, *dirs))
    assert code == 0, out
    assert re.findall(r"^TESTS: (\w+) (\d+)$", out, re.M) == [("OK", "3")] * len(RUNGS), out
    assert re.findall(r"^EXIT: (\d+)$", out, re.M) == ["0"] * len(RUNGS), out
    steps = [int(s) for s in re.findall(METRIC_PATTERN, out)]
    assert steps == LADDER_STEPS
    assert all(a > b for a, b in itertools.pairwise(steps))
    assert len(steps) >= 5  # at least 4 improvements


def test_sample_runs_with_a_plain_python_too(tmp_path: Path) -> None:
    """The evaluator a run is given (`python bench.py`, site enabled) prints the same STEPS."""
    ws = copy_sample(tmp_path / "ws")
    out = subprocess.run(
        [sys.executable, "bench.py"], cwd=ws, capture_output=True, text=True, check=True
    ).stdout
    assert steps_of(out) == NAIVE_STEPS


# ---- the lane actor ---------------------------------------------------------------------------


def test_steady_lane_two_publishes_a_measured_deliverable(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    request = make_request(tmp_path, ws, lane="lane-2", turn=1, actor=ACTOR)
    answer, data = asyncio.run(one_turn("steady", request))
    assert answer.status == "finished", answer.error
    report = parse_report(data)
    assert report.status == "deliverable_ready"
    assert report.deliverable is not None and report.submission is not None
    sub = report.submission
    assert (sub.metric, sub.direction, sub.evaluator) == ("steps", "minimize", EVALUATOR)
    assert sub.value == LADDER_STEPS[2]  # lane 2 leaps two rungs per turn
    [art] = report.deliverable.artifacts
    artifact = Path(request.env["FLAMECHASE_ARTIFACTS"]) / art.path
    assert artifact.is_file()
    assert art.path.startswith("turn-001-attempt-1/")
    # The artifact, dropped next to a fresh bench.py, measures what the submission claims.
    check = copy_sample(tmp_path / "check")
    shutil.copyfile(artifact, check / "solver.py")
    code, out = asyncio.run(run_py(check, "bench.py"))
    assert code == 0
    assert steps_of(out) == sub.value
    # The lane's own copy holds the same file (the runtime evaluates the lane's workspace).
    assert (ws / "solver.py").read_bytes() == artifact.read_bytes()
    assert not (ws / "__pycache__").exists()
    # Steady writes a terminal checkpoint holding the same report.
    checkpoint = json.loads(Path(request.env["FLAMECHASE_CHECKPOINT"]).read_text())
    assert checkpoint["identity"] == {
        "run_id": "run-sim-1",
        "lane": "lane-2",
        "turn": 1,
        "attempt": 1,
        "phase": "terminal",
    }
    assert checkpoint["report"] == data


def test_a_new_candidate_never_overwrites_an_earlier_one(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    (ws / "solver.py").write_text(RUNGS[2].source)
    root = tmp_path / "artifacts-lane-3"
    root.mkdir()
    (root / "turn-004-attempt-1").mkdir()
    (root / "turn-004-attempt-1" / "solver.py").write_text("earlier")
    request = make_request(tmp_path, ws, lane="lane-3", turn=4, actor=ACTOR)
    _, data = asyncio.run(one_turn("steady", request))
    report = parse_report(data)
    assert report.deliverable is not None and report.submission is not None
    assert report.deliverable.artifacts[0].path == "turn-004-attempt-1-2/solver.py"
    assert (root / "turn-004-attempt-1" / "solver.py").read_text() == "earlier"
    assert report.submission.value == LADDER_STEPS[TOP]  # lane 3 leaps three, capped


def inbox_with(tmp: Path, source: str, *, recorded_sha: str | None = None) -> list[dict[str, Any]]:
    """An inbox holding one lane-3 deliverable whose frozen blob holds `source`."""
    blob = tmp / "blobs" / "ab" / "frozen-solver"
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_text(source)
    blob.chmod(0o444)
    digest = recorded_sha or sha(source.encode())
    artifacts = [{"path": "turn-002-attempt-1/solver.py", "description": "solver"}]
    return [
        {
            "report_id": "lane-3:7",
            "lane": "lane-3",
            "report": {
                "status": "deliverable_ready",
                "summary": "a better solver",
                "deliverable": {
                    "title": "better",
                    "artifacts": artifacts,
                    "integration_notes": "replace solver.py",
                },
                "artifacts": [
                    {
                        **artifacts[0],
                        "size": len(source.encode()),
                        "sha256": digest,
                        "blob": str(blob),
                    }
                ],
            },
        }
    ]


def test_lane_one_integrates_a_better_inbox_artifact(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    inbox = inbox_with(tmp_path, RUNGS[4].source)
    request = make_request(tmp_path, ws, lane="lane-1", inbox=inbox, actor=ACTOR)
    answer, data = asyncio.run(one_turn("steady", request))
    assert answer.status == "finished", answer.error
    report = parse_report(data)
    assert report.status == "progress"
    assert (ws / "solver.py").read_text() == RUNGS[4].source
    assert any("lane-3:7" in c for c in report.changes)
    assert any("lane-3:7" in e for e in report.evidence)
    assert any(f"STEPS: {LADDER_STEPS[4]}" in e for e in report.evidence)
    assert any(f"STEPS: {NAIVE_STEPS}" in e for e in report.evidence)
    assert report.tests and "OK" in report.tests[0]


def test_lane_one_refuses_an_artifact_whose_hash_does_not_match(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    inbox = inbox_with(tmp_path, RUNGS[5].source, recorded_sha="0" * 64)
    request = make_request(tmp_path, ws, lane="lane-1", inbox=inbox, actor=ACTOR)
    _, data = asyncio.run(one_turn("steady", request))
    report = parse_report(data)
    # Not integrated: lane 1 climbed one rung itself instead.
    assert (ws / "solver.py").read_text() == RUNGS[1].source
    assert report.status == "progress"
    assert any("lane-3:7" in r and "sha256 mismatch" in r for r in report.risks)
    assert not any("integrated" in e for e in report.evidence)


def test_a_flood_of_bad_artifacts_still_gives_a_valid_report(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    (ws / "solver.py").write_text(RUNGS[TOP].source)
    [record] = inbox_with(tmp_path, RUNGS[1].source, recorded_sha="f" * 64)
    inbox = [{**record, "report_id": f"lane-2:{i}"} for i in range(45)]
    request = make_request(tmp_path, ws, lane="lane-1", inbox=inbox, actor=ACTOR)
    _, data = asyncio.run(one_turn("steady", request))
    report = parse_report(data)
    assert report.status == "no_result"
    assert len(report.risks) == 30
    assert report.risks[-1] == "and 16 more not integrated"


def test_lane_one_ignores_an_artifact_no_better_than_the_tree(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    (ws / "solver.py").write_text(RUNGS[3].source)
    inbox = inbox_with(tmp_path, RUNGS[2].source)
    request = make_request(tmp_path, ws, lane="lane-1", inbox=inbox, actor=ACTOR)
    _, data = asyncio.run(one_turn("steady", request))
    report = parse_report(data)
    assert (ws / "solver.py").read_text() == RUNGS[4].source
    assert any(f"STEPS: {LADDER_STEPS[4]}" in e for e in report.evidence)


def test_flame_chase_at_the_top_of_the_ladder_reports_no_result(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    (ws / "solver.py").write_text(RUNGS[TOP].source)
    request = make_request(
        tmp_path, ws, lane="lane-1", role="first_chaser", flow="flame_chase", turn=9, actor=ACTOR
    )
    _, data = asyncio.run(one_turn("steady", request))
    report = parse_report(data)
    assert report.status == "no_result"
    assert f"STEPS: {LADDER_STEPS[TOP]}" in report.evidence[0]
    assert (ws / "solver.py").read_text() == RUNGS[TOP].source


def test_a_tree_that_is_not_the_sample_is_left_to_the_backend(
    tmp_path: Path, source_tree: Path
) -> None:
    request = make_request(tmp_path, source_tree, lane="lane-1", flow="flame_chase", actor=ACTOR)
    _, data = asyncio.run(one_turn("steady", request))
    report = parse_report(data)
    assert report.status == "progress"
    notes = (source_tree / "NOTES.md").read_text()
    assert notes.count("\n") == 1
    assert "lane-1 turn 1" in notes


def test_the_same_seed_gives_the_same_report_and_usage(tmp_path: Path) -> None:
    requests = []
    for name in ("one", "two"):
        base = tmp_path / name
        base.mkdir()
        ws = copy_sample(base / "ws")
        requests.append(make_request(base, ws, lane="lane-3", turn=2, actor=ACTOR))

    async def both() -> list[tuple[Any, Any]]:
        return list(await asyncio.gather(*(one_turn("steady", r) for r in requests)))

    (a1, r1), (a2, r2) = asyncio.run(both())
    assert r1 == r2
    assert parse_report(r1).status == "deliverable_ready"
    assert a1.usage == a2.usage
    assert a1.usage.input_tokens > 0 and a1.usage.output_tokens > 0
