"""`-p sandbox=off` with parallel_flame_chase:git_pr: the run says at its start that the PR
protocol's guarantees (receipts lanes cannot forge, a central repository only its hook
writes) no longer hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from flamechase.flows.git_pr import UNJAILED
from tests.flows.git_pr.team import Team
from tests.helpers import cli


@pytest.mark.parametrize("sandbox", ["off", "auto"])
def test_an_unjailed_run_says_its_receipts_can_be_forged(tmp_path: Path, sandbox: str) -> None:
    team = Team(tmp_path, 'return "nothing"')
    args = team.args(turns=1, lanes=1)
    args[args.index("-p") + 1] += f",sandbox={sandbox}"
    proc = cli(*args, cwd=team.src, env=team.env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    notices = team.status()["notices"]
    said = [e["payload"]["message"] for e in team.events() if e["kind"] == "notice"]
    if sandbox == "off":
        assert UNJAILED in notices and said.count(UNJAILED) == 1
        assert "sandbox=off" in UNJAILED and "forging receipts" in UNJAILED
        assert UNJAILED in proc.stdout + proc.stderr
    else:
        assert UNJAILED not in notices and not any("forg" in n for n in said)
