"""Each real CLI in every position of parallel_flame_chase: the coordinator (planning in a
snapshot), lane 1 (the user's tree) and a confined lane 2 (its private copy, writes only
under its own directories), through the scripted model server; the lanes' turns kept to
their port blocks (where Landlock can), under either jail."""

from __future__ import annotations

from pathlib import Path

import pytest

from flamechase.jail import landlock_abi, probe
from tests.realcli.clis import CLIS, SPECS, require
from tests.realcli.conftest import Flamechase
from tests.realcli.helpers import turns
from tests.realcli.server import ModelServer

pytestmark = [pytest.mark.realcli, pytest.mark.timeout(300)]


def parallel(
    flamechase: Flamechase, spec: str, budget: str = "budget.turns=2", sandbox: str = "landlock"
) -> str:
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
        f"lanes=2,{budget},rest_seconds=0.05,sandbox={sandbox}",
        "improve the sample",
        timeout=360,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout + done.stderr


@pytest.mark.parametrize("sandbox", ["landlock", "bwrap"])
@pytest.mark.parametrize("cli", CLIS)
def test_the_cli_plans_and_works_lane_one_and_a_confined_lane_two(
    cli: str,
    sandbox: str,
    flamechase: Flamechase,
    server: ModelServer,
    workspace: Path,
    state_home: Path,
) -> None:
    require(cli)
    if landlock_abi() < 1 and sandbox == "landlock":
        pytest.skip("this kernel has no Landlock: lane 2 cannot be confined here")
    if sandbox == "bwrap" and not probe().bwrap_ok:
        pytest.skip(str(probe().bwrap_reason))
    parallel(flamechase, SPECS[cli], sandbox=sandbox)
    [planned] = flamechase.events("planned")
    assert planned["actor"] == "coordinator"
    rows = turns(state_home)
    by_lane = {lane: [r for r in rows if r["lane"] == lane] for lane in ("lane-1", "lane-2")}
    for lane, lane_rows in by_lane.items():
        assert lane_rows, f"{lane} took no turn"
        assert all(r["status"] == "valid" for r in lane_rows), [r["error"] for r in lane_rows]
        assert all(r["output_tokens"] > 0 and r["cost_usd"] > 0 for r in lane_rows)
    # Lane 2 worked in its private copy (its cwd, as the CLI told the model), never in the
    # user's tree.
    lane2 = [
        e.conversation
        for e in server.exchanges(main=True)
        if e.conversation and "You are lane_2_actor" in e.conversation.text
    ]
    assert lane2
    for conv in lane2:
        assert "/lanes/lane-2/" in conv.raw
        assert f'{workspace}"' not in conv.raw and f"{workspace}<" not in conv.raw
        # Its turns ran kept to its port block (the prompt says so only when they are).
        assert ("fails with 'Permission denied'" in conv.raw) == probe().landlock_ports
    # The confinement held: the CLI's state went to its own (created) state directories.
    home = Path(flamechase.env["HOME"])
    state = {
        "claude": ".claude",
        "codex": ".codex",
        "gemini": ".gemini",
        "opencode": ".local/share/opencode",
    }[cli]
    assert (home / state).is_dir()


@pytest.mark.parametrize("cli", ["opencode"])
def test_a_confined_lane_may_be_the_first_to_run_its_cli_on_a_fresh_home(
    cli: str, flamechase: Flamechase, server: ModelServer, state_home: Path
) -> None:
    """The CLI's state directories do not exist yet when lane 2 runs it first: flamechase
    creates them before granting them (opencode failed every turn with mkdir EACCES)."""
    require(cli)
    require("codex")
    if landlock_abi() < 1:
        pytest.skip("this kernel has no Landlock: lane 2 cannot be confined here")
    spec, other = SPECS[cli], SPECS["codex"]
    agents = (
        f"coordinator={other},lane_1_actor_a={other},lane_1_actor_b={other},"
        f"lane_2_actor_a={spec},lane_2_actor_b={spec}"
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
        timeout=360,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lane2 = [r for r in turns(state_home) if r["lane"] == "lane-2"]
    assert lane2 and all(r["status"] == "valid" for r in lane2), [r["error"] for r in lane2]
