"""The real CLIs in their Agent Client Protocol mode (`acp:gemini --acp`, `acp:opencode acp`)
through the scripted server: the model given with `-m` is selected through the protocol
(gemini: session/set_model; opencode: its `model` config option), the report is written with
the agent's own file tool, usage is taken from the agent's messages, and a run whose ACP
spend cannot be seen says so at start."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.realcli.clis import require
from tests.realcli.conftest import Flamechase
from tests.realcli.helpers import turns
from tests.realcli.script import WriteFile
from tests.realcli.server import ModelServer

pytestmark = [pytest.mark.realcli, pytest.mark.timeout(300)]

CASES = {
    # spec, the model the server must see, whether our price table lists it (the spend of
    # an unlisted one is still counted: as opencode reports it, or at the table's upper bound)
    "gemini": ("acp:gemini --acp -m gemini-2.5-flash", "gemini-2.5-flash", True),
    "opencode": ("acp:opencode acp -m scripted/model-1", "model-1", False),
}


@pytest.mark.parametrize("cli", sorted(CASES))
def test_an_acp_agent_runs_turns_on_the_model_it_was_given(
    cli: str, flamechase: Flamechase, server: ModelServer, state_home: Path
) -> None:
    require(cli)
    spec, model, priced = CASES[cli]
    done = flamechase(
        "exec",
        "-f",
        "flame_chase",
        "-a",
        f"first_chaser={spec}",
        "-a",
        f"second_chaser={spec}",
        "-p",
        "budget.turns=1,rest_seconds=0.05",
        "add a line",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = turns(state_home)
    assert [r["status"] for r in rows] == ["valid"], [r["error"] for r in rows]
    main = server.exchanges(main=True)
    assert main and {e.conversation.model for e in main if e.conversation} == {model}
    assert [type(e.step) for e in main].count(WriteFile) == 1
    for row in rows:
        assert row["input_tokens"] > 0 and row["output_tokens"] > 0
        assert row["cost_usd"] > 0
    said = done.stdout + done.stderr
    assert ("cannot be seen: an ACP agent reports tokens at most" in said) is not priced, said


def test_a_cost_budget_is_refused_for_an_acp_agent_whose_spend_cannot_be_seen(
    flamechase: Flamechase, server: ModelServer, state_home: Path
) -> None:
    require("opencode")
    spec = "acp:opencode acp -m scripted/model-1"
    done = flamechase(
        "exec",
        "-f",
        "flame_chase",
        "-a",
        f"first_chaser={spec}",
        "-a",
        f"second_chaser={spec}",
        "-p",
        "budget.cost=1",
        "add a line",
    )
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert "budget.cost cannot see what first_chaser" in done.stderr
    assert not (state_home / "runs").exists() or not list((state_home / "runs").iterdir())
    assert server.exchanges() == []
