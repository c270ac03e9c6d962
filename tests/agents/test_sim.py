"""The `sim/PROFILE` backend: profiles, fates, usage, repair, checkpoints, cuts, the runner it
gives a flow's actor, and its own answers when a turn has no actor.

Real files and real subprocesses throughout; every result is checked with the turn's own
`ResultSpec` (the engine's validation). The built-in flows' actors are tested with their
flows (tests/flows/sample_lanes, tests/flows/test_parallel_sim.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from flamechase.agents.backend import Answer
from flamechase.agents.sim import SimBackend, fate_of
from flamechase.agents.spec import parse_spec
from flamechase.errors import BackendUnavailable
from flamechase.flow import REPORT, ResultSpec, SimActor, SimTurn
from flamechase.flows.sample_lanes.actor import LaneActor
from flamechase.flows.sample_lanes.ladder import RUNGS
from flamechase.reports import parse_report
from tests.sim_turns import copy_sample, make_request, one_turn, read_report


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    approve: bool
    comments: list[str] = Field(default_factory=list, max_length=3)


VERDICT = ResultSpec(Verdict, noun="verdict")


def test_check_accepts_the_profiles_and_names_them_on_a_typo() -> None:
    for profile in ("steady", "flaky", "blocked", "silent"):
        SimBackend(parse_spec(f"sim/{profile}")).check()
    with pytest.raises(BackendUnavailable, match="steady") as info:
        SimBackend(parse_spec("sim/stedy")).check()
    assert "'stedy'" in str(info.value)
    assert "blocked, flaky, silent, steady" in str(info.value)
    assert SimBackend(parse_spec("sim/steady")).simulated


# ---- the actor and the backend's own answers -----------------------------------------------


class Recorder(SimActor):
    """Writes a file in the tree, runs a program through the runner, and answers."""

    async def act(self, turn: SimTurn) -> dict[str, Any] | None:
        if turn.role == "leaves":
            return None
        (turn.workspace / "touched.txt").write_text(f"{turn.role} {turn.number} {turn.seed}\n")
        ran = await turn.runner.run(
            ["/bin/sh", "-c", "echo $FLAMECHASE_ROLE; echo err >&2"], turn.workspace
        )
        return {"approve": ran.ok, "comments": [ran.output.strip().replace("\n", " ")]}


def test_an_actor_does_the_work_and_its_result_is_written(tmp_path: Path) -> None:
    request = make_request(
        tmp_path, tmp_path, lane="", role="judge", result=VERDICT, actor=Recorder()
    )
    answer, data = asyncio.run(one_turn("steady", request))
    assert answer.status == "finished" and answer.text == "sim: verdict written"
    assert VERDICT.validate(data) == {"approve": True, "comments": ["judge err"]}
    role, number, seed = (tmp_path / "touched.txt").read_text().split()
    assert (role, number) == ("judge", "1") and int(seed) > 0


def test_without_an_actor_a_custom_result_is_built_from_its_schema(tmp_path: Path) -> None:
    # Before: every turn outside lanes was answered with a coordinator's plan, whatever the
    # flow asked for, so a flow with its own result schema got no valid turn at all.
    request = make_request(tmp_path, tmp_path, lane="", role="reviewer_a", result=VERDICT)
    answer, data = asyncio.run(one_turn("steady", request))
    assert answer.status == "finished"
    valid = VERDICT.validate(data)
    assert isinstance(valid["approve"], bool)
    assert all(c.startswith("sim reviewer_a t1: comments[") for c in valid["comments"])
    assert not (tmp_path / "NOTES.md").exists()  # a built answer changes no file


def test_an_actor_may_leave_a_turn_to_the_backend(tmp_path: Path) -> None:
    request = make_request(
        tmp_path, tmp_path, lane="", role="leaves", result=VERDICT, actor=Recorder()
    )
    _, data = asyncio.run(one_turn("steady", request))
    assert VERDICT.validate(data)["approve"] in (True, False)
    assert not (tmp_path / "touched.txt").exists()


def test_a_turn_outside_lanes_ending_with_the_report_gets_a_true_survey(
    tmp_path: Path, source_tree: Path
) -> None:
    request = make_request(tmp_path, source_tree, lane="", role="author", result=REPORT)
    _, data = asyncio.run(one_turn("steady", request))
    report = parse_report(data)
    assert report.status == "progress"
    assert "NOTES.md" in report.summary
    assert (
        source_tree / "NOTES.md"
    ).read_text() == "- author (sim), turn 1: read the tree (3 files).\n"


def test_a_lane_turn_without_an_actor_gets_a_note(tmp_path: Path, source_tree: Path) -> None:
    request = make_request(tmp_path, source_tree, lane="lane-1", flow="flame_chase")
    _, data = asyncio.run(one_turn("steady", request))
    assert parse_report(data).status == "progress"
    notes = (source_tree / "NOTES.md").read_text()
    assert notes.count("\n") == 1
    assert "lane-1 turn 1" in notes


def test_another_seed_gives_other_usage(tmp_path: Path) -> None:
    usages = set()
    for attempt in (1, 2, 3):
        request = make_request(tmp_path, tmp_path, lane="lane-2", attempt=attempt)
        answer, _ = asyncio.run(one_turn("silent", request))
        usages.add(answer.usage)
    assert len(usages) == 3


def test_the_same_seed_gives_the_same_built_result(tmp_path: Path) -> None:
    results = []
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        request = make_request(tmp_path / name, tmp_path, lane="", role="r", result=VERDICT)
        results.append(asyncio.run(one_turn("steady", request)))
    (a1, r1), (a2, r2) = results
    assert r1 == r2 and a1.usage == a2.usage


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


async def _invalid_then_repaired(profile: str, request: Any) -> tuple[Answer, Any, Answer, Any]:
    session = SimBackend(parse_spec(f"sim/{profile}")).open(request, lambda p, t: None)
    assert session.continues
    first = await session.ask(request.prompt)
    bad = read_report(request)
    second = await session.ask("fix it", repair="status: bad value")
    good = read_report(request)
    await session.close()
    return first, bad, second, good


@pytest.mark.parametrize("result", [REPORT, VERDICT], ids=["report", "custom"])
def test_flaky_invalid_result_is_fixed_on_repair(
    tmp_path: Path, source_tree: Path, result: ResultSpec
) -> None:
    turn = _find_turn(tmp_path, "flaky", "invalid_first")
    request = make_request(
        tmp_path, source_tree, lane="lane-1", turn=turn, run_id="flaky-run", result=result
    )
    first, bad, second, good = asyncio.run(_invalid_then_repaired("flaky", request))
    assert first.status == "finished" and second.status == "finished"
    with pytest.raises(ValueError):
        result.validate(bad)
    result.validate(good)
    if result is REPORT:
        # The work was done once: the repair only rewrote the report.
        assert parse_report(good).status == "progress"
        assert (source_tree / "NOTES.md").read_text().count("\n") == 1
    assert second.usage.input_tokens < first.usage.input_tokens


class OwnMistake(SimActor):
    async def act(self, turn: SimTurn) -> dict[str, Any]:
        return {"approve": True}

    def invalid(self, turn: SimTurn, good: Mapping[str, Any]) -> Any:
        return {"approve": "maybe"}


def test_flaky_writes_the_actors_own_wrong_result_first(tmp_path: Path) -> None:
    turn = _find_turn(tmp_path, "flaky", "invalid_first")
    request = make_request(
        tmp_path,
        tmp_path,
        lane="lane-1",
        turn=turn,
        run_id="flaky-run",
        result=VERDICT,
        actor=OwnMistake(),
    )
    _, bad, _, good = asyncio.run(_invalid_then_repaired("flaky", request))
    assert bad == {"approve": "maybe"}
    assert good == {"approve": True}


def test_blocked_reports_blocked_on_its_own_second_turn(tmp_path: Path, source_tree: Path) -> None:
    statuses = []
    for turn in (1, 2, 3, 4, 5):
        request = make_request(tmp_path, source_tree, lane="lane-1", turn=turn, io_name=f"t{turn}")
        _, data = asyncio.run(one_turn("blocked", request))
        statuses.append(parse_report(data).status)
    # Where two agents alternate, the first takes lane turns 1, 3, 5 and the second 2, 4:
    # each blocks on its second.
    assert statuses == ["progress", "progress", "blocked", "blocked", "progress"]


def test_silent_writes_nothing(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    request = make_request(tmp_path, ws, lane="lane-2", actor=LaneActor())
    answer, data = asyncio.run(one_turn("silent", request))
    assert answer.status == "finished"
    assert data is None
    assert not Path(request.env["FLAMECHASE_CHECKPOINT"]).exists()
    assert (ws / "solver.py").read_text() == RUNGS[0].source


# ---- cuts and the runner ----------------------------------------------------------------------


def test_cut_before_ask_interrupts(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    request = make_request(tmp_path, ws, lane="lane-2", actor=LaneActor())

    async def go() -> Answer:
        session = SimBackend(parse_spec("sim/steady")).open(request, lambda p, t: None)
        await session.cut()
        return await session.ask(request.prompt)

    assert asyncio.run(go()).status == "interrupted"
    assert read_report(request) is None


def test_cut_mid_turn_ends_the_checks_and_restores_the_tree(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    request = make_request(tmp_path, ws, lane="lane-2", actor=LaneActor())

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


def test_each_program_is_reported_as_a_process_of_the_turn(tmp_path: Path) -> None:
    # The programs run the tree's own code: the engine learns of each (to sweep it after a
    # crash) before it runs, as of an agent's process, under the turn's token.
    ws = copy_sample(tmp_path / "ws")
    request = make_request(tmp_path, ws, lane="lane-2", actor=LaneActor())
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
    assert json.loads(request.report_path.read_text())["status"] == "deliverable_ready"
