"""`CLI@NAME/MODEL` on real claude: the run uses the account's key and keeps claude's state in
the account's directory, in every position (a confined lane is granted that directory); an
unknown account is refused before anything runs, naming the command that makes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from flamechase.jail import landlock_abi
from tests.realcli.clis import require
from tests.realcli.conftest import Flamechase
from tests.realcli.helpers import turns
from tests.realcli.server import ModelServer

pytestmark = [pytest.mark.realcli, pytest.mark.timeout(300)]


def test_a_role_on_an_account_runs_on_its_key_and_directory(
    flamechase: Flamechase, server: ModelServer, state_home: Path, tmp_path: Path
) -> None:
    require("claude")
    if landlock_abi() < 1:
        pytest.skip("this kernel has no Landlock: lane 2 cannot be confined here")
    key = tmp_path / "key.txt"
    key.write_text("sk-ant-account-work\n")
    added = flamechase("accounts", "add", "claude", "work", "--api-key-file", str(key))
    assert added.returncode == 0, added.stderr
    spec = "claude@work/claude-sonnet-4-5"
    agents = ",".join(
        f"{role}={spec}"
        for role in (
            "coordinator",
            "lane_1_actor_a",
            "lane_1_actor_b",
            "lane_2_actor_a",
            "lane_2_actor_b",
        )
    )
    done = flamechase(
        "exec",
        "-f",
        "parallel_flame_chase",
        "-a",
        agents,
        "-p",
        "lanes=2,budget.turns=2,rest_seconds=0.05,sandbox=landlock",
        "go",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = turns(state_home)
    assert {r["lane"] for r in rows} == {"@coordinator", "lane-1", "lane-2"}  # a lane-less turn
    assert all(r["status"] in ("valid", "plan_valid") for r in rows), [r["status"] for r in rows]
    keys = {e.headers.get("x-api-key") for e in server.exchanges("anthropic")}
    assert keys == {"sk-ant-account-work"}
    account = state_home / "accounts" / "claude" / "work"
    assert list((account / "projects").rglob("*.jsonl")), "claude kept no session there"
    assert not (Path(flamechase.env["HOME"]) / ".claude" / "projects").exists()


def test_an_unknown_account_is_refused_before_the_run(
    flamechase: Flamechase, server: ModelServer, state_home: Path
) -> None:
    require("claude")
    done = flamechase(
        "exec",
        "-f",
        "flame_chase",
        "-a",
        "claude@nope/claude-sonnet-4-5",
        "-a",
        "claude/claude-sonnet-4-5",
        "-p",
        "budget.turns=1",
        "go",
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "flamechase exec: error: 'claude@nope/claude-sonnet-4-5': there is no claude account "
        "called 'nope'; make it with `flamechase accounts add claude nope`"
    ]
    assert server.exchanges() == []
    assert not (state_home / "runs").exists()
