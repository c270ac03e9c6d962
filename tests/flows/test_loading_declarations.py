"""What a flow declares besides its decider: whether it resumes, its roles' descriptions."""

from __future__ import annotations

import json
from pathlib import Path

from flamechase.loader import load_flow
from tests.flows.loading_repos import flow_source, worker
from tests.helpers import cli


def test_a_flow_that_does_not_resume_starts_anew_and_refuses_resume(tmp_path: Path) -> None:
    flow = tmp_path / "fresh.py"
    flow.write_text(flow_source("done") + "\nOnce.resumable = False\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    args = [
        "exec",
        "-f",
        str(flow),
        "-a",
        worker(tmp_path),
        "-p",
        "budget.turns=1,turns=2,rest_seconds=0.05",
        "do it",
    ]
    assert cli(*args, cwd=ws).returncode == 0
    assert cli(*args, cwd=ws).returncode == 0
    runs = json.loads(cli("runs", "--json", cwd=ws, check=True).stdout)
    assert len(runs) == 2  # the same command did not pick the first one up
    refused = cli(*args[:-1], "--resume", "do it", cwd=ws)
    assert refused.returncode == 2
    [line] = refused.stderr.strip().splitlines()
    assert "once does not resume" in line


def test_built_in_flows_say_what_each_role_is_for() -> None:
    for name in ("flame_chase", "parallel_flame_chase"):
        flow = load_flow(name)
        params = flow.Params()
        described = flow.describe_roles(params)
        assert [r.name for r in described] == flow.roles(params)
        assert all(r.description and not r.defaults.goals for r in described)
