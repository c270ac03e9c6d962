"""Failover on real claude: the first chaser is given two saved accounts; the scripted server
answers account `work`'s first ask with a usage limit in Anthropic's own words (429, "You've
hit your session limit · resets …"), and the turn is taken again at once on account `home`
(its own key), not paused until the reset."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.realcli.clis import SPECS, require
from tests.realcli.conftest import Flamechase
from tests.realcli.helpers import turns
from tests.realcli.script import Fault
from tests.realcli.server import ModelServer

pytestmark = [pytest.mark.realcli, pytest.mark.timeout(300)]


def test_a_usage_limit_on_one_account_moves_the_role_to_the_next(
    flamechase: Flamechase, server: ModelServer, state_home: Path, tmp_path: Path
) -> None:
    require("claude")
    for name in ("work", "home"):
        key = tmp_path / f"{name}.key"
        key.write_text(f"sk-ant-account-{name}\n")
        added = flamechase("accounts", "add", "claude", name, "--api-key-file", str(key))
        assert added.returncode == 0, added.stderr
    model = SPECS["claude"].partition("/")[2]
    work, home = f"claude@work/{model}", f"claude@home/{model}"
    reset = int(time.time()) + 2 * 3600
    server.script.fault("You are first_chaser", Fault("usage_limit", reset_epoch=reset))
    done = flamechase(
        "exec",
        "-f",
        "flame_chase",
        "-a",
        f"first_chaser={work}|{home}",
        "-a",
        f"second_chaser={SPECS['claude']}",
        "-p",
        "budget.turns=1,rest_seconds=0.05",
        "add a line",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = turns(state_home)
    assert [(r["backend"], r["status"]) for r in rows] == [(work, "limited"), (home, "valid")]
    st = flamechase.status()
    [role] = st["alternatives"]
    assert role["current"] == home and list(role["closed"]) == [work]
    assert not st["lanes"][0]["paused_until"]
    keys = [e.headers.get("x-api-key") for e in server.exchanges("anthropic", main=True)]
    assert keys[0] == "sk-ant-account-work" and "sk-ant-account-home" in keys[1:]
