"""The bundled sample, its improvement ladder, and the `sim/PROFILE` simulated actor.

Real files and real subprocesses throughout: every STEPS figure here comes from running the
sample's `bench.py`, and every report is checked with the engine's own `parse_report`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import itertools
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from flamechase.agents.backend import Answer, TurnRequest
from flamechase.agents.sim import (
    EVALUATOR,
    METRIC_PATTERN,
    SimBackend,
    fate_of,
    sample_dir,
)
from flamechase.agents.sim_ladder import RUNGS, TOP, rung_of
from flamechase.agents.spec import parse_spec
from flamechase.errors import BackendUnavailable
from flamechase.flows.parallel_flame_chase.plans import validate_plan
from flamechase.reports import parse_report

NAIVE_STEPS = 364071
LADDER_STEPS = [364071, 181014, 10112, 7621, 3043, 801]


def copy_sample(dest: Path) -> Path:
    shutil.copytree(sample_dir(), dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


async def run_py(cwd: Path, *args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-S",
        "-B",
        *args,
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode()


def steps_of(output: str) -> int:
    found = re.findall(METRIC_PATTERN, output)
    assert len(found) == 1, output
    return int(found[0])


def make_request(
    tmp: Path,
    workspace: Path,
    *,
    lane: str = "lane-2",
    role: str | None = None,
    turn: int = 1,
    attempt: int = 1,
    run_id: str = "run-sim-1",
    flow: str = "parallel_flame_chase",
    inbox: list[dict[str, Any]] | None = None,
    env: Mapping[str, str] | None = None,
    io_name: str = "io",
) -> TurnRequest:
    io = tmp / io_name
    io.mkdir(parents=True, exist_ok=True)
    full_env = {
        "FLAMECHASE_ARTIFACTS": str(tmp / f"artifacts-{lane}"),
        "FLAMECHASE_CHECKPOINT": str(tmp / f"checkpoint-{lane}.json"),
    }
    (tmp / f"artifacts-{lane}").mkdir(exist_ok=True)
    if inbox is not None:
        (io / "inbox.json").write_text(json.dumps(inbox))
        full_env["FLAMECHASE_INBOX"] = str(io / "inbox.json")
    full_env.update(env or {})
    if role is None:
        role = "coordinator" if not lane else f"{lane.replace('-', '_')}_actor_a"
    return TurnRequest(
        run_id=run_id,
        run_dir=tmp / "run",
        flow=flow,
        role=role,
        lane=lane,
        turn=turn,
        attempt=attempt,
        workspace=workspace,
        io_dir=io,
        prompt="do the task",
        env=full_env,
    )


async def one_turn(profile: str, request: TurnRequest) -> tuple[Answer, Any]:
    """Ask once (no repair); return the answer and the decoded report (None if absent)."""
    backend = SimBackend(parse_spec(f"sim/{profile}"))
    session = backend.open(request, lambda pgid, token: None)
    try:
        answer = await session.ask(request.prompt)
    finally:
        await session.close()
    return answer, read_report(request)


def read_report(request: TurnRequest) -> Any:
    if not request.report_path.exists():
        return None
    return json.loads(request.report_path.read_text())


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


# ---- the backend ----------------------------------------------------------------------------


def test_check_accepts_the_profiles_and_names_them_on_a_typo() -> None:
    for profile in ("steady", "flaky", "blocked", "silent"):
        SimBackend(parse_spec(f"sim/{profile}")).check()
    with pytest.raises(BackendUnavailable, match="steady") as info:
        SimBackend(parse_spec("sim/stedy")).check()
    assert "'stedy'" in str(info.value)
    assert "blocked, flaky, silent, steady" in str(info.value)


@pytest.mark.parametrize("lanes", [3, 5])
def test_planner_writes_a_valid_plan(tmp_path: Path, lanes: int) -> None:
    ws = copy_sample(tmp_path / "ws")
    names = [f"lane-{i}" for i in range(1, lanes + 1)]
    request = make_request(tmp_path, ws, lane="", turn=1, env={"FLAMECHASE_LANES": ",".join(names)})
    answer, plan = asyncio.run(one_turn("steady", request))
    assert answer.status == "finished"
    assert answer.usage.cost_usd > 0
    assert answer.usage.self_reported
    assert set(plan) == {"lanes"}
    # The plan passes the flow's own plan validation, as the engine will run it.
    assert [e["lane"] for e in validate_plan(plan, names)["lanes"]] == names
    assert [entry["lane"] for entry in plan["lanes"]] == names
    for entry in plan["lanes"]:
        mission = entry["mission"]
        assert mission["title"].strip()
        assert mission["objective"].strip()
        assert mission["success_criteria"]
        assert all(isinstance(c, str) and c for c in mission["success_criteria"])
        assert mission["approach_class"]
    assert plan["lanes"][0]["mission"]["kind"] == "integration"
    assert "ntegrat" in plan["lanes"][0]["mission"]["objective"]
    # The lanes diverge: no two exploring lanes share an approach.
    classes = [e["mission"]["approach_class"] for e in plan["lanes"]]
    assert len(set(classes)) == len(classes)
    # The planner never touches the tree it plans in.
    assert (ws / "solver.py").read_text() == RUNGS[0].source


def test_planner_without_lane_list_reads_the_prompt(tmp_path: Path) -> None:
    request = make_request(tmp_path, tmp_path, lane="")
    request = dataclasses.replace(request, prompt="Plan lane-1, lane-2, lane-3 and lane-4.")
    _, plan = asyncio.run(one_turn("steady", request))
    assert [e["lane"] for e in plan["lanes"]] == ["lane-1", "lane-2", "lane-3", "lane-4"]


def test_steady_lane_two_publishes_a_measured_deliverable(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    request = make_request(tmp_path, ws, lane="lane-2", turn=1)
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
    request = make_request(tmp_path, ws, lane="lane-3", turn=4)
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
    request = make_request(tmp_path, ws, lane="lane-1", inbox=inbox)
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
    request = make_request(tmp_path, ws, lane="lane-1", inbox=inbox)
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
    request = make_request(tmp_path, ws, lane="lane-1", inbox=inbox)
    _, data = asyncio.run(one_turn("steady", request))
    report = parse_report(data)
    assert report.status == "no_result"
    assert len(report.risks) == 30
    assert report.risks[-1] == "and 16 more not integrated"


def test_lane_one_ignores_an_artifact_no_better_than_the_tree(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    (ws / "solver.py").write_text(RUNGS[3].source)
    inbox = inbox_with(tmp_path, RUNGS[2].source)
    request = make_request(tmp_path, ws, lane="lane-1", inbox=inbox)
    _, data = asyncio.run(one_turn("steady", request))
    report = parse_report(data)
    assert (ws / "solver.py").read_text() == RUNGS[4].source
    assert any(f"STEPS: {LADDER_STEPS[4]}" in e for e in report.evidence)


def test_flame_chase_at_the_top_of_the_ladder_reports_no_result(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    (ws / "solver.py").write_text(RUNGS[TOP].source)
    request = make_request(
        tmp_path, ws, lane="lane-1", role="first_chaser", flow="flame_chase", turn=9
    )
    _, data = asyncio.run(one_turn("steady", request))
    report = parse_report(data)
    assert report.status == "no_result"
    assert f"STEPS: {LADDER_STEPS[TOP]}" in report.evidence[0]
    assert (ws / "solver.py").read_text() == RUNGS[TOP].source


def test_a_tree_that_is_not_the_sample_gets_a_note(tmp_path: Path, source_tree: Path) -> None:
    request = make_request(tmp_path, source_tree, lane="lane-1", flow="flame_chase")
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
        requests.append(make_request(base, ws, lane="lane-3", turn=2))

    async def both() -> list[tuple[Answer, Any]]:
        return list(await asyncio.gather(*(one_turn("steady", r) for r in requests)))

    (a1, r1), (a2, r2) = asyncio.run(both())
    assert r1 == r2
    assert parse_report(r1).status == "deliverable_ready"
    assert a1.usage == a2.usage
    assert a1.usage.input_tokens > 0 and a1.usage.output_tokens > 0


def test_another_seed_gives_other_usage(tmp_path: Path) -> None:
    usages = set()
    for attempt in (1, 2, 3):
        request = make_request(tmp_path, tmp_path, lane="lane-2", attempt=attempt)
        answer, _ = asyncio.run(one_turn("silent", request))
        usages.add(answer.usage)
    assert len(usages) == 3


# ---- profiles ------------------------------------------------------------------------------


def _find_turn(tmp: Path, profile: str, fate: str) -> int:
    for turn in range(1, 200):
        req = make_request(tmp, tmp, lane="lane-1", turn=turn, run_id="flaky-run")
        if fate_of(profile, req) == fate:
            return turn
    raise AssertionError(f"no {fate} turn")


def test_flaky_fates_are_deterministic_and_about_a_quarter_each(tmp_path: Path) -> None:
    fates = [
        fate_of("flaky", make_request(tmp_path, tmp_path, lane="lane-2", turn=t, run_id="r"))
        for t in range(1, 401)
    ]
    again = [
        fate_of("flaky", make_request(tmp_path, tmp_path, lane="lane-2", turn=t, run_id="r"))
        for t in range(1, 401)
    ]
    assert fates == again
    for fate in ("crash", "invalid_first"):
        assert 60 <= fates.count(fate) <= 140, fates.count(fate)


def test_flaky_crash_fails_the_turn_without_a_report(tmp_path: Path, source_tree: Path) -> None:
    turn = _find_turn(tmp_path, "flaky", "crash")
    request = make_request(tmp_path, source_tree, lane="lane-1", turn=turn, run_id="flaky-run")
    answer, data = asyncio.run(one_turn("flaky", request))
    assert answer.status == "failed"
    assert answer.error == "sim: simulated crash (exit 1)"
    assert answer.exit_code == 1
    assert data is None
    assert not (source_tree / "NOTES.md").exists()


def test_flaky_invalid_report_is_fixed_on_repair(tmp_path: Path, source_tree: Path) -> None:
    turn = _find_turn(tmp_path, "flaky", "invalid_first")
    request = make_request(tmp_path, source_tree, lane="lane-1", turn=turn, run_id="flaky-run")

    async def go() -> tuple[Answer, Any, Answer, Any]:
        session = SimBackend(parse_spec("sim/flaky")).open(request, lambda p, t: None)
        assert session.continues
        first = await session.ask(request.prompt)
        bad = read_report(request)
        second = await session.ask("fix it", repair="status: bad value")
        good = read_report(request)
        await session.close()
        return first, bad, second, good

    first, bad, second, good = asyncio.run(go())
    assert first.status == "finished" and second.status == "finished"
    with pytest.raises(ValueError):
        parse_report(bad)
    assert parse_report(good).status == "progress"
    # The work was done once: the repair only rewrote the report.
    assert (source_tree / "NOTES.md").read_text().count("\n") == 1
    assert second.usage.input_tokens < first.usage.input_tokens


def test_blocked_reports_blocked_on_its_own_second_turn(tmp_path: Path, source_tree: Path) -> None:
    statuses = []
    for turn in (1, 2, 3, 4, 5):
        request = make_request(tmp_path, source_tree, lane="lane-1", turn=turn, io_name=f"t{turn}")
        _, data = asyncio.run(one_turn("blocked", request))
        statuses.append(parse_report(data).status)
    # Actor a takes lane turns 1, 3, 5 and actor b 2, 4: each blocks on its second.
    assert statuses == ["progress", "progress", "blocked", "blocked", "progress"]


def test_silent_writes_nothing(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    request = make_request(tmp_path, ws, lane="lane-2")
    answer, data = asyncio.run(one_turn("silent", request))
    assert answer.status == "finished"
    assert data is None
    assert not Path(request.env["FLAMECHASE_CHECKPOINT"]).exists()
    assert (ws / "solver.py").read_text() == RUNGS[0].source


def test_cut_before_ask_interrupts(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    request = make_request(tmp_path, ws, lane="lane-2")

    async def go() -> Answer:
        session = SimBackend(parse_spec("sim/steady")).open(request, lambda p, t: None)
        await session.cut()
        return await session.ask(request.prompt)

    assert asyncio.run(go()).status == "interrupted"
    assert read_report(request) is None


def test_cut_mid_turn_ends_the_checks_and_restores_the_tree(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    request = make_request(tmp_path, ws, lane="lane-2")

    async def go() -> Answer:
        session = SimBackend(parse_spec("sim/steady")).open(request, lambda p, t: None)
        task = asyncio.ensure_future(session.ask(request.prompt))
        # The new solver.py is in place while its tests and bench run: cut then.
        for _ in range(5000):
            if task.done() or (ws / "solver.py").read_text() != RUNGS[0].source:
                break
            await asyncio.sleep(0.001)
        await session.cut()
        answer = await task
        await session.close()
        return answer

    answer = asyncio.run(go())
    assert answer.status == "interrupted"
    assert read_report(request) is None
    assert (ws / "solver.py").read_text() == RUNGS[0].source
    assert not list(Path(request.env["FLAMECHASE_ARTIFACTS"]).iterdir())


def test_sample_runs_with_a_plain_python_too(tmp_path: Path) -> None:
    """The evaluator a run is given (`python bench.py`, site enabled) prints the same STEPS."""
    ws = copy_sample(tmp_path / "ws")
    out = subprocess.run(
        [sys.executable, "bench.py"], cwd=ws, capture_output=True, text=True, check=True
    ).stdout
    assert steps_of(out) == NAIVE_STEPS


def test_each_check_is_reported_as_a_process_of_the_turn(tmp_path: Path) -> None:
    # The checks run the tree's own code: the engine learns of each (to sweep it after a
    # crash) before it runs, as of an agent's process, under the turn's token.
    ws = copy_sample(tmp_path / "ws")
    request = make_request(tmp_path, ws, lane="lane-2")
    request.env["FLAMECHASE_PROC_TOKEN"] = "turn-token"  # type: ignore[index]
    spawned: list[tuple[int, str]] = []

    async def go() -> Answer:
        session = SimBackend(parse_spec("sim/steady")).open(
            request, lambda pgid, token: spawned.append((pgid, token))
        )
        try:
            return await session.ask(request.prompt)
        finally:
            await session.close()

    answer = asyncio.run(go())
    assert answer.status == "finished", answer.error
    assert len(spawned) >= 2  # the tests and the bench, at least
    assert {token for _, token in spawned} == {"turn-token"}
    for pgid, _ in spawned:
        assert not Path(f"/proc/{pgid}").exists()  # nothing of a check outlives it
