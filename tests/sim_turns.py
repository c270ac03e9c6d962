"""Helpers for tests of simulated turns: the bundled sample, a `TurnRequest` as the engine
builds one (with the flow's actor and the turn's result schema), and one `sim` turn asked."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sys
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from flamechase.agents.backend import Answer, TurnRequest
from flamechase.agents.sim import SimBackend
from flamechase.agents.spec import parse_spec
from flamechase.flow import REPORT, ResultSpec
from flamechase.flow.sim import SimActor
from flamechase.flows.sample_lanes import METRIC_PATTERN


def sample_dir() -> Path:
    return Path(str(resources.files("flamechase").joinpath("sample")))


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
    result: ResultSpec = REPORT,
    actor: SimActor | None = None,
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
        result=result,
        actor=actor,
    )


async def one_turn(profile: str, request: TurnRequest) -> tuple[Answer, Any]:
    """Ask once (no repair); return the answer and the decoded result (None if absent)."""
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
